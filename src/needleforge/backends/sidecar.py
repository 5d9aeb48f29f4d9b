"""A backend's model in another Python environment, spoken to over JSON lines.

Some models need libraries that conflict with the main environment: RAM++'s code needs
transformers 4.x, timm 0.4.12 and a torchvision matching its torch, while needleforge's own
transformers backends need transformers 5. Such a backend runs its model in a worker process
started with the other environment's Python (``.venv-ram/bin/python``), and the main
environment keeps its versions. :class:`Sidecar` is the main side of that pattern, for any
backend: it starts the worker, waits for its ``ready`` line, sends one JSON request per line
on the worker's stdin and reads one JSON reply per line from its stdout.

The worker's stderr (its libraries' prints, warnings, tracebacks) never reaches the user's
terminal: the last lines are kept and quoted when the worker fails. A worker that exits, hangs
past its timeout or answers something that is not a JSON object is a
:class:`~needleforge.errors.BackendError` naming the worker, its Python and what it said.

The worker's protocol (see :mod:`~needleforge.backends.ram_worker` for RAM++'s):

* first line: ``{"ready": true, ...}`` once loaded, or ``{"ready": false, "error": "..."}``;
* then, per request ``{"id": n, ...}``: ``{"id": n, ...}`` or ``{"id": n, "error": "..."}``;
* end of stdin: it exits.

The worker is started with ``python -I`` (no user site, no ``PYTHONPATH``, no script folder
on ``sys.path``), so nothing of the main environment leaks into it.
"""

from __future__ import annotations

import base64
import collections
import contextlib
import io
import json
import os
import queue
import subprocess
import threading
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from PIL import Image

from needleforge.backends.base import RGBImage, ensure_rgb
from needleforge.errors import BackendError

#: Lines of the worker's stderr quoted in errors.
_STDERR_LINES = 20
_EOF = object()


def png_base64(image: RGBImage) -> str:
    """An RGB frame as base64 PNG text (lossless, self-describing), for a JSON request.

    Raises:
        BackendError: ``image`` is not a uint8 H×W×3 array.
    """
    buffer = io.BytesIO()
    Image.fromarray(ensure_rgb(image)).save(buffer, format="PNG", compress_level=1)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


