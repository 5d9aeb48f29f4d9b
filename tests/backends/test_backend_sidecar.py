"""The sidecar pattern: a backend's model in a worker process of another environment.

Every worker here is a real process (this interpreter running a small script that speaks the
JSON-lines protocol of :mod:`needleforge.backends.sidecar`), so pipes, exit statuses,
timeouts and stray output behave as they do with RAM++'s worker in ``.venv-ram``.
"""

from __future__ import annotations

import base64
import gc
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from needleforge.backends.ram_worker import png_to_rgb
from needleforge.backends.sidecar import Sidecar, png_base64
from needleforge.errors import BackendError

#: A worker that loads (printing, as libraries do), says ready, then answers each request
#: with the request's text reversed; special texts make it misbehave.
ECHO = """
import json, os, sys, time
print("library chatter on stderr", file=sys.stderr)
print("a stray line on stdout before the protocol starts")
print(json.dumps({"ready": True, "version": "echo-1", "pid": os.getpid()}), flush=True)
for line in sys.stdin:
    request = json.loads(line)
    text = request.get("text", "")
    if text == "crash":
        print("Traceback (most recent call last):\\nValueError: the model fell over",
              file=sys.stderr, flush=True)
        sys.exit(3)
    if text == "hang":
        time.sleep(60)
    if text == "refuse":
        reply = {"id": request["id"], "error": "image too small"}
    elif text == "wrong-id":
        reply = {"id": -1, "text": "?"}
    else:
        reply = {"id": request["id"], "text": text[::-1]}
    print(json.dumps(reply), flush=True)
"""


def worker(tmp_path: Path, body: str, name: str = "worker.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


@pytest.fixture
def echo(tmp_path: Path) -> Sidecar:
    return Sidecar(sys.executable, worker(tmp_path, ECHO), name="echo worker",
                   ready_timeout_s=30, call_timeout_s=10)


def test_requests_and_replies_in_order_and_stray_lines_kept_aside(echo: Sidecar) -> None:
    assert echo.ready["version"] == "echo-1"
    assert echo.call({"text": "abc"})["text"] == "cba"
    assert echo.call({"text": "xyz"}) == {"id": 2, "text": "zyx"}
    echo.close()
    assert not echo.alive


def test_calls_from_many_threads_each_get_their_own_answer(echo: Sidecar) -> None:
    texts = [f"frame-{i:03d}" for i in range(40)]
    with ThreadPoolExecutor(8) as pool:
        replies = list(pool.map(lambda t: echo.call({"text": t})["text"], texts))
    assert replies == [t[::-1] for t in texts]
    echo.close()


def test_an_error_reply_and_a_wrong_id_are_backend_errors(echo: Sidecar) -> None:
    with pytest.raises(BackendError, match=r"^echo worker: image too small$"):
        echo.call({"text": "refuse"})
    with pytest.raises(BackendError, match=r"answered request -1 when asked 2"):
        echo.call({"text": "wrong-id"})
    echo.close()


def test_a_worker_dying_mid_call_is_named_with_its_last_words(echo: Sidecar) -> None:
    with pytest.raises(BackendError) as info:
        echo.call({"text": "crash"})
    message = str(info.value)
    assert message.startswith(f"echo worker ({sys.executable}) exited with status 3 before "
                              "its answer; its last output: ")
    assert "ValueError: the model fell over" in message
    with pytest.raises(BackendError, match="exited with status 3 before the request"):
        echo.call({"text": "again"})


def test_a_hung_call_is_stopped_after_its_timeout(tmp_path: Path) -> None:
    sidecar = Sidecar(sys.executable, worker(tmp_path, ECHO), name="echo worker",
                      call_timeout_s=0.5)
    started = time.monotonic()
    with pytest.raises(BackendError, match=r"echo worker gave no answer within 0\.5 s and was "
                                           r"stopped; its last output: .*library chatter"):
        sidecar.call({"text": "hang"})
    assert time.monotonic() - started < 10 and not sidecar.alive


def test_a_worker_that_cannot_load_says_why(tmp_path: Path) -> None:
    refuses = worker(tmp_path, """
        import json
        print(json.dumps({"ready": False, "error": "checkpoint x is empty"}))
        raise SystemExit(2)
    """)
    with pytest.raises(BackendError, match=r"^ram worker did not load: checkpoint x is empty$"):
        Sidecar(sys.executable, refuses, name="ram worker")
    crashes = worker(tmp_path, "import json\n1 / 0\n", name="crash.py")
    with pytest.raises(BackendError, match=r"exited with status 1 before its ready line; its "
                                           r"last output: .*ZeroDivisionError: division by zero"):
        Sidecar(sys.executable, crashes, name="ram worker")


def test_a_worker_that_never_gets_ready_is_stopped(tmp_path: Path) -> None:
    slow = worker(tmp_path, "import time\ntime.sleep(60)\n")
    started = time.monotonic()
    with pytest.raises(BackendError, match=r"gave no ready line within 0\.5 s and was stopped"):
        Sidecar(sys.executable, slow, name="slow worker", ready_timeout_s=0.5)
    assert time.monotonic() - started < 10


def test_missing_python_or_script_is_named(tmp_path: Path) -> None:
    with pytest.raises(BackendError, match=r"python .*/nope/bin/python is not an executable "
                                           r"file \(build the environment first"):
        Sidecar(tmp_path / "nope/bin/python", worker(tmp_path, ECHO), name="w")
    with pytest.raises(BackendError, match=r"worker script .*/absent\.py does not exist"):
        Sidecar(sys.executable, tmp_path / "absent.py", name="w")
    with pytest.raises(BackendError, match="timeouts must be > 0"):
        Sidecar(sys.executable, worker(tmp_path, ECHO), name="w", call_timeout_s=0)


def test_a_dropped_sidecar_ends_its_worker(tmp_path: Path) -> None:
    sidecar = Sidecar(sys.executable, worker(tmp_path, ECHO), name="echo worker")
    process = sidecar._process
    del sidecar
    gc.collect()
    assert process.wait(timeout=10) == 0  # stdin closed: the worker left its loop


def test_frames_travel_as_lossless_png() -> None:
    rng = np.random.default_rng(0)
    image = rng.integers(0, 256, (37, 53, 3), dtype=np.uint8)
    data = base64.b64decode(png_base64(image))
    assert data.startswith(b"\x89PNG")
    assert np.array_equal(png_to_rgb(data), image)
    with pytest.raises(ValueError, match="not a PNG image"):
        png_to_rgb(b"GIF89a nonsense")
    with pytest.raises(BackendError, match="must be"):
        png_base64(np.zeros((4, 4), dtype=np.uint8))  # type: ignore[arg-type]
