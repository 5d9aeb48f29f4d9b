"""The Label Studio client's errors without a Label Studio: nothing listening, a web server
that is not Label Studio, bad URLs and tokens; and how tokens are told apart. (A real server's
refusals are in tests/review/test_labelstudio_server.py.)"""

from __future__ import annotations

import base64
import http.server
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from needleforge.cli import app
from needleforge.review.ls_client import LabelStudio, LabelStudioError, is_personal_access_token

runner = CliRunner()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _NotLabelStudio(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"<html>a wiki</html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        return


@pytest.fixture
def wiki() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotLabelStudio)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_nothing_listening_names_the_url() -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    with LabelStudio(url, "tok-123456") as ls, \
            pytest.raises(LabelStudioError, match=f"Label Studio at {url}: cannot reach"):
        ls.projects()


def test_a_server_that_is_not_label_studio_is_named(wiki: str) -> None:
    with LabelStudio(wiki, "tok-123456") as ls, \
            pytest.raises(LabelStudioError, match=f"{wiki}: GET /api/projects did not answer "
                          "JSON"):
        ls.projects()


def test_bad_urls_and_empty_tokens_are_refused_up_front() -> None:
    with pytest.raises(LabelStudioError, match="'localhost:8080' must start with http"):
        LabelStudio("localhost:8080", "t")
    with pytest.raises(LabelStudioError, match="no API token given"):
        LabelStudio("http://127.0.0.1:8080", "  ")


def test_cli_push_to_a_server_that_is_down_exits_2_naming_it(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    result = runner.invoke(app, ["review", "--db", str(tmp_path / "s.duckdb"), "--to",
                                 "label-studio", "--ls-url", url, "--ls-token", "tok-123456",
                                 "--media-root", str(tmp_path), "--videos",
                                 str(tmp_path / "render")])
    assert result.exit_code == 2, result.output
    assert url in result.output and "cannot reach the server" in result.output
    assert "Traceback" not in result.output
    both = runner.invoke(app, ["review", "--to", "label-studio", "--from", "label-studio"])
    assert both.exit_code == 2 and "not both" in both.output


def test_personal_access_tokens_are_told_from_legacy_ones() -> None:
    def part(obj: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    jwt = f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part({'token_type': 'refresh'})}.sig"
    assert is_personal_access_token(jwt)
    assert not is_personal_access_token("0123456789abcdef0123456789abcdef01234567")
    assert not is_personal_access_token("a.b.c")  # three parts, but no JWT header


def test_a_push_without_the_servers_media_root_says_which_flag(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOCAL_FILES_DOCUMENT_ROOT", raising=False)
    result = runner.invoke(app, ["review", "--db", str(tmp_path / "s.duckdb"), "--to",
                                 "label-studio", "--ls-token", "tok-123456"])
    assert result.exit_code == 2, result.output
    assert "http://127.0.0.1:8080" in result.output and "--media-root" in result.output


def test_a_video_folder_the_server_does_not_serve_is_refused_before_rendering(
        tmp_path: Path) -> None:
    videos = tmp_path / "elsewhere" / "render"
    result = runner.invoke(app, ["review", "--db", str(tmp_path / "s.duckdb"), "--to",
                                 "label-studio", "--ls-token", "tok-123456", "--media-root",
                                 str(tmp_path / "served"), "--videos", str(videos)])
    assert result.exit_code == 2, result.output
    assert f"montage folder {videos} is not under the Label Studio server's " \
        "LOCAL_FILES_DOCUMENT_ROOT" in result.output
    assert not videos.exists()
