"""Question writer and verifier on any OpenAI-compatible chat endpoint (``openai_http``).

Each call sends the chosen keyframes of one clip as JPEG data URLs (the target object's box
drawn on copies of them for the describer and for the target clip of the verifier), in the
``video_first`` or ``interleaved`` layout of :func:`~.client.video_messages`, followed by
our prompt (:mod:`~needleforge.backends.writer_prompts`). Retries, timeouts and API keys are the
:class:`~.client.ChatClient`'s; what a failed or malformed answer turns into is
:mod:`~needleforge.backends.model_writer`'s (a Skip, or a failed verdict — never a pass).

Two checks keep a misconfigured server from passing for a run that merely found nothing:

* building a writer or verifier asks the server which models it serves
  (:meth:`~.client.ChatClient.check_model`, ``check_model: false`` to skip): a wrong
  ``model`` id or a dead server stops the stage before any work;
* when the first ``give_up_after`` calls (3 by default) all fail the same way (same HTTP
  status or transport error, or answers with no JSON object in them), the stage stops with
  :class:`~needleforge.backends.model_writer.EndpointFailure` instead of turning every
  remaining target into a skip and finishing with zero questions (the rule is
  :class:`~needleforge.backends.model_writer.FailureStreak`'s, shared with ``hf_vlm``).

Typical ``params.yaml``::

    nemo:
      describer: openai_http
      describer_options: {base_url: "http://127.0.0.1:8000/v1", model: Qwen/Qwen2.5-VL-7B}
      verifier: openai_http
      verifier_options: {base_url: "http://127.0.0.1:8000/v1", model: Qwen/Qwen2.5-VL-7B}
"""

from __future__ import annotations

from collections.abc import Sequence

from needleforge.backends.base import Keyframe
from needleforge.backends.model_writer import (
    Ask,
    EndpointFailure,
    FailureStreak,
    ModelDescriber,
    ModelVerifier,
)
from needleforge.backends.openai.client import ChatClient, PromptStyle, video_messages
from needleforge.backends.writer_prompts import PROMPT_REVISION, PROMPTS_VERSION
from needleforge.errors import BackendError
from needleforge.params import DEFAULT_ABSTRACT_LABELS

__all__ = ["EndpointFailure", "FailureStreak", "OpenAIDescriber", "OpenAIVerifier"]


def _chat_ask(client: ChatClient, *, style: PromptStyle, image_max_side: int) -> Ask:
    """An :data:`~needleforge.backends.model_writer.Ask` that sends frames + prompt as one
    user message."""
    if style not in ("video_first", "interleaved"):
        raise BackendError(f"prompt {style = } must be 'video_first' or 'interleaved'")
    if image_max_side < 16:
        raise BackendError(f"{image_max_side = } must be >= 16")
    def ask(frames: Sequence[Keyframe], prompt: str) -> str:
        messages = video_messages([(k.t_s, k.image) for k in frames], prompt, style=style,
                                  max_side=image_max_side)
        return client.chat(messages).text

    return ask


class OpenAIDescriber(ModelDescriber):
    """Writes needles with a chat model; options are the :class:`ChatClient`'s plus:

    Args:
        max_frames: keyframes shown per target (evenly spread; for object needles only those
            within ``max_gap_s`` of one of the object's boxes).
        style: ``video_first`` (frames, then the prompt) or ``interleaved`` (timestamps).
        image_max_side: frames are downscaled to this longer side before encoding.
        abstract_labels: object labels skipped without a call (the stage passes its list).
        check_model: ask the server (``GET /models``) whether it serves ``model`` before
            anything else; false for a server whose model list does not name its ids.
        give_up_after: stop the stage (:class:`EndpointFailure`) when this many first calls
            all fail the same way (an unparseable answer included); 0 never stops.

    Raises:
        BackendError: a bad URL, model name, style or number; with ``check_model``, a server
            that does not answer (the message names the URL) or does not serve ``model`` (the
            message lists the ids it serves).
    """

    def __init__(
        self, base_url: str, *, model: str, api_key: str | None = None,
        api_key_env: str | None = "OPENAI_API_KEY", timeout_s: float = 60.0,
        max_retries: int = 3, backoff_s: float = 1.0, max_backoff_s: float = 30.0,
        temperature: float = 0.0, max_tokens: int = 512, max_frames: int = 4,
        style: PromptStyle = "video_first", image_max_side: int = 768, max_gap_s: float = 1.0,
        abstract_labels: Sequence[str] = DEFAULT_ABSTRACT_LABELS, seed: int = 0,
        check_model: bool = True, give_up_after: int = 3,
    ) -> None:
        client = ChatClient(base_url, model=model, api_key=api_key, api_key_env=api_key_env,
                            timeout_s=timeout_s, max_retries=max_retries, backoff_s=backoff_s,
                            max_backoff_s=max_backoff_s, temperature=temperature,
                            max_tokens=max_tokens)
        super().__init__(
            _chat_ask(client, style=style, image_max_side=image_max_side), name=client.name,
            version=f"{client.version}+prompts-{PROMPTS_VERSION}",
            template_id=f"openai/{model}/{PROMPT_REVISION}", max_frames=max_frames,
            max_gap_s=max_gap_s, abstract_labels=abstract_labels, seed=seed,
            give_up_after=give_up_after)
        self.client = client
        if check_model:  # last: every option is checked before the server is asked
            client.check_model()


class OpenAIVerifier(ModelVerifier):
    """Verifies needles with a chat model, one request per clip (target, then negatives).

    Options as :class:`OpenAIDescriber` (without ``abstract_labels``). An HTTP failure that
    outlives the client's retries, a timeout or a malformed answer fails the verdict, unless
    the first ``give_up_after`` calls all failed alike (:class:`EndpointFailure`).

    Raises:
        BackendError: as :class:`OpenAIDescriber`.
    """

    def __init__(
        self, base_url: str, *, model: str, api_key: str | None = None,
        api_key_env: str | None = "OPENAI_API_KEY", timeout_s: float = 60.0,
        max_retries: int = 3, backoff_s: float = 1.0, max_backoff_s: float = 30.0,
        temperature: float = 0.0, max_tokens: int = 256, max_frames: int = 4,
        style: PromptStyle = "video_first", image_max_side: int = 768, max_gap_s: float = 1.0,
        check_model: bool = True, give_up_after: int = 3,
    ) -> None:
        client = ChatClient(base_url, model=model, api_key=api_key, api_key_env=api_key_env,
                            timeout_s=timeout_s, max_retries=max_retries, backoff_s=backoff_s,
                            max_backoff_s=max_backoff_s, temperature=temperature,
                            max_tokens=max_tokens)
        super().__init__(
            _chat_ask(client, style=style, image_max_side=image_max_side), name=client.name,
            version=f"{client.version}+prompts-{PROMPTS_VERSION}", max_frames=max_frames,
            max_gap_s=max_gap_s, give_up_after=give_up_after)
        self.client = client
        if check_model:
            client.check_model()
