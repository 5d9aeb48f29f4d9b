"""Helpers of the journey tests: a copy of this repository, commands with bounded waits, and
background servers whose whole process group is stopped when the test ends.

Why a copy: the journey must meet this repository's own ``.gitignore``, ``dvc.yaml`` and
``prefect.yaml``, as a user who cloned it would. The copy holds exactly the files git would
give a clone of the working tree (tracked and untracked, less the ignored ones), committed as
one snapshot; ``PYTHONPATH`` points at its ``src`` so the code under test is the copy's.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

MAIN = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def free_port() -> int:
    """A TCP port free on loopback right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def copy_repository(target: Path) -> Path:
    """Copy the working tree of this repository (as git sees it) to ``target`` and commit it."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=MAIN,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src = MAIN / rel
        if src.is_file():  # a tracked file deleted in the working tree is not copied
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target / rel)
    for cmd in (["git", "init", "-q", "-b", "main"],
                ["git", "config", "user.name", "Journey Test"],
                ["git", "config", "user.email", "journey@needleforge.invalid"],
                ["git", "add", "-A"], ["git", "commit", "-q", "-m", "snapshot"]):
        subprocess.run(cmd, cwd=target, capture_output=True, check=True)
    return target


def environment(repo: Path, home: Path, port: int) -> dict[str, str]:
    """What a README reader's shell would hold: the venv first on PATH, a Prefect home of
    its own and the server's address, analytics off."""
    return {**os.environ,
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "PYTHONPATH": str(repo / "src"),
            "PREFECT_HOME": str(home),
            "PREFECT_API_URL": f"http://127.0.0.1:{port}/api",
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1",
            "DVC_NO_ANALYTICS": "1", "HF_HUB_OFFLINE": "1", "COLUMNS": "400",
            "PREFECT_WORKER_QUERY_SECONDS": "2", "PREFECT_CLI_WRAP_LINES": "false"}


def run(cmd: list[str], *, cwd: Path, env: Mapping[str, str], timeout: float,
        ok: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``cmd`` with a timeout; with ``ok`` fail with its output unless it exits 0."""
    proc = subprocess.run(cmd, cwd=cwd, env=dict(env), capture_output=True, text=True,
                          timeout=timeout, check=False)
    if ok:
        assert proc.returncode == 0, \
            f"{cmd} exited {proc.returncode}:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return proc


def stop_group(proc: subprocess.Popen[bytes], *, grace_s: float = 15.0) -> None:
    """SIGTERM the process group of ``proc`` (started with ``start_new_session``), then
    SIGKILL it if it has not exited within ``grace_s``."""
    if proc.poll() is not None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # stragglers of a group whose leader exited
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace_s)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=grace_s)


@contextlib.contextmanager
def background(cmd: list[str], *, cwd: Path, env: Mapping[str, str], log: Path
               ) -> Iterator[subprocess.Popen[bytes]]:
    """Run ``cmd`` in a process group of its own for the block; always stopped after."""
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=cwd, env=dict(env), stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            yield proc
        finally:
            stop_group(proc)


def api(base: str, path: str, body: Mapping[str, Any] | None = None) -> Any:
    """GET (or POST ``body`` as JSON to) the Prefect REST API at ``base`` + ``path``."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"{base}{path}", data=data, method="POST" if data else "GET",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def wait_healthy(url: str, *, proc: subprocess.Popen[bytes], log: Path,
                 timeout_s: float) -> None:
    """Poll ``url`` until it answers 200, the process dies, or ``timeout_s`` passes."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited {proc.returncode}:\n{log.read_text()[-3000:]}")
        if _answers(url):
            return
        time.sleep(1)
    raise AssertionError(f"{url} not healthy after {timeout_s} s:\n{log.read_text()[-3000:]}")
