"""``needleforge nemo`` with the ``openai_http`` describer and verifier against a real server.

The stub of :mod:`tests.backends.openai_stub_server` speaks the protocol as we read it; this
module checks it against a server someone else wrote: ``transformers serve`` on 127.0.0.1,
serving the tiny Idefics3 of :mod:`tests.backends.hf_tiny_models` from a local folder, on the
CPU, offline. The model is scripted to answer one JSON object that is both a valid writer
answer and a valid verdict saying "fits", so every answer is parsed and used: each needle gets
a failed verdict (the description fits the target, then also a negative: "ambiguous"), which
proves the describer's and the verifier's requests, frames included, were accepted and their
answers read. Then the two ways a server cannot do the work: a model id it does not serve is
refused before any work (exit 2, naming the id it does serve), and a dead server stops the
stage (exit 2, naming the URL) instead of finishing with zero questions.

Slow (the server takes ~20 s to start on a busy 2-core machine; the module ~1 min). It skips
when ``transformers serve``'s dependencies (``transformers[serving]``: openai, fastapi,
uvicorn) are missing; ``make test`` installs them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from typer.testing import CliRunner, Result

from needleforge.backends.openai.client import ChatClient, ChatResponse, Message
from needleforge.store import Store
from tests.backends.hf_tiny_models import build_tiny_idefics3
from tests.nemo.nemo_cases import stored_corpus

pytestmark = pytest.mark.slow

#: What the scripted model says to every prompt: a writer answer and a verdict in one object.
ANSWER = json.dumps({"skip": False, "reason": "", "description": "a red car",
                     "question": "When is a red car seen?", "fits": True,
                     "why": "a red car is seen"})
#: Upper bound on the server's start (imports, model load) on a busy 2-core machine.
START_TIMEOUT_S = 180.0
#: The store tables a nemo run writes.
NEMO_TABLES = ("montages", "montage_segments", "questions", "verifications")
_CHAT_LINE = re.compile(r'"POST /v1/chat/completions HTTP/1\.1" (\d{3})')


def _serve_command() -> list[str]:
    """The venv's ``transformers`` CLI, or a skip saying what is missing."""
    from transformers.utils.import_utils import is_accelerate_available, is_serve_available

    # accelerate: the server always passes a device_map, which needs it
    if not (is_serve_available() and is_accelerate_available()):
        pytest.skip("transformers serve needs transformers[serving] (openai, fastapi, uvicorn, "
                    "pydantic, accelerate), not all installed: `make venv` installs them")
    script = Path(sys.executable).parent / "transformers"
    if not script.is_file():
        found = shutil.which("transformers")
        if found is None:
            pytest.skip(f"no `transformers` CLI beside {sys.executable} nor on PATH")
        script = Path(found)
    return [str(script), "serve"]


