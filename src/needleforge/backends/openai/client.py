"""A client for any OpenAI-compatible chat-completions endpoint (vLLM, SGLang, Ollama, hosted).

The NeMo writer and verifier and the evaluation adapters reach video-language models through
this client, so a local model and a hosted one differ only in ``base_url``. Frames travel as
JPEG data URLs in the messages, in one of two prompt styles (NeMo Sec. 5.1; VNBench):

* ``video_first`` — every frame, then the question;
* ``interleaved`` — each frame preceded by its timestamp (``[12.0 s]``), then the question.

Typical use::

    client = ChatClient("http://127.0.0.1:8000/v1", model="Qwen/Qwen2.5-VL-7B-Instruct")
    reply = client.chat(video_messages(frames, "When is the red car seen?", style="interleaved"))
    reply.text, reply.attempts, reply.version

A :class:`ChatClient` holds configuration (and whether its model check passed) and opens a
connection per request, so one instance can serve every thread of a pool. Before a stage's
first request, :meth:`ChatClient.check_model` asks the server's ``GET /models`` whether it
serves ``model``: the id must equal one the server lists, exactly.
"""

from __future__ import annotations

import base64
import dataclasses
import email.utils
import io
import json
import math
import os
import ssl
import threading
import time
import types
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeAlias, TypedDict

import httpx
from PIL import Image

from needleforge.backends.base import RGBImage, ensure_rgb
from needleforge.errors import BackendError

#: Prompt layouts for frames plus a question.
PromptStyle: TypeAlias = Literal["video_first", "interleaved"]
#: A sampled frame: its time in the source (seconds) and the RGB image.
TimedFrame: TypeAlias = tuple[float, RGBImage]

#: Statuses worth another try: the server is busy, overloaded or broken for a moment.
RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
#: Statuses of ``GET /models`` meaning "this server lists no models" rather than a failure.
_NO_MODEL_LIST = frozenset({404, 405, 501})
_SNIPPET_CHARS = 300


class TextPart(TypedDict):
    """A text part of a user message."""

    type: Literal["text"]
    text: str


class ImagePart(TypedDict):
    """An image part of a user message: ``image_url`` is ``{"url": "data:image/jpeg;…"}``."""

    type: Literal["image_url"]
    image_url: dict[str, str]


class Message(TypedDict):
    """One chat message; ``content`` is plain text or a list of text and image parts."""

    role: Literal["system", "user", "assistant"]
    content: str | list[TextPart | ImagePart]


@dataclasses.dataclass(frozen=True, slots=True)
class ChatResponse:
    """The model's answer and what produced it.

    ``latency_s`` is the duration of the successful attempt only; ``attempts`` counts every try
    (1 when the first one succeeded). ``version`` is the client's version plus the server's
    ``system_fingerprint`` when it sent one, so each row can record the exact serving build.
    """

    text: str
    model: str
    usage: dict[str, Any]
    latency_s: float
    attempts: int
    finish_reason: str | None = None
    system_fingerprint: str | None = None
    version: str = ""


def image_data_url(image: RGBImage, *, quality: int = 85, max_side: int | None = None) -> str:
    """Encode an RGB frame as a JPEG ``data:`` URL, downscaled so its longer side ≤ ``max_side``.

    Servers bill and limit by image tokens, which grow with pixels: ``max_side`` keeps a long
    prompt of frames within the model's context.

    Raises:
        BackendError: when ``image`` is not a uint8 HxWx3 array, or a parameter is out of range.
    """
    if not 1 <= quality <= 95:
        raise BackendError(f"{quality = } must be in 1..95")
    if max_side is not None and max_side < 1:
        raise BackendError(f"{max_side = } must be >= 1")
    pil = Image.fromarray(ensure_rgb(image))
    if max_side is not None:  # shrinks only, keeping the aspect ratio
        pil.thumbnail((max_side, max_side), Image.Resampling.BICUBIC)
    buffer = io.BytesIO()
    pil.save(buffer, format="JPEG", quality=quality)
    return "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _check_frames(frames: Sequence[TimedFrame]) -> None:
    if not frames:
        raise BackendError("a video prompt needs at least one frame")
    previous = -math.inf
    for index, (t_s, _) in enumerate(frames):
        if not math.isfinite(t_s) or t_s < 0:
            raise BackendError(f"frame {index}: {t_s = } must be a finite time >= 0")
        if t_s < previous:
            raise BackendError(f"frame {index}: {t_s = } comes before the previous {previous}")
        previous = t_s


