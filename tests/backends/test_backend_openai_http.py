"""The OpenAI-compatible chat client against a real HTTP server on 127.0.0.1.

``openai_stub_server`` speaks the chat-completions protocol over real sockets, so these tests
exercise what breaks in production: request shape and image encoding, retries with backoff and
``Retry-After``, timeouts, refused connections, malformed answers, API-key handling and use from
a thread pool. Backoffs are milliseconds so the module runs in a few seconds. Prompt texts are
snapshots: changing the wording must be deliberate.
"""

from __future__ import annotations

import base64
import email.utils
import io
import math
import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest
from PIL import Image

from needleforge.backends.base import RGBImage
from needleforge.backends.openai.client import (
    ChatClient,
    image_data_url,
    interleaved_messages,
    video_first_messages,
    video_messages,
)
from needleforge.errors import BackendError
from tests.backends.openai_stub_server import ChatStubServer, answer, error, raw

MODEL = "stub-vlm"
FAST = {"backoff_s": 0.01, "max_backoff_s": 0.05}
KEY = "sk-test-0123456789abcdef"
VIDEO_FIRST_LEAD = "Below are 3 frames taken in order from one video, from 0.0 s to 12.0 s."
INTERLEAVED_LEAD = ("Below are frames taken in order from one video; each frame follows its "
                    "time in the video in seconds.")


@pytest.fixture(autouse=True)
def _hermetic_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No proxy may divert 127.0.0.1 traffic, and no developer key may leak into a test."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
                 "all_proxy", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def stub() -> Iterator[ChatStubServer]:
    """A fresh server per test, shut down when the test ends."""
    with ChatStubServer() as server:
        yield server


def client_for(server: ChatStubServer, **overrides: Any) -> ChatClient:
    return ChatClient(server.url, model=MODEL, **{**FAST, **overrides})


def frame(height: int, width: int, seed: int = 0) -> RGBImage:
    """A textured frame (JPEG of a flat colour would be trivially small)."""
    return np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)


FRAMES = [(0.0, frame(48, 64, 1)), (1.5, frame(120, 200, 2)), (12.0, frame(30, 40, 3))]


def test_video_first_request_shape(stub: ChatStubServer) -> None:
    messages = video_first_messages(FRAMES, "What is shown?", system="Answer briefly.",
                                    max_side=100)
    reply = client_for(stub).chat(messages)

    (rec,) = stub.requests
    assert rec.path == "/v1/chat/completions"
    assert rec.headers["content-type"] == "application/json"
    assert rec.body["model"] == MODEL
    assert (rec.body["temperature"], rec.body["max_tokens"]) == (0.0, 512)
    assert rec.body["messages"][0] == {"role": "system", "content": "Answer briefly."}
    assert [p["type"] for p in rec.body["messages"][1]["content"]] == [
        "text", "image_url", "image_url", "image_url", "text"]
    assert rec.images == [("JPEG", (64, 48)), ("JPEG", (100, 60)), ("JPEG", (40, 30))]
    assert rec.texts == ["Answer briefly.", VIDEO_FIRST_LEAD, "What is shown?"]
    assert reply.text == "What is shown?"  # the stub echoes the question
    assert (reply.model, reply.attempts, reply.finish_reason) == (MODEL, 1, "stop")
    assert reply.usage["prompt_tokens"] == 6 and reply.latency_s > 0


def test_interleaved_timestamps_precede_their_frames_in_order(stub: ChatStubServer) -> None:
    client_for(stub).chat(interleaved_messages(FRAMES, "When does it change?", max_side=None))

    (rec,) = stub.requests
    assert rec.parts == (
        ("text", INTERLEAVED_LEAD),
        ("text", "[0.0 s]"), ("image", ("JPEG", (64, 48))),
        ("text", "[1.5 s]"), ("image", ("JPEG", (200, 120))),
        ("text", "[12.0 s]"), ("image", ("JPEG", (40, 30))),
        ("text", "When does it change?"),
    )


def test_video_messages_dispatches_on_style() -> None:
    assert video_messages(FRAMES, "Q?", style="video_first") == video_first_messages(FRAMES, "Q?")
    assert video_messages(FRAMES, "Q?", style="interleaved") == interleaved_messages(FRAMES, "Q?")
    assert len(video_first_messages(FRAMES, "Q?")) == 1  # no system message unless asked


@pytest.mark.parametrize(("frames", "style", "match"), [
    ([], "video_first", "at least one frame"),
    ([(2.0, frame(8, 8)), (1.0, frame(8, 8))], "interleaved", r"frame 1: t_s = 1.0 comes before"),
    ([(-1.0, frame(8, 8))], "interleaved", "finite time >= 0"),
    ([(math.nan, frame(8, 8))], "video_first", "finite time >= 0"),
    ([(0.0, np.zeros((8, 8), dtype=np.uint8))], "video_first", r"shape = \(8, 8\)"),
    ([(0.0, frame(8, 8))], "audio_first", "must be 'video_first' or 'interleaved'"),
])
def test_video_messages_reject_bad_input(frames: list[Any], style: Any, match: str) -> None:
    with pytest.raises(BackendError, match=match):
        video_messages(frames, "Q?", style=style)