def _free_port() -> int:
    """A port nothing listens on now (the server binds it a moment later)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServedModel:
    """``transformers serve <folder>`` in its own process group, logging to a file.

    The server is pinned to the folder (``force_model``), so it serves that model alone and
    lists it at ``GET /v1/models`` under the path it was given. :meth:`stop` kills the whole
    group; :meth:`running` starts it again if a test stopped it, so no test depends on the
    order the others ran in.
    """

    def __init__(self, folder: Path, log: Path) -> None:
        self.folder, self.log = folder, log
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.model_id = ""
        self._process: subprocess.Popen[bytes] | None = None

    def running(self) -> ServedModel:
        """Start the server unless it runs; wait (bounded) until it lists its model.

        Raises:
            pytest.fail: the server exited or did not answer within START_TIMEOUT_S (the
                message holds the end of its log).
        """
        if self._process is not None and self._process.poll() is None:
            return self
        command = [*_serve_command(), str(self.folder), "--device", "cpu",
                   "--host", "127.0.0.1", "--port", str(self.port)]
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
               "HF_HUB_DISABLE_TELEMETRY": "1", "HF_HOME": str(self.log.parent / "hf-home"),
               "CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": "1", "NO_PROXY": "127.0.0.1"}
        with self.log.open("ab") as sink:  # the child keeps its own descriptor
            self._process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=sink,
                                             stderr=subprocess.STDOUT, env=env,
                                             start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                pytest.fail(f"transformers serve exited with {self._process.returncode}: "
                            f"{self.log_tail()}")
            try:
                listed = httpx.get(f"{self.url}/models", timeout=2.0).json()["data"]
            except (httpx.HTTPError, ValueError, KeyError, TypeError):
                time.sleep(0.25)
                continue
            self.model_id = str(listed[0]["id"])
            return self
        self.stop()
        pytest.fail(f"transformers serve did not list a model within {START_TIMEOUT_S:g} s: "
                    f"{self.log_tail()}")

    def stop(self) -> None:
        """Kill the server's process group (SIGTERM, then SIGKILL after 10 s) and reap it."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        for sig, wait_s in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 10.0)):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                break
            try:
                process.wait(timeout=wait_s)
                break
            except subprocess.TimeoutExpired:
                continue

    def chat_statuses(self) -> list[int]:
        """HTTP statuses of every chat request in the server's access log, in order."""
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return [int(status) for status in _CHAT_LINE.findall(text)]

    def log_tail(self, chars: int = 3000) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else "(no log)"
        return text[-chars:]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedModel]:
    """The scripted tiny VLM served on a free loopback port; stopped at module teardown."""
    _serve_command()  # skip before building anything when the server cannot run
    root = tmp_path_factory.mktemp("transformers-serve")
    served = ServedModel(build_tiny_idefics3(root / "tiny-vlm", answer=ANSWER),
                         root / "server.log")
    try:
        yield served.running()
    finally:
        served.stop()


@pytest.fixture(scope="module")
def base_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The NeMo test corpus (12 scenes, tags, objects) stored over a real 85 s video."""
    return stored_corpus(tmp_path_factory.mktemp("serve-store"))


@pytest.fixture(autouse=True)
def _hermetic_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No proxy may divert 127.0.0.1 traffic, and no developer key may leak into a test."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
                 "all_proxy", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def _store_copy(base: Path, tmp_path: Path) -> Path:
    db = tmp_path / "nf.duckdb"
    shutil.copy(base, db)
    return db


def _counts(db: Path) -> dict[str, int]:
    with Store(db, read_only=True) as store:
        counts = store.counts()
    return {table: counts[table] for table in NEMO_TABLES}


def _nemo(db: Path, tmp_path: Path, **options: Any) -> Result:
    """``needleforge nemo`` on ``db`` with ``options`` for both the describer and verifier."""
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"nemo": {
        "check": {"negatives": False},  # the detector's scans are not what is tested here
        "describer": "openai_http", "describer_options": options,
        "verifier": "openai_http", "verifier_options": options}}))
    from needleforge.cli import app

    return CliRunner().invoke(app, ["nemo", "--db", str(db), "--params", str(params)])


def test_requests_with_frames_are_accepted_and_answers_used(
    server: ServedModel, base_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every request (frames as JPEG data URLs) gets 200 and the scripted answer, and the
    stage uses it: the questions say "a red car", and each verdict fails for a reason only a
    parsed answer gives (the target fits, and so does a negative), never a call failure.

    The server's access log counts the requests it answered; a spy on the client counts the
    images each carried. Idefics3's processor refuses a prompt whose images and image tokens
    disagree, so a 200 means the frames went into the model.
    """
    server.running()
    sent: list[tuple[int, str]] = []  # (image parts, answer) of each request
    chat = ChatClient.chat

    def spy(self: ChatClient, messages: list[Message], **kwargs: Any) -> ChatResponse:
        reply = chat(self, messages, **kwargs)
        images = sum(1 for m in messages if isinstance(m["content"], list)
                     for part in m["content"] if part["type"] == "image_url")
        sent.append((images, reply.text))
        return reply

    monkeypatch.setattr(ChatClient, "chat", spy)
    before = len(server.chat_statuses())
    db = _store_copy(base_store, tmp_path)
    result = _nemo(db, tmp_path, base_url=server.url, model=server.model_id, max_tokens=8,
                   image_max_side=64)
    assert result.exit_code == 0, result.output + server.log_tail()

    statuses = server.chat_statuses()[before:]
    assert statuses and set(statuses) == {200}, statuses
    assert len(sent) == len(statuses)
    assert all(images >= 1 and text == ANSWER for images, text in sent), sent
    with Store(db, read_only=True) as store:
        questions, verdicts = store.questions(), store.verifications()
    assert questions and {q.needle_type for q in questions} == {"object", "scene"}
    assert all("a red car" in q.text for q in questions)
    # Each verdict: the target fits, then the first negative too: two requests per needle.
    assert len(verdicts) == len(questions)
    for verdict in verdicts:
        assert not verdict.passed
        assert verdict.reason.startswith("ambiguous: the description also fits negative ")
        assert verdict.reason.endswith(": a red car is seen")
    # One describe and two verify requests per question (the skipped target had no frames
    # to show, so it cost no request).
    assert len(sent) == len(questions) * 3
    assert "0 passed verification" in result.output