def _image_part(image: RGBImage, *, quality: int, max_side: int | None) -> ImagePart:
    url = image_data_url(image, quality=quality, max_side=max_side)
    return {"type": "image_url", "image_url": {"url": url}}


def _text(text: str) -> TextPart:
    return {"type": "text", "text": text}


def video_messages(frames: Sequence[TimedFrame], question: str, *, style: PromptStyle,
                   system: str | None = None, quality: int = 85,
                   max_side: int | None = 768) -> list[Message]:
    """Messages showing ``frames`` in the prompt ``style``, then ``question``.

    ``video_first`` shows no per-frame times, only the span the frames cover in a lead-in, so
    the model can still place events on the clock; ``interleaved`` puts each frame after its
    timestamp (``[12.0 s]``).

    Raises:
        BackendError: on an unknown style, no frames, a negative, non-finite or decreasing
            time, or a bad image.
    """
    if style not in ("video_first", "interleaved"):
        raise BackendError(f"prompt {style = } must be 'video_first' or 'interleaved'")
    _check_frames(frames)
    images = [_image_part(img, quality=quality, max_side=max_side) for _, img in frames]
    parts: list[TextPart | ImagePart]
    if style == "video_first":
        parts = [_text(f"Below are {len(frames)} frames taken in order from one video, from "
                       f"{frames[0][0]:.1f} s to {frames[-1][0]:.1f} s."), *images]
    else:
        parts = [_text("Below are frames taken in order from one video; each frame follows "
                       "its time in the video in seconds.")]
        for (t_s, _), image in zip(frames, images, strict=True):
            parts += [_text(f"[{t_s:.1f} s]"), image]
    parts.append(_text(question))
    messages: list[Message] = [] if system is None else [{"role": "system", "content": system}]
    messages.append({"role": "user", "content": parts})
    return messages


def video_first_messages(frames: Sequence[TimedFrame], question: str, *,
                         system: str | None = None, quality: int = 85,
                         max_side: int | None = 768) -> list[Message]:
    """Messages showing every frame, then the question (NeMo's "video first" style).

    Raises:
        BackendError: as :func:`video_messages` does.
    """
    return video_messages(frames, question, style="video_first", system=system,
                          quality=quality, max_side=max_side)


def interleaved_messages(frames: Sequence[TimedFrame], question: str, *,
                         system: str | None = None, quality: int = 85,
                         max_side: int | None = 768) -> list[Message]:
    """Messages where each frame follows its timestamp, then the question (temporal prompt).

    Raises:
        BackendError: as :func:`video_messages` does.
    """
    return video_messages(frames, question, style="interleaved", system=system,
                          quality=quality, max_side=max_side)


def _retry_after_s(response: httpx.Response) -> float | None:
    """Seconds asked by a ``Retry-After`` header (delta-seconds or HTTP date); None if absent."""
    value = response.headers.get("retry-after", "").strip()
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        pass
    try:  # the other form is an HTTP date
        return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


@dataclasses.dataclass(frozen=True, slots=True)
class _Failure:
    """One failed try: what to say about it, its kind (``HTTP 400``, ``ConnectError``,
    ``timeout``), whether to try again, how long the server asks."""

    message: str
    kind: str
    retryable: bool
    retry_after_s: float | None = None


class ChatError(BackendError):
    """A request to the endpoint failed; ``kind`` says how in a few words (``HTTP 400``,
    ``ConnectError``, ``timeout``, ``bad answer``), so callers can tell one failure repeated
    from different ones without reading the message."""

    def __init__(self, message: str, *, kind: str) -> None:
        super().__init__(message)
        self.kind = kind

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        # pickled across process boundaries (Dask/Ray): ``kind`` is keyword-only
        return (_chat_error, (str(self), self.kind))


def _chat_error(message: str, kind: str) -> ChatError:
    return ChatError(message, kind=kind)


