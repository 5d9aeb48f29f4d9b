"""A real chat-completions server on 127.0.0.1 for testing the ``openai_http`` client.

Not a mock: the client under test opens real TCP connections to a ``ThreadingHTTPServer`` on an
ephemeral port, so timeouts, refused connections, headers and concurrency behave as they do
against vLLM or a hosted API. Like a real server it checks each request's shape (model, message
list, part types, decodable data-URL images) and answers 400 with an OpenAI-style error body when
it is wrong. Valid requests are answered from a scripted queue (:func:`answer`, :func:`error`,
:func:`raw`), and once the queue is empty by echoing the request's last text part, which lets
concurrent callers check they got their own answer back.

Every chat request is recorded (:class:`Recorded`). Use it as a context manager: it binds only
to 127.0.0.1, and leaving the block shuts it down and wakes any handler still holding a slow
reply.

Given ``models``, it behaves like a server serving those ids: ``GET {base}/models`` lists them
as OpenAI's ``{"object": "list", "data": [{"id": ...}]}`` and a chat request naming another
model gets vLLM's 404 ("The model `x` does not exist."). Without ``models`` it has no model
list (``GET /models`` answers 404, as some gateways do) and accepts any model. GETs are
counted in ``model_listings``, not recorded as chat requests.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import io
import json
import re
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from PIL import Image

_DATA_URL = re.compile(r"data:image/(?P<kind>[a-z]+);base64,(?P<data>.+)", re.DOTALL)
_ROLES = frozenset({"system", "user", "assistant", "tool"})


@dataclasses.dataclass(frozen=True)
class Reply:
    """One scripted reply. ``body=None`` means a normal answer saying ``text`` (or the echo)."""

    status: int = 200
    text: str | None = None
    body: bytes | None = None
    headers: tuple[tuple[str, str], ...] = ()
    delay_s: float = 0.0
    fingerprint: str | None = None


def answer(text: str | None = None, *, delay_s: float = 0.0,
           fingerprint: str | None = None) -> Reply:
    """A well-formed completion saying ``text`` (None: echo), after ``delay_s`` seconds."""
    return Reply(text=text, delay_s=delay_s, fingerprint=fingerprint)


def error(status: int, message: str = "scripted failure", *,
          retry_after: str | None = None) -> Reply:
    """An OpenAI-style error body with ``status``, optionally with a ``Retry-After`` header."""
    body = json.dumps({"error": {"message": message, "type": "server_error", "code": status}})
    headers = (("Retry-After", retry_after),) if retry_after is not None else ()
    return Reply(status=status, body=body.encode(), headers=headers)


def raw(body: str | dict[str, Any], *, status: int = 200) -> Reply:
    """Exactly ``body`` (text as is, a dict as JSON): for malformed or incomplete answers."""
    text = body if isinstance(body, str) else json.dumps(body)
    return Reply(status=status, body=text.encode())


@dataclasses.dataclass(frozen=True)
class Recorded:
    """A request as received. ``parts`` lists the user content in order: ``("text", str)`` or
    ``("image", (format, (width, height)))`` for each decoded image."""

    path: str
    headers: dict[str, str]
    body: Any
    parts: tuple[tuple[str, Any], ...]

    @property
    def images(self) -> list[tuple[str, tuple[int, int]]]:
        """(Pillow format, (width, height)) of every image, in order."""
        return [value for kind, value in self.parts if kind == "image"]

    @property
    def texts(self) -> list[str]:
        """Every text part, in order."""
        return [value for kind, value in self.parts if kind == "text"]


class _BadRequest(ValueError):
    """The request is not one a chat-completions server accepts."""


def _decode_image(url: object) -> tuple[str, tuple[int, int]]:
    match = _DATA_URL.fullmatch(url) if isinstance(url, str) else None
    if match is None:
        raise _BadRequest("image_url.url must be a base64 data:image/... URL")
    try:
        with Image.open(io.BytesIO(base64.b64decode(match["data"], validate=True))) as img:
            img.load()
            return str(img.format), img.size
    except (binascii.Error, ValueError, OSError) as exc:
        raise _BadRequest(f"image data URL does not decode: {exc}") from exc


def _parts(content: object) -> list[tuple[str, Any]]:
    if isinstance(content, str):
        return [("text", content)]
    if not isinstance(content, list) or not content:
        raise _BadRequest("content must be a string or a non-empty list of parts")
    parts: list[tuple[str, Any]] = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            parts.append(("text", part["text"]))
        elif kind == "image_url" and isinstance(part.get("image_url"), dict):
            parts.append(("image", _decode_image(part["image_url"].get("url"))))
        else:
            raise _BadRequest(f"unsupported content part: {str(part)[:80]}")
    return parts


def _check_request(body: Any) -> list[tuple[str, Any]]:
    """The parts of every message, in order, after checking the body as a real server would."""
    if not isinstance(body, dict) or not isinstance(body.get("model"), str) or not body["model"]:
        raise _BadRequest("'model' is required")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _BadRequest("'messages' must be a non-empty list")
    parts: list[tuple[str, Any]] = []
    for message in messages:
        if not isinstance(message, dict) or message.get("role") not in _ROLES:
            raise _BadRequest(f"bad message role in {str(message)[:80]}")
        parts += _parts(message.get("content"))
    for key, kind in (("temperature", (int, float)), ("max_tokens", int)):
        if key in body and not isinstance(body[key], kind):
            raise _BadRequest(f"'{key}' has the wrong type")
    return parts


class _Server(ThreadingHTTPServer):
    # The default listen backlog of 5 drops SYNs under 8 concurrent clients (1 s retransmits).
    request_queue_size = 64
    daemon_threads = True


class ChatStubServer:
    """A scripted chat-completions server; ``url`` is the base URL a client is given."""

    def __init__(self, *, api_key: str | None = None, base_path: str = "/v1",
                 models: tuple[str, ...] | None = None) -> None:
        self.api_key = api_key
        self.base_path = base_path
        self.models = models
        self.model_listings = 0
        self._lock = threading.Lock()
        self._queue: deque[Reply] = deque()
        self._records: list[Recorded] = []
        self._stopping = threading.Event()
        self._httpd = _Server(("127.0.0.1", 0), _handler_for(self))
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:51234/v1``."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}{self.base_path}"

    @property
    def requests(self) -> list[Recorded]:
        """Every request received so far, in arrival order."""
        with self._lock:
            return list(self._records)

    def script(self, *replies: Reply) -> None:
        """Queue replies for the next valid requests, in order."""
        with self._lock:
            self._queue.extend(replies)

    def __enter__(self) -> ChatStubServer:
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def handle(self, handler: BaseHTTPRequestHandler) -> None:
        """Check, record and answer one POST."""
        length = int(handler.headers.get("Content-Length") or 0)
        data = handler.rfile.read(length)
        headers = {k.lower(): v for k, v in handler.headers.items()}
        try:
            body = json.loads(data)
        except ValueError:
            body = None
        reply = self._reply(handler.path, headers, body)
        if reply.delay_s and self._stopping.wait(reply.delay_s):
            return
        payload = reply.body if reply.body is not None else self._completion(body, reply)
        try:
            handler.send_response(reply.status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(payload)))
            for name, value in reply.headers:
                handler.send_header(name, value)
            handler.end_headers()
            handler.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (its timeout): nothing left to tell it

    def handle_get(self, handler: BaseHTTPRequestHandler) -> None:
        """Answer ``GET {base}/models`` with the served ids (404 without ``models``)."""
        headers = {k.lower(): v for k, v in handler.headers.items()}
        with self._lock:
            self.model_listings += 1
        if handler.path != f"{self.base_path}/models" or self.models is None:
            reply = error(404, f"no route {handler.path}")
        elif self.api_key and headers.get("authorization") != f"Bearer {self.api_key}":
            reply = error(401, "invalid api key")
        else:
            data = [{"id": m, "object": "model", "created": 0, "owned_by": "stub"}
                    for m in self.models]
            reply = raw({"object": "list", "data": data})
        assert reply.body is not None
        handler.send_response(reply.status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(reply.body)))
        handler.end_headers()
        handler.wfile.write(reply.body)

    def _reply(self, path: str, headers: dict[str, str], body: Any) -> Reply:
        """Record the request; a validation error, or the next scripted reply, or an echo."""
        parts: list[tuple[str, Any]] = []
        problem: Reply | None = None
        try:
            if path != f"{self.base_path}/chat/completions":
                problem = error(404, f"no route {path}")
            elif self.api_key and headers.get("authorization") != f"Bearer {self.api_key}":
                problem = error(401, "invalid api key")
            else:
                parts = _check_request(body)
                if self.models is not None and body["model"] not in self.models:
                    problem = error(404, f"The model `{body['model']}` does not exist.")
        except _BadRequest as exc:
            problem = error(400, str(exc))
        with self._lock:
            self._records.append(Recorded(path, headers, body, tuple(parts)))
            if problem is not None:
                return problem
            return self._queue.popleft() if self._queue else answer()

    def _completion(self, body: Any, reply: Reply) -> bytes:
        parts = _check_request(body)
        texts = [value for kind, value in parts if kind == "text"]
        text = reply.text if reply.text is not None else (texts[-1] if texts else "ok")
        result: dict[str, Any] = {
            "id": f"chatcmpl-stub-{time.monotonic_ns()}", "object": "chat.completion",
            "created": int(time.time()), "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": len(parts), "completion_tokens": len(text.split()),
                      "total_tokens": len(parts) + len(text.split())}}
        if reply.fingerprint:
            result["system_fingerprint"] = reply.fingerprint
        return json.dumps(result).encode()


def _handler_for(stub: ChatStubServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            stub.handle(self)

        def do_GET(self) -> None:
            stub.handle_get(self)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep pytest output clean; tests read ``stub.requests`` instead

    return Handler