def test_image_data_url_encodes_jpeg_and_only_shrinks() -> None:
    image = frame(90, 160)
    url = image_data_url(image, max_side=1000)
    prefix = "data:image/jpeg;base64,"
    assert url.startswith(prefix)
    with Image.open(io.BytesIO(base64.b64decode(url[len(prefix):]))) as decoded:
        assert (decoded.format, decoded.size) == ("JPEG", (160, 90))
    assert len(image_data_url(image, quality=20)) < len(image_data_url(image, quality=95))
    with pytest.raises(BackendError, match=r"quality = 0 must be in 1\.\.95"):
        image_data_url(image, quality=0)


def test_name_version_and_server_fingerprint(stub: ChatStubServer) -> None:
    client = client_for(stub)
    port = stub.url.split(":")[2].split("/")[0]
    assert client.name == f"openai-http-{MODEL}"
    assert client.version == f"127.0.0.1:{port}/{MODEL}"
    stub.script(answer("yes", fingerprint="fp_44709d6fcb"))
    reply = client.chat([{"role": "user", "content": "Is it?"}])
    assert (reply.text, reply.system_fingerprint) == ("yes", "fp_44709d6fcb")
    assert reply.version == f"{client.version}+fp_44709d6fcb"
    assert client.chat([{"role": "user", "content": "Again?"}]).version == client.version


@pytest.mark.parametrize("failures", [
    [error(429)], [error(500)], [error(503)], [answer("late", delay_s=2.0)],
    [error(429), error(502), answer("late", delay_s=2.0)],
], ids=["429", "500", "503", "timeout", "mixed"])
def test_transient_failures_are_retried(stub: ChatStubServer, failures: list[Any]) -> None:
    stub.script(*failures, answer("finally"))
    reply = client_for(stub, timeout_s=0.3).chat([{"role": "user", "content": "Q?"}])
    assert (reply.text, reply.attempts) == ("finally", len(failures) + 1)
    assert len(stub.requests) == len(failures) + 1


@pytest.mark.parametrize("retry_after", ["1", "http-date"])
def test_retry_after_is_honoured(stub: ChatStubServer, retry_after: str) -> None:
    if retry_after == "http-date":  # whole seconds: 2 s ahead means a wait in (1, 2]
        retry_after = email.utils.formatdate(time.time() + 2, usegmt=True)
    stub.script(error(429, retry_after=retry_after), answer("ok"))
    started = time.monotonic()
    reply = client_for(stub).chat([{"role": "user", "content": "Q?"}])
    assert reply.attempts == 2 and time.monotonic() - started >= 0.9


def test_retry_after_is_capped(stub: ChatStubServer) -> None:
    stub.script(error(503, retry_after="3600"), answer("ok"))
    started = time.monotonic()
    reply = client_for(stub, retry_after_cap_s=0.05).chat([{"role": "user", "content": "Q?"}])
    assert reply.attempts == 2 and time.monotonic() - started < 2


def test_gives_up_after_max_retries_with_a_clear_error(stub: ChatStubServer) -> None:
    stub.script(*[raw("<html>\n  <body>model overloaded</body>\n</html>", status=500)] * 3)
    with pytest.raises(BackendError) as caught:
        client_for(stub, max_retries=2).chat([{"role": "user", "content": "Q?"}])
    message = str(caught.value)
    assert f"POST {stub.url}/chat/completions" in message
    assert "gave up after 3 attempts" in message and "HTTP 500" in message
    assert "<html> <body>model overloaded</body> </html>" in message  # the body, on one line
    assert len(stub.requests) == 3


def test_refused_connection_is_retried_then_reported() -> None:
    with socket.socket() as sock:  # a port nobody listens on once the socket closes
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = ChatClient(f"http://127.0.0.1:{port}/v1", model=MODEL, max_retries=1,
                        backoff_s=0.01)
    with pytest.raises(BackendError, match=r"gave up after 2 attempts; last: ConnectError"):
        client.chat([{"role": "user", "content": "Q?"}])


def test_invalid_request_gets_400_and_no_retry(stub: ChatStubServer) -> None:
    bad: Any = [{"role": "user", "content": [{"type": "video", "video": "clip.mp4"}]}]
    with pytest.raises(BackendError, match=r"HTTP 400: .*unsupported content part") as caught:
        client_for(stub).chat(bad)
    assert "attempts" not in str(caught.value)
    assert len(stub.requests) == 1


