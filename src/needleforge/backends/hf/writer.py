"""Question writer and verifier on a local image-text-to-text model (``hf_vlm``).

The same prompts and failure rules as ``openai_http``
(:mod:`~needleforge.backends.writer_prompts`, :mod:`~needleforge.backends.model_writer`),
asked through :meth:`~.vlm.HfVlmTagger.ask`, which takes one image: the describer shows one
keyframe of the target with the object's box drawn on it, the verifier one keyframe per clip
(the middle one of those available). Decoding is greedy, so a folder and its inputs always
give the same questions and verdicts.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from needleforge.backends.base import Keyframe, RGBImage
from needleforge.backends.hf.model_dir import DType
from needleforge.backends.model_writer import Ask, ModelDescriber, ModelVerifier
from needleforge.backends.writer_prompts import PROMPT_REVISION, PROMPTS_VERSION
from needleforge.errors import BackendError
from needleforge.params import DEFAULT_ABSTRACT_LABELS


class VlmAsker(Protocol):
    """What the writers need of a local VLM (:class:`~.vlm.HfVlmTagger` has it)."""

    @property
    def name(self) -> str: ...

    @property
    def version(self) -> str: ...

    def ask(self, image: RGBImage, *, prompt: str, max_new_tokens: int | None = None) -> str: ...


def _vlm_ask(vlm: VlmAsker, *, max_new_tokens: int) -> Ask:
    """An :data:`~needleforge.backends.model_writer.Ask` showing the middle frame of those
    chosen."""
    if max_new_tokens < 1:
        raise BackendError(f"max_new_tokens = {max_new_tokens} must be >= 1")

    def ask(frames: Sequence[Keyframe], prompt: str) -> str:
        if not frames:
            raise BackendError("no frame to show the model")
        return vlm.ask(frames[len(frames) // 2].image, prompt=prompt,
                       max_new_tokens=max_new_tokens)

    return ask


def _load(model_dir: Path | str, *, device: str, dtype: DType) -> VlmAsker:
    from needleforge.backends.hf.vlm import HfVlmTagger  # loads transformers when built

    return HfVlmTagger(model_dir, device=device, dtype=dtype)


def _template_id(vlm: VlmAsker) -> str:
    return f"hf/{vlm.name.removeprefix('hf-')}/{PROMPT_REVISION}"


def describer_from_vlm(
    vlm: VlmAsker, *, max_new_tokens: int = 200, max_gap_s: float = 1.0,
    abstract_labels: Sequence[str] = DEFAULT_ABSTRACT_LABELS,
) -> ModelDescriber:
    """A describer on an already loaded VLM (what :class:`HfDescriber` builds on).

    Raises:
        BackendError: ``max_new_tokens < 1`` or a negative ``max_gap_s``.
    """
    return ModelDescriber(_vlm_ask(vlm, max_new_tokens=max_new_tokens), name=vlm.name,
                          version=f"{vlm.version}+prompts-{PROMPTS_VERSION}",
                          template_id=_template_id(vlm), max_frames=1, max_gap_s=max_gap_s,
                          abstract_labels=abstract_labels)


def verifier_from_vlm(
    vlm: VlmAsker, *, max_new_tokens: int = 120, max_gap_s: float = 1.0
) -> ModelVerifier:
    """A verifier on an already loaded VLM (what :class:`HfVerifier` builds on).

    Raises:
        BackendError: ``max_new_tokens < 1`` or a negative ``max_gap_s``.
    """
    return ModelVerifier(_vlm_ask(vlm, max_new_tokens=max_new_tokens), name=vlm.name,
                         version=f"{vlm.version}+prompts-{PROMPTS_VERSION}", max_frames=1,
                         max_gap_s=max_gap_s)


class HfDescriber(ModelDescriber):
    """Writes needles with the image-text-to-text model in ``model_dir``.

    Args:
        model_dir: a ``save_pretrained`` folder, as for the ``hf_vlm`` tagger.
        max_new_tokens: longest answer; the JSON object needs room (default 200).
        device, dtype: as :class:`~.vlm.HfVlmTagger`.
        max_gap_s: a keyframe shows the object when one of its boxes is this close in time.
        abstract_labels: object labels skipped without asking the model.
        give_up_after: stop the stage when this many first calls all fail alike (answers
            with no JSON object in them, say); 0 never stops.

    Raises:
        BackendError: as :class:`~.vlm.HfVlmTagger` (missing folder, files, bad device).
    """

    def __init__(
        self, model_dir: Path | str, *, max_new_tokens: int = 200, device: str = "cpu",
        dtype: DType = "auto", max_gap_s: float = 1.0,
        abstract_labels: Sequence[str] = DEFAULT_ABSTRACT_LABELS, seed: int = 0,
        give_up_after: int = 3,
    ) -> None:
        vlm = _load(model_dir, device=device, dtype=dtype)
        super().__init__(_vlm_ask(vlm, max_new_tokens=max_new_tokens), name=vlm.name,
                         version=f"{vlm.version}+prompts-{PROMPTS_VERSION}",
                         template_id=_template_id(vlm), max_frames=1, max_gap_s=max_gap_s,
                         abstract_labels=abstract_labels, seed=seed,
                         give_up_after=give_up_after)


class HfVerifier(ModelVerifier):
    """Verifies needles with the model in ``model_dir``, one keyframe per clip.

    Options as :class:`HfDescriber` (without ``abstract_labels``; ``max_new_tokens`` 120).

    Raises:
        BackendError: as :class:`~.vlm.HfVlmTagger`.
    """

    def __init__(
        self, model_dir: Path | str, *, max_new_tokens: int = 120, device: str = "cpu",
        dtype: DType = "auto", max_gap_s: float = 1.0, give_up_after: int = 3,
    ) -> None:
        vlm = _load(model_dir, device=device, dtype=dtype)
        super().__init__(_vlm_ask(vlm, max_new_tokens=max_new_tokens), name=vlm.name,
                         version=f"{vlm.version}+prompts-{PROMPTS_VERSION}", max_frames=1,
                         max_gap_s=max_gap_s, give_up_after=give_up_after)
