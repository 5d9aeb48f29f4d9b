"""Open one page in headless Chromium and keep its screenshot and console errors.

Driven over the Chrome DevTools Protocol (a websocket, with the ``websockets`` package that
Prefect brings): cookies are set before navigating (Label Studio's labeling screen needs a
logged-in session), console errors, uncaught exceptions and failed loads are collected, and
the page is captured once ``ready_js`` is true (or after ``timeout_s``). Chromium is Debian's
``chromium`` (or ``$NEEDLEFORGE_CHROMIUM``); without one the caller skips.
"""

from __future__ import annotations

import base64
import dataclasses
import itertools
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from websockets.sync.client import connect


@dataclasses.dataclass
class PageVisit:
    png: bytes
    ready: bool
    errors: list[str]
    ready_value: Any


def chromium_binary() -> str | None:
    given = os.environ.get("NEEDLEFORGE_CHROMIUM")
    if given:
        return given if Path(given).is_file() else None
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _devtools_url(process: subprocess.Popen[str], timeout_s: float) -> str:
    assert process.stderr is not None
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        found = re.search(r"DevTools listening on (ws://\S+)", line)
        if found:
            return found.group(1)
        if not line and process.poll() is not None:
            break
    raise RuntimeError("chromium did not open its DevTools port")


class _Session:
    def __init__(self, ws_url: str) -> None:
        self._ws = connect(ws_url, max_size=64 * 2**20, open_timeout=20)
        self._ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        call_id = next(self._ids)
        self._ws.send(json.dumps({"id": call_id, "method": method, "params": params}))
        while True:
            message = json.loads(self._ws.recv(timeout=60))
            if message.get("id") == call_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return dict(message.get("result", {}))
            self.events.append(message)

    def drain(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                self.events.append(json.loads(self._ws.recv(timeout=left)))
            except TimeoutError:
                return

    def close(self) -> None:
        self._ws.close()


def _errors(events: list[dict[str, Any]]) -> list[str]:
    out = []
    for e in events:
        method, params = e.get("method"), e.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") == "error":
            out.append("console.error: " + " ".join(
                str(a.get("value", a.get("description", ""))) for a in params.get("args", [])))
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            out.append("exception: " + str(details.get("exception", {}).get(
                "description", details.get("text", ""))))
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            entry = params["entry"]
            out.append(f"log: {entry.get('text')} {entry.get('url', '')}".strip())
    return out


def visit(url: str, *, cookies: list[dict[str, Any]], ready_js: str, timeout_s: float = 60.0,
          width: int = 1400, height: int = 1000, then_js: str | None = None) -> PageVisit:
    """Open ``url`` with ``cookies`` set; wait until ``ready_js`` evaluates truthy, run
    ``then_js`` (e.g. seek the video) and give the page two seconds more."""
    binary = chromium_binary()
    if binary is None:
        raise RuntimeError("no chromium")
    profile = tempfile.mkdtemp(prefix="nf-chromium-")
    process = subprocess.Popen(
        [binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-dev-shm-usage", "--mute-audio", "--remote-debugging-port=0",
         f"--user-data-dir={profile}", f"--window-size={width},{height}", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        browser = _devtools_url(process, 30)
        port = re.search(r":(\d+)/", browser)
        assert port is not None
        import httpx

        pages = httpx.get(f"http://127.0.0.1:{port.group(1)}/json", timeout=10).json()
        page = next(p for p in pages if p.get("type") == "page")
        session = _Session(page["webSocketDebuggerUrl"])
        try:
            for domain in ("Page", "Runtime", "Log", "Network"):
                session.call(f"{domain}.enable")
            session.call("Network.setCookies", cookies=cookies)
            session.call("Page.navigate", url=url)
            ready, value = False, None
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline and not ready:
                session.drain(1.0)
                value = session.call("Runtime.evaluate", expression=ready_js,
                                     returnByValue=True).get("result", {}).get("value")
                ready = bool(value)
            if ready and then_js:
                session.call("Runtime.evaluate", expression=then_js, awaitPromise=True)
            session.drain(2.0)  # late errors of the first render
            shot = session.call("Page.captureScreenshot", format="png")
            return PageVisit(base64.b64decode(shot["data"]), ready, _errors(session.events),
                             value)
        finally:
            session.close()
    finally:
        os.killpg(process.pid, 15)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait(timeout=20)
        shutil.rmtree(profile, ignore_errors=True)
