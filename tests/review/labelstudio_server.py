"""A real Label Studio server on loopback for the slow tests, in its own temporary data dir.

The server is the ``label-studio`` of ``.venv-labelstudio`` (``make labelstudio-env``), or
``$NEEDLEFORGE_LABEL_STUDIO``. Without one the tests skip, naming the make target, unless
``NEEDLEFORGE_REQUIRE_LABEL_STUDIO`` is set (``make test-slow`` sets it after building the
env), where they fail instead. Start-up waits at most ``timeout_s`` (first start ~40 s here:
Django migrations on a fresh SQLite file); :func:`stop_server` ends its whole process group
and checks that nothing still listens on its port.
"""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest

REPO = Path(__file__).resolve().parents[2]
TOKEN = "needleforge-test-token-0123456789"
ADMIN = "judge-a@example.org"
PASSWORD = "pw-0123456789"


@dataclasses.dataclass
class Server:
    url: str
    token: str
    media_root: Path
    data_dir: Path
    log: Path
    process: subprocess.Popen[bytes]
    port: int


def label_studio_binary() -> Path:
    """The ``label-studio`` script to run; skips (or fails when required) without one."""
    given = os.environ.get("NEEDLEFORGE_LABEL_STUDIO")
    path = Path(given) if given else REPO / ".venv-labelstudio" / "bin" / "label-studio"
    if not path.is_file():
        why = (f"no Label Studio server at {path}: run `make labelstudio-env` (or set "
               "NEEDLEFORGE_LABEL_STUDIO)")
        if os.environ.get("NEEDLEFORGE_REQUIRE_LABEL_STUDIO"):
            pytest.fail(why)
        pytest.skip(why)
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(root: Path, *, timeout_s: float = 240.0) -> Server:
    """Start Label Studio with its data under ``root/data`` and local files served from
    ``root/media``, one admin (:data:`ADMIN`) whose legacy token is :data:`TOKEN`."""
    binary = label_studio_binary()
    data, media, log = root / "data", root / "media", root / "server.log"
    data.mkdir(parents=True)
    media.mkdir(parents=True)
    port = _free_port()
    env = {**os.environ, "LABEL_STUDIO_BASE_DATA_DIR": str(data),
           "LOCAL_FILES_SERVING_ENABLED": "true", "LOCAL_FILES_DOCUMENT_ROOT": str(media),
           "LATEST_VERSION_CHECK": "false", "COLLECT_ANALYTICS": "false",
           # no error reports to Sentry (nothing leaves the machine; offline, the page's
           # attempts would be console errors)
           "SENTRY_DSN": "", "FRONTEND_SENTRY_DSN": "",
           "HOME": str(root)}  # nothing of the server lands in the real home
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(binary), "start", "--no-browser", "--host", "127.0.0.1", "--port", str(port),
             "--data-dir", str(data), "--username", ADMIN, "--password", PASSWORD,
             "--user-token", TOKEN, "--enable-legacy-api-token"],
            stdout=out, stderr=subprocess.STDOUT, env=env, cwd=root, start_new_session=True)
    server = Server(f"http://127.0.0.1:{port}", TOKEN, media, data, log, process, port)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"label-studio exited with {process.returncode} before it answered: "
                        f"{log.read_text(errors='replace')[-2000:]}")
        try:
            if httpx.get(f"{server.url}/health", timeout=2).status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        time.sleep(1.0)
    stop_server(server)
    pytest.fail(f"label-studio did not answer on {server.url} within {timeout_s:.0f} s: "
                f"{log.read_text(errors='replace')[-2000:]}")


def stop_server(server: Server) -> None:
    """End the server's process group (SIGTERM, then SIGKILL after 20 s); check the port
    is free again."""
    if server.process.poll() is None:
        try:
            os.killpg(server.process.pid, signal.SIGTERM)
            server.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.process.pid, signal.SIGKILL)
            server.process.wait(timeout=20)
        except ProcessLookupError:
            pass
    try:
        os.killpg(server.process.pid, 0)
        alive = True
    except ProcessLookupError:
        alive = False
    if alive:  # a child outlived the leader: end it too
        os.killpg(server.process.pid, signal.SIGKILL)
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", server.port)) != 0, \
            f"something still listens on {server.url} after the server was stopped"


def login_cookies(server: Server) -> list[dict[str, str]]:
    """The session cookies of :data:`ADMIN` logged in through the server's login form, as
    the DevTools protocol's ``Network.setCookies`` takes them."""
    with httpx.Client(base_url=server.url, timeout=30) as client:
        form = client.get("/user/login/")
        match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)
        assert match, "no CSRF token on the login page"
        done = client.post("/user/login/", data={
            "email": ADMIN, "password": PASSWORD, "csrfmiddlewaretoken": match.group(1)},
            headers={"Referer": f"{server.url}/user/login/"})
        assert done.status_code == 302 and "sessionid" in client.cookies, done.text[:300]
        return [{"name": k, "value": v, "domain": "127.0.0.1", "path": "/"}
                for k, v in client.cookies.items()]