class Sidecar:
    """A worker process in another Python environment, one request at a time (thread-safe).

    Args:
        python: the other environment's interpreter, e.g. ``.venv-ram/bin/python``.
        script: the worker script it runs (a file that imports nothing of needleforge).
        args: the script's arguments.
        name: how errors name the worker (``RAM++ worker``).
        ready_timeout_s: how long loading may take before the worker is given up.
        call_timeout_s: how long one request may take.
        env: extra environment variables for the worker.

    Raises:
        BackendError: ``python`` or ``script`` is missing, the worker cannot start, exits,
            says it is not ready (its error is quoted), or is not ready in time.
    """

    def __init__(self, python: Path | str, script: Path | str, args: Sequence[str] = (), *,
                 name: str, ready_timeout_s: float = 600.0, call_timeout_s: float = 120.0,
                 env: Mapping[str, str] | None = None) -> None:
        if ready_timeout_s <= 0 or call_timeout_s <= 0:
            raise BackendError(f"timeouts must be > 0, got {ready_timeout_s = }, "
                               f"{call_timeout_s = }")
        # absolute, not resolved: a venv's python is a link that must stay one
        self.python = Path(python).expanduser().absolute()
        self.script, self.name = Path(script), name
        self.call_timeout_s = call_timeout_s
        if not self.python.is_file() or not os.access(self.python, os.X_OK):
            raise BackendError(f"{name}: python {self.python} is not an executable file "
                               "(build the environment first, e.g. `make ram-env`)")
        if not self.script.is_file():
            raise BackendError(f"{name}: worker script {self.script} does not exist")
        self._lock = threading.Lock()
        self._next_id = 0
        self._stderr: collections.deque[str] = collections.deque(maxlen=_STDERR_LINES)
        self._lines: queue.Queue[object] = queue.Queue()
        command = [str(self.python), "-I", "-u", str(self.script), *args]
        try:
            self._process = subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                text=True, encoding="utf-8", errors="replace", bufsize=1,
                env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})
        except OSError as exc:
            raise BackendError(f"{name}: cannot start {self.python}: {exc}") from exc
        self._finalizer = weakref.finalize(self, _stop, self._process)
        assert self._process.stdout is not None and self._process.stderr is not None
        # The readers hold the queue and the deque, not self: a dropped Sidecar is collected
        # and its finalizer ends the worker.
        threading.Thread(target=_pump_lines, args=(self._process.stdout, self._lines),
                         daemon=True, name=f"sidecar-out-{name}").start()
        self._stderr_pump = threading.Thread(
            target=_pump_stderr, args=(self._process.stderr, self._stderr), daemon=True,
            name=f"sidecar-err-{name}")
        self._stderr_pump.start()
        self.ready = self._ready(ready_timeout_s)

    def __repr__(self) -> str:
        return f"Sidecar({self.name!r}, python={str(self.python)!r})"

    @property
    def alive(self) -> bool:
        """Whether the worker process is still running."""
        return self._process.poll() is None

    def call(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """Send ``request`` (an ``id`` is added) and return the worker's reply to it.

        Raises:
            BackendError: the worker replied with an ``error``, exited (its last stderr lines
                are quoted), did not answer within ``call_timeout_s`` (it is then stopped),
                or answered something else than a JSON object with the same id.
        """
        with self._lock:
            if not self.alive:
                raise self._died("before the request")
            self._next_id += 1
            ident = self._next_id
            assert self._process.stdin is not None
            try:
                self._process.stdin.write(json.dumps({**request, "id": ident}) + "\n")
                self._process.stdin.flush()
            except (BrokenPipeError, OSError):
                raise self._died("while reading the request") from None
            reply = self._reply(self.call_timeout_s, what="answer")
        if reply.get("id") != ident:
            raise BackendError(f"{self.name} answered request {reply.get('id')!r} when asked "
                               f"{ident}: {str(reply)[:200]}")
        if "error" in reply:
            raise BackendError(f"{self.name}: {reply['error']}")
        return reply

    def close(self) -> None:
        """End the worker (closing its stdin, then terminating it if it lingers)."""
        self._finalizer()

    def __enter__(self) -> Sidecar:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _ready(self, timeout_s: float) -> dict[str, Any]:
        reply = self._reply(timeout_s, what="ready line")
        if reply.get("ready") is True:
            return reply
        self.close()
        self._stderr_pump.join(timeout=5)  # the worker has exited: its stderr is at its end
        error = reply.get("error") or f"it said {str(reply)[:200]}"
        output = "\n".join(self._stderr)
        # the worker's own words (a library's traceback) stay out of the message, in its cause
        raise BackendError(f"{self.name} did not load: {error}") from (
            WorkerOutput(f"{self.name}'s last output:\n{output}") if output.strip() else None)

    def _reply(self, timeout_s: float, *, what: str) -> dict[str, Any]:
        """The next JSON object on the worker's stdout (non-JSON lines are kept as stderr)."""
        while True:
            try:
                line = self._lines.get(timeout=timeout_s)
            except queue.Empty:
                self._process.kill()  # a hung worker would not notice its stdin closing
                self.close()
                raise BackendError(
                    f"{self.name} gave no {what} within {timeout_s:g} s and was stopped"
                    f"{self._stderr_tail()}") from None
            if line is _EOF:
                raise self._died(f"before its {what}")
            assert isinstance(line, str)
            try:
                reply = json.loads(line)
            except json.JSONDecodeError:
                reply = None
            if isinstance(reply, dict):
                return reply
            self._stderr.append(f"(stdout) {line.rstrip()[:300]}")

    def _died(self, when: str) -> BackendError:
        try:
            status = self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            status = None
        return BackendError(f"{self.name} ({self.python}) exited with status {status} {when}"
                            f"{self._stderr_tail()}")

    def _stderr_tail(self) -> str:
        # The last lines: a traceback ends with the exception, a log with its last words.
        lines = [line.strip() for line in list(self._stderr) if line.strip()][-3:]
        return "; its last output: " + " | ".join(lines) if lines else ""



class WorkerOutput(Exception):
    """What a worker printed before it failed: the cause of the error that names the failure,
    so the debug log (:mod:`needleforge.runtime.debug_log`) keeps it and the message stays short."""


def _pump_lines(stream: IO[str], lines: queue.Queue[object]) -> None:
    for line in stream:
        lines.put(line)
    lines.put(_EOF)


def _pump_stderr(stream: IO[str], kept: collections.deque[str]) -> None:
    for line in stream:
        kept.append(line.rstrip()[:300])


def _stop(process: subprocess.Popen[str]) -> None:
    """Close the worker's stdin (it exits at EOF), then terminate or kill it if it lingers."""
    if process.stdin is not None:
        with contextlib.suppress(OSError):  # a worker already gone: the pipe is broken
            process.stdin.close()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
