"""Models under evaluation: the :class:`VideoLLM` protocol and the model-backed adapters.

A model answers one question at a time from sampled frames (:mod:`.frame_sampling`) and returns raw
text; the scorer parses it (:mod:`.parse`). The prompt wording is ours (:mod:`.prompts`), so two
models differ only in the model. Baselines that need no model server live in :mod:`.baselines`.

- :class:`OpenAIVideoLLM` talks to any OpenAI-compatible chat-completions server through
  :class:`~needleforge.backends.openai.client.ChatClient`, in the ``video_first`` or
  ``interleaved`` prompt style (retries and backoff are the client's).
- :class:`HfVideoLLM` runs a local transformers image-text-to-text model through
  :class:`~needleforge.backends.hf.vlm.HfVlmTagger`, which takes *one* image: the frames are
  tiled into one grid image (row by row, at most ``grid_frames`` of them, evenly spread) and the
  prompt lists each tile's time, so a single-image model can still place events in time.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from needleforge.backends.base import RGBImage
from needleforge.backends.openai.client import ChatClient, PromptStyle, TimedFrame, video_messages
from needleforge.errors import BackendError
from needleforge.evaluate.prompts import AnswerKind, render_prompt

if TYPE_CHECKING:
    from needleforge.backends.hf.vlm import HfVlmTagger


@runtime_checkable
class VideoLLM(Protocol):
    """Anything that answers a question about a video from its sampled frames.

    ``name`` and ``version`` go into the predictions' metadata; ``prompt_style`` says how the
    frames were shown (``video_first``, ``interleaved``, or a baseline's own word).
    Implementations must be safe to call from several threads at once. An optional
    ``needs_pixels = False`` class attribute says the model reads only the frame times, so
    :func:`~.run.run_model` hands it placeholder images instead of decoding the video.
    """

    name: str
    version: str
    prompt_style: str

    def answer(self, frames: Sequence[TimedFrame], question_text: str, *, kind: AnswerKind,
               options: Sequence[str] | None = None) -> str:
        """The model's raw answer to ``question_text`` about ``frames``."""
        ...


class OpenAIVideoLLM:
    """A model behind an OpenAI-compatible server (vLLM, SGLang, Ollama, a hosted API).

    Args:
        base_url: e.g. ``http://127.0.0.1:8000/v1``.
        model: the served model name.
        style: ``video_first`` (frames, then the question) or ``interleaved`` (each frame after
            its ``[t s]`` timestamp).
        max_side: frames are downscaled so their longer side is at most this (image tokens).
        system: an optional system message.
        client_options: passed to :class:`ChatClient` (``timeout_s``, ``max_retries``,
            ``api_key``, ``max_tokens`` …).

    Raises:
        BackendError: a bad URL, model name or option (from :class:`ChatClient`), or style.
    """

    def __init__(self, base_url: str, *, model: str, style: PromptStyle = "video_first",
                 max_side: int | None = 768, system: str | None = None,
                 **client_options: object) -> None:
        if style not in ("video_first", "interleaved"):
            raise BackendError(f"prompt {style = } must be 'video_first' or 'interleaved'")
        self.client = ChatClient(base_url, model=model, **client_options)  # type: ignore[arg-type]
        self.name = f"openai_http:{model}"
        self.version = self.client.model
        self.prompt_style: str = style
        self._style: PromptStyle = style
        self.max_side = max_side
        self.system = system

    def answer(self, frames: Sequence[TimedFrame], question_text: str, *, kind: AnswerKind,
               options: Sequence[str] | None = None) -> str:
        """Send the frames and our prompt; the reply's text.

        Raises:
            BackendError: the request failed after every retry, or the frames are unusable.
            EvaluationError: a malformed question (see :func:`render_prompt`).
        """
        prompt = render_prompt(question_text, kind=kind, options=options)
        messages = video_messages(frames, prompt, style=self._style, system=self.system,
                                  max_side=self.max_side)
        reply = self.client.chat(messages)
        if reply.version:
            self.version = reply.version  # the server's build, once it tells us
        return reply.text


def tile_frames(frames: Sequence[TimedFrame], *, max_tiles: int = 4,
                tile_side: int = 336) -> tuple[RGBImage, list[float]]:
    """One grid image of at most ``max_tiles`` evenly spread frames, and their times.

    Tiles fill rows left to right, top to bottom, in a ``ceil(sqrt(n))``-wide grid; each frame
    is fitted (nearest-neighbour) into a ``tile_side`` square cell, unused cells stay black.

    Raises:
        BackendError: no frames, or ``max_tiles`` / ``tile_side`` < 1.
    """
    if not frames:
        raise BackendError("tiling needs at least one frame")
    if max_tiles < 1 or tile_side < 1:
        raise BackendError(f"{max_tiles = } and {tile_side = } must be >= 1")
    picks = np.linspace(0, len(frames) - 1, min(max_tiles, len(frames))).round().astype(int)
    chosen = [frames[int(i)] for i in dict.fromkeys(picks.tolist())]
    cols = math.ceil(math.sqrt(len(chosen)))
    rows = math.ceil(len(chosen) / cols)
    grid = np.zeros((rows * tile_side, cols * tile_side, 3), dtype=np.uint8)
    for index, (_, image) in enumerate(chosen):
        height, width = image.shape[:2]
        scale = tile_side / max(height, width)
        new_h, new_w = max(1, int(height * scale)), max(1, int(width * scale))
        ys = (np.arange(new_h) / scale).astype(int).clip(0, height - 1)
        xs = (np.arange(new_w) / scale).astype(int).clip(0, width - 1)
        row, col = divmod(index, cols)
        grid[row * tile_side:row * tile_side + new_h,
             col * tile_side:col * tile_side + new_w] = image[ys][:, xs]
    return grid, [t for t, _ in chosen]


class HfVideoLLM:
    """A local transformers VLM folder (Qwen2-VL / SmolVLM style) answering from a frame grid.

    The wrapped :class:`HfVlmTagger` takes one image, so frames are tiled (:func:`tile_frames`)
    and the prompt names the time of each tile. Weak at grounding by construction: at most
    ``grid_frames`` instants are seen.

    Raises:
        BackendError: the folder is not a loadable image-text-to-text model (see
            :class:`HfVlmTagger`).
    """

    prompt_style: str = "grid"

    def __init__(self, model_dir: Path | str, *, grid_frames: int = 4, tile_side: int = 336,
                 max_new_tokens: int = 64, device: str = "cpu",
                 tagger: HfVlmTagger | None = None) -> None:
        if tagger is None:
            from needleforge.backends.hf.vlm import HfVlmTagger

            tagger = HfVlmTagger(model_dir, max_new_tokens=max_new_tokens, device=device)
        self.tagger = tagger
        self.grid_frames, self.tile_side = grid_frames, tile_side
        self.name = f"hf:{tagger.name}"
        self.version: str = tagger.version

    def answer(self, frames: Sequence[TimedFrame], question_text: str, *, kind: AnswerKind,
               options: Sequence[str] | None = None) -> str:
        """Ask the model about the frame grid.

        Raises:
            BackendError: no frames, or the model cannot take the image.
            EvaluationError: a malformed question (see :func:`render_prompt`).
        """
        grid, times = tile_frames(frames, max_tiles=self.grid_frames, tile_side=self.tile_side)
        where = ", ".join(f"{t:.1f} s" for t in times)
        lead = (f"The image is a grid of {len(times)} frames of one video, left to right and "
                f"top to bottom, taken at {where}.")
        prompt = f"{lead}\n{render_prompt(question_text, kind=kind, options=options)}"
        return self.tagger.ask(grid, prompt=prompt)