@pytest.mark.parametrize("status", [401, 404, 422])
def test_other_client_errors_are_not_retried(stub: ChatStubServer, status: int) -> None:
    stub.script(error(status, "nope"), answer("never reached"))
    with pytest.raises(BackendError, match=rf"HTTP {status}: .*nope"):
        client_for(stub).chat([{"role": "user", "content": "Q?"}])
    assert len(stub.requests) == 1


@pytest.mark.parametrize(("body", "match"), [
    ("{'choices': oops", r"HTTP 200: response is not JSON .*\{'choices': oops"),
    ([1, 2], r"response has no choices\[0\]"),
    ({"id": "x", "object": "chat.completion"}, r"response has no choices\[0\]"),
    ({"choices": []}, r"response has no choices\[0\]"),
    ({"choices": [{"index": 0}]}, r"response has no choices\[0\]\.message"),
    ({"choices": [{"message": {"role": "assistant"}}]}, r"content is missing, not a string"),
    ({"choices": [{"message": {"content": None, "refusal": "I can't"}}]},
     r"content is a NoneType, not a string \(refusal: \"I can't\"\)"),
    ({"choices": [{"message": {"content": 42}}]}, r"content is a int, not a string"),
])
def test_malformed_answers_raise_clear_errors(stub: ChatStubServer, body: Any,
                                              match: str) -> None:
    stub.script(raw(body))
    with pytest.raises(BackendError, match=match):
        client_for(stub).chat([{"role": "user", "content": "Q?"}])
    assert len(stub.requests) == 1


def test_api_key_from_env_is_sent_and_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with ChatStubServer(api_key=KEY) as server:
        client = client_for(server, max_retries=0)
        assert client.chat([{"role": "user", "content": "Q?"}]).text == "Q?"
        assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
        server.script(error(500, f"upstream refused key {KEY}"))
        with pytest.raises(BackendError) as caught:
            client.chat([{"role": "user", "content": "Q?"}])
    assert KEY not in str(caught.value) and "[redacted]" in str(caught.value)
    assert KEY not in repr(client)


def test_wrong_key_is_a_401_without_retry() -> None:
    with ChatStubServer(api_key=KEY) as server:
        client = client_for(server, api_key="sk-wrong-key")
        with pytest.raises(BackendError, match=r"HTTP 401: .*invalid api key"):
            client.chat([{"role": "user", "content": "Q?"}])
        assert len(server.requests) == 1


def test_no_key_no_header_and_extra_headers_sent(stub: ChatStubServer) -> None:
    client_for(stub).chat([{"role": "user", "content": "Q?"}])
    client_for(stub, api_key_env="NEEDLEFORGE_UNSET_KEY", extra_headers={"X-Tenant": "lab"},
               ).chat([{"role": "user", "content": "Q?"}])
    first, second = stub.requests
    assert "authorization" not in first.headers and "authorization" not in second.headers
    assert second.headers["x-tenant"] == "lab"


def test_per_call_overrides_reach_the_server(stub: ChatStubServer) -> None:
    client_for(stub, temperature=0.7, max_tokens=64).chat(
        [{"role": "user", "content": "Q?"}], max_tokens=8)
    body = stub.requests[0].body
    assert (body["temperature"], body["max_tokens"]) == (0.7, 8)


def test_one_client_serves_a_thread_pool(stub: ChatStubServer) -> None:
    client = client_for(stub)
    questions = [f"question {i}" for i in range(32)]

    def ask(question: str) -> tuple[str, str]:
        messages = interleaved_messages([(0.0, frame(16, 16))], question)
        return question, client.chat(messages).text

    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(ask, questions))
    assert all(question == text for question, text in answers)
    assert sorted(rec.texts[-1] for rec in stub.requests) == sorted(questions)


@pytest.mark.parametrize(("overrides", "match"), [
    ({"base_url": "127.0.0.1:8000/v1"}, "must look like http"),
    ({"base_url": "ftp://host/v1"}, "must look like http"),
    ({"base_url": "https://user:hunter2@api.example/v1"}, "must not embed credentials"),
    ({"model": " "}, "model must be a non-empty"),
    ({"timeout_s": 0}, "timeout_s = 0 must be > 0"),
    ({"max_retries": -1}, "max_retries = -1 must be >= 0"),
    ({"backoff_s": -0.5}, "backoff_s = -0.5 must be >= 0"),
    ({"temperature": 3.0}, "temperature = 3.0 must be in 0..2"),
    ({"max_tokens": 0}, "max_tokens = 0 must be >= 1"),
])
def test_bad_configuration_is_refused_up_front(overrides: dict[str, Any], match: str) -> None:
    kwargs: dict[str, Any] = {"base_url": "http://127.0.0.1:8000/v1", "model": MODEL}
    kwargs.update(overrides)
    with pytest.raises(BackendError, match=match):
        ChatClient(kwargs.pop("base_url"), **kwargs)


def test_empty_message_list_is_refused() -> None:
    with pytest.raises(BackendError, match="at least one message"):
        ChatClient("http://127.0.0.1:8000/v1", model=MODEL).chat([])