class ChatClient:
    """Sends chat-completions requests to one model on one OpenAI-compatible server.

    ``max_retries`` counts tries after the first: up to ``max_retries + 1`` requests are sent.
    Timeouts, connection errors and HTTP 408/429/5xx are retried after ``backoff_s * 2**n``
    seconds (capped at ``max_backoff_s``), or after the server's ``Retry-After`` (capped at
    ``retry_after_cap_s``); other statuses and unusable answers fail at once.

    The API key comes from ``api_key``, else the environment variable named by ``api_key_env``;
    without one no ``Authorization`` header is sent (local servers need none). It never appears
    in ``repr`` or error messages.

    :meth:`check_model` asks the server (``GET {base_url}/models``) whether it serves
    ``model``, once per client: a stage calls it before its first request, so a wrong model id
    or a dead server stops it before any work.
    """

    def __init__(self, base_url: str, *, model: str, api_key: str | None = None,
                 api_key_env: str | None = "OPENAI_API_KEY", timeout_s: float = 60.0,
                 max_retries: int = 3, backoff_s: float = 1.0, max_backoff_s: float = 30.0,
                 retry_after_cap_s: float = 30.0, temperature: float = 0.0,
                 max_tokens: int = 512, extra_headers: Mapping[str, str] | None = None) -> None:
        """Check and store the configuration; nothing is sent yet.

        Raises:
            BackendError: on a base URL that is not http(s) with a host, an empty model, or a
                number out of range.
        """
        parsed = urllib.parse.urlsplit(base_url.strip())
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise BackendError("base_url must look like http://127.0.0.1:8000/v1, got scheme "
                               f"{parsed.scheme!r} and host {parsed.hostname!r}")
        if parsed.username is not None:  # it would be echoed by every error message
            raise BackendError("base_url must not embed credentials: pass api_key instead")
        if not model.strip():
            raise BackendError("model must be a non-empty model name")
        _check_numbers(timeout_s=timeout_s, max_retries=max_retries, backoff_s=backoff_s,
                       max_backoff_s=max_backoff_s, retry_after_cap_s=retry_after_cap_s,
                       temperature=temperature, max_tokens=max_tokens)
        self.base_url = base_url.strip().rstrip("/")
        self.url = f"{self.base_url}/chat/completions"
        self.model = model
        self.timeout_s, self.max_retries = float(timeout_s), max_retries
        self.backoff_s, self.max_backoff_s = float(backoff_s), float(max_backoff_s)
        self.retry_after_cap_s = float(retry_after_cap_s)
        self.temperature, self.max_tokens = float(temperature), max_tokens
        self.name = f"openai-http-{model}"
        self.version = f"{parsed.netloc}/{model}"
        key = os.environ.get(api_key_env) if api_key is None and api_key_env else api_key
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        headers.update(extra_headers or {})
        self._headers: Mapping[str, str] = types.MappingProxyType(headers)
        # Values to blank out of error messages: the key, and any extra header (often a token).
        secrets = [key or "", *(extra_headers or {}).values()]
        self._secrets = tuple(s for s in secrets if len(s) >= 4)
        # Loading CA certificates takes ~30 ms: one context serves every request (httpx would
        # otherwise build one per client, even for plain http).
        self._ssl_context: ssl.SSLContext = httpx.create_ssl_context()
        # The only state that changes: whether check_model has passed (checked once).
        self._check_lock = threading.Lock()
        self._model_checked = False

    def __repr__(self) -> str:
        return f"ChatClient({self.base_url!r}, model={self.model!r})"

    def chat(self, messages: Sequence[Message], *, temperature: float | None = None,
             max_tokens: int | None = None) -> ChatResponse:
        """Send ``messages`` and return the model's answer, retrying transient failures.

        Raises:
            ChatError: (a BackendError) on a non-retryable status, when every try failed, or
                when the answer lacks ``choices[0].message.content``; the message names the
                URL, the status and the start of the response body.
        """
        if not messages:
            raise BackendError("messages must hold at least one message")
        payload = {"model": self.model, "messages": list(messages),
                   "temperature": self.temperature if temperature is None else temperature,
                   "max_tokens": self.max_tokens if max_tokens is None else max_tokens}
        response, attempts, latency_s = self._exchange(
            "POST", self.url, json.dumps(payload).encode("utf-8"))
        return self._parse(response, attempts=attempts, latency_s=latency_s)

    def served_models(self) -> tuple[str, ...] | None:
        """The model ids the server lists at ``GET {base_url}/models`` (OpenAI's
        ``{"data": [{"id": ...}]}``), retrying as :meth:`chat` does; None when the server has
        no such route (HTTP 404, 405 or 501: not every gateway lists its models).

        Raises:
            ChatError: the server does not answer (the message names the URL and asks whether
                it is running), refuses the request (401 and other statuses), or answers
                something that is not a model list.
        """
        url = f"{self.base_url}/models"
        try:
            response, _, _ = self._exchange("GET", url, None, unlisted=_NO_MODEL_LIST)
        except ChatError as exc:
            if exc.kind.startswith("HTTP"):
                raise
            raise ChatError(f"no answer from the model server at {self.base_url} ({exc}); "
                            "is it running, and is base_url right?", kind=exc.kind) from None
        if response.status_code in _NO_MODEL_LIST:
            return None
        try:
            data = response.json()
            ids = tuple(str(item["id"]) for item in data["data"])
        except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError) as exc:
            raise ChatError(f"GET {url}: HTTP {response.status_code}: not an OpenAI model list "
                            f"({type(exc).__name__}: {exc}): {self._snippet(response.text)}",
                            kind="bad answer") from None
        return ids

    def check_model(self) -> None:
        """Refuse a ``model`` the server does not list, naming the ones it does; the first
        call asks the server, later ones return at once. A server without a model list is
        not checked (its first chat request will say whether the model exists).

        A server that loads models on request lists only those it holds, so the refusal says
        how to reach one: ``transformers serve`` without a pinned model lists its cache and
        what it has loaded, not the model a request would make it load.

        Raises:
            ChatError: as :meth:`served_models` does.
            BackendError: the server lists models and ``model`` is not one of them.
        """
        with self._check_lock:
            if self._model_checked:
                return
            served = self.served_models()
            if served is not None and self.model not in served:
                listed = ", ".join(repr(m) for m in served[:20]) or "(none)"
                more = f" and {len(served) - 20} more" if len(served) > 20 else ""
                raise BackendError(
                    f"the model server at {self.base_url} does not serve model "
                    f"{self.model!r}; it serves {listed}{more} (GET {self.base_url}/models). "
                    "Set model: to one of these ids exactly; a server that loads models on "
                    "request (`transformers serve` started without a model) lists only those "
                    "it has cached or loaded: start it with the model, or set "
                    "check_model: false")
            self._model_checked = True

    def _exchange(self, method: Literal["GET", "POST"], url: str, body: bytes | None, *,
                  unlisted: frozenset[int] = frozenset()) -> tuple[httpx.Response, int, float]:
        """The response (2xx, or a status in ``unlisted``), the attempts it took and the
        latency of the successful one, retrying transient failures.

        Raises:
            ChatError: on a non-retryable failure, or when every try failed.
        """
        attempt = 0
        while True:
            attempt += 1
            started = time.monotonic()
            outcome = self._send(method, url, body, unlisted=unlisted)
            if isinstance(outcome, httpx.Response):
                return outcome, attempt, time.monotonic() - started
            if not outcome.retryable:
                raise ChatError(f"{method} {url}: {outcome.message}", kind=outcome.kind)
            if attempt > self.max_retries:
                raise ChatError(f"{method} {url}: gave up after {attempt} attempts; "
                                f"last: {outcome.message}", kind=outcome.kind)
            time.sleep(self._delay_s(attempt, outcome.retry_after_s))

    def _send(self, method: str, url: str, body: bytes | None, *,
              unlisted: frozenset[int]) -> httpx.Response | _Failure:
        """One try: the response, or why it failed and whether another try may help."""
        try:
            # A client per request: no connection pool is shared between threads.
            with httpx.Client(timeout=self.timeout_s, verify=self._ssl_context) as client:
                response = client.request(method, url, content=body,
                                          headers=dict(self._headers))
        except httpx.TimeoutException as exc:
            return _Failure(f"timed out after {self.timeout_s:g} s ({type(exc).__name__})",
                            "timeout", True)
        except (httpx.NetworkError, httpx.RemoteProtocolError) as exc:
            name = type(exc).__name__
            return _Failure(f"{name}: {self._snippet(str(exc))}", name, True)
        except httpx.HTTPError as exc:
            name = type(exc).__name__
            return _Failure(f"{name}: {self._snippet(str(exc))}", name, False)
        if response.is_success or response.status_code in unlisted:
            return response
        status = response.status_code
        message = f"HTTP {status}: {self._snippet(response.text)}"
        if status in RETRY_STATUSES:
            return _Failure(message, f"HTTP {status}", True, _retry_after_s(response))
        return _Failure(message, f"HTTP {status}", False)

    def _delay_s(self, attempt: int, retry_after_s: float | None) -> float:
        """Seconds to wait before try ``attempt + 1``; the server's wish wins, within the cap."""
        if retry_after_s is not None:
            return min(retry_after_s, self.retry_after_cap_s)
        return min(self.backoff_s * 2.0 ** (attempt - 1), self.max_backoff_s)

    def _parse(self, response: httpx.Response, *, attempts: int,
               latency_s: float) -> ChatResponse:
        """The answer in a 2xx response; a server that answers nonsense is not retried."""
        where = f"POST {self.url}: HTTP {response.status_code}"
        try:
            data = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ChatError(f"{where}: response is not JSON ({exc}): "
                            f"{self._snippet(response.text)}", kind="bad answer") from exc
        try:
            text, finish = _content(data, where=where, snippet=self._snippet(response.text))
        except BackendError as exc:
            raise ChatError(str(exc), kind="bad answer") from None
        fingerprint = data.get("system_fingerprint")
        fingerprint = fingerprint if isinstance(fingerprint, str) and fingerprint else None
        usage = data.get("usage")
        model = data.get("model")
        return ChatResponse(
            text=text, model=model if isinstance(model, str) and model else self.model,
            usage=dict(usage) if isinstance(usage, dict) else {}, latency_s=latency_s,
            attempts=attempts, finish_reason=finish, system_fingerprint=fingerprint,
            version=f"{self.version}+{fingerprint}" if fingerprint else self.version)

    def _snippet(self, text: str) -> str:
        """The start of a body or error text on one line, with any secret blanked out."""
        for secret in self._secrets:
            text = text.replace(secret, "[redacted]")
        flat = " ".join(text.split())
        return flat if len(flat) <= _SNIPPET_CHARS else flat[:_SNIPPET_CHARS] + "…"