def test_a_model_id_the_server_does_not_serve_is_refused_before_any_work(
    server: ServedModel, base_store: Path, tmp_path: Path
) -> None:
    """A plausible id the server does not serve: exit 2 listing the id it does serve, not one
    chat request, no row written."""
    server.running()
    before = len(server.chat_statuses())
    db = _store_copy(base_store, tmp_path)
    result = _nemo(db, tmp_path, base_url=server.url, model="HuggingFaceTB/SmolVLM-256M")
    assert result.exit_code == 2, result.output
    assert (f"the model server at {server.url} does not serve model "
            f"'HuggingFaceTB/SmolVLM-256M'; it serves '{server.model_id}'") in result.output
    assert "Traceback" not in result.output
    assert len(server.chat_statuses()) == before  # not one chat request
    assert _counts(db) == dict.fromkeys(NEMO_TABLES, 0)


def test_a_dead_server_stops_the_stage_naming_the_url(
    server: ServedModel, base_store: Path, tmp_path: Path
) -> None:
    """The server really stopped (its process group killed): the model check names the URL;
    with the check off, the first three calls fail alike and stop the stage. Either way exit
    2 before the summary line, and no row written."""
    server.running()
    model = server.model_id
    server.stop()  # a later test would start it again
    fast = {"max_retries": 1, "backoff_s": 0.01, "max_backoff_s": 0.02}

    # dead before the stage: the model check finds nobody there
    db = _store_copy(base_store, tmp_path)
    result = _nemo(db, tmp_path, base_url=server.url, model=model, **fast)
    assert result.exit_code == 2, result.output
    flat = " ".join(result.output.split())
    assert f"no answer from the model server at {server.url} (GET {server.url}/models" in flat
    assert "ConnectError" in flat and "is it running, and is base_url right?" in flat
    assert _counts(db) == dict.fromkeys(NEMO_TABLES, 0)

    # dead during the stage (no model check): its first three calls fail alike, so it stops
    result = _nemo(db, tmp_path, base_url=server.url, model=model, check_model=False, **fast)
    assert result.exit_code == 2, result.output
    flat = " ".join(result.output.split())
    assert ("stopping: its first 3 calls all failed the same way (ConnectError); the last: "
            f"POST {server.url}/chat/completions: gave up after 2 attempts") in flat
    assert "question(s)" not in flat  # it did not finish with zero questions
    assert _counts(db) == dict.fromkeys(NEMO_TABLES, 0)