def _content(data: object, *, where: str, snippet: str) -> tuple[str, str | None]:
    """``choices[0].message.content`` and ``finish_reason``, or an error naming what is missing.

    Raises:
        BackendError: when the body has no ``choices[0]``, or its content is not text.
    """
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise BackendError(f"{where}: response has no choices[0]: {snippet}")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise BackendError(f"{where}: response has no choices[0].message: {snippet}")
    content = message.get("content")
    if not isinstance(content, str):
        got = "missing" if "content" not in message else f"a {type(content).__name__}"
        refusal = message.get("refusal")
        why = f" (refusal: {refusal!r})" if isinstance(refusal, str) and refusal else ""
        raise BackendError(f"{where}: choices[0].message.content is {got}, not a string"
                           f"{why}: {snippet}")
    finish = choices[0].get("finish_reason")
    return content, finish if isinstance(finish, str) else None


def _check_numbers(*, timeout_s: float, max_retries: int, backoff_s: float, max_backoff_s: float,
                   retry_after_cap_s: float, temperature: float, max_tokens: int) -> None:
    """Reject configuration numbers no server would accept, before any request is sent."""
    checks = {f"{timeout_s = } must be > 0": timeout_s > 0,
              f"{max_retries = } must be >= 0": max_retries >= 0,
              f"{backoff_s = } must be >= 0": backoff_s >= 0,
              f"{max_backoff_s = } must be >= 0": max_backoff_s >= 0,
              f"{retry_after_cap_s = } must be >= 0": retry_after_cap_s >= 0,
              f"{temperature = } must be in 0..2": 0 <= temperature <= 2,
              f"{max_tokens = } must be >= 1": max_tokens >= 1}
    for message, ok in checks.items():
        if not ok:
            raise BackendError(message)
