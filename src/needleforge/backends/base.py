"""Backend protocols: one family per model role, one required method each.

Stages depend on these protocols, never on a concrete model, so that params.yaml can swap the
embedded CPU models for heavier ones without touching stage code. Every backend also exposes
``name`` and ``version`` so each row a stage writes can record which model made it.

Images are ``uint8`` arrays of shape ``(H, W, 3)`` in **RGB** order (what PyAV and Pillow give);
backends that need BGR (OpenCV, RapidOCR) convert internally.

Backend objects hold model runtimes with per-call state (a TFLite interpreter, a ``cv2.dnn``
net) and are not thread-safe: build one per worker thread or process, not one per frame.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from typing import Protocol, TypeAlias, TypeVar, runtime_checkable

import numpy as np
import numpy.typing as npt

from needleforge.errors import BackendError
from needleforge.media.decode import RGBImage as RGBImage
from needleforge.records import Detection, TagScore

#: Scores, probabilities, keypoints: float64 arrays.
FloatArray: TypeAlias = npt.NDArray[np.float64]
_Value = TypeVar("_Value", bound=np.generic)


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class Keyframe:
    """A decoded frame at ``t_s`` seconds from the video start; ``image`` is RGB uint8 HxWx3.

    The one keyframe type of every stage and backend. ``scene_id`` names the scene the frame
    was decoded for where a stream of frames runs across scenes (the representation stage's
    sequential sampler, :func:`~needleforge.scenes.keyframes.sample_keyframes`); it is empty
    where the caller holds the scene already (the frames of a writer's or verifier's view,
    :class:`~needleforge.nemo.video_keyframes.VideoKeyframes`).

    Compared by identity: arrays have no useful ``==``.
    """

    t_s: float
    image: RGBImage
    scene_id: str = ""

    def __post_init__(self) -> None:
        if not (math.isfinite(self.t_s) and self.t_s >= 0):
            named = f"{self.scene_id}: " if self.scene_id else "keyframe "
            raise ValueError(f"{named}t_s = {self.t_s!r} must be finite and >= 0")
        where = self.scene_id or f"keyframe at {self.t_s} s"
        image = self.image
        if not isinstance(image, np.ndarray):
            raise ValueError(f"{where}: image must be a numpy array, got "
                             f"{type(image).__name__}")
        if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
            raise ValueError(f"{where}: image must be uint8 HxWx3, got "
                             f"{image.dtype} {image.shape}")


@runtime_checkable
class Tagger(Protocol):
    """Gives an image a ranked list of tags (scene or object words) with confidences."""

    @property
    def name(self) -> str:
        """Stable model name recorded with every tag (e.g. ``embedded-efficientnet-lite3``)."""
        ...

    @property
    def version(self) -> str:
        """Package version plus a model-file hash prefix, so results are traceable."""
        ...

    def tag(self, image: RGBImage) -> list[TagScore]:
        """Tags for ``image``, best first; an empty list when nothing is confident enough."""
        ...


@runtime_checkable
class Detector(Protocol):
    """Finds labelled boxes on one keyframe."""

    @property
    def name(self) -> str:
        """Stable model name recorded with every detection."""
        ...

    @property
    def version(self) -> str:
        """Package version plus a model-file hash prefix."""
        ...

    def detect(self, image: RGBImage, *, t_s: float) -> list[Detection]:
        """Detections on the keyframe at ``t_s`` seconds, best first."""
        ...


@runtime_checkable
class TextReader(Protocol):
    """Reads the text visible in an image (OCR), e.g. burnt-in captions or signs."""

    @property
    def name(self) -> str:
        """Stable model name recorded with every text line."""
        ...

    @property
    def version(self) -> str:
        """Package version plus a model-file hash prefix."""
        ...

    def read(self, image: RGBImage) -> list[str]:
        """Text lines in reading order (top to bottom, then left to right)."""
        ...


def channel_max(pixels: npt.NDArray[_Value]) -> npt.NDArray[_Value]:
    """``max(R, G, B)`` per pixel of an array whose last axis holds three channels, channel
    by channel: numpy's ``max(axis=-1)`` over three values is ~10x slower, and this is most
    of represent's colour measures (docs/performance.md, session 25)."""
    high: npt.NDArray[_Value] = np.maximum(np.maximum(pixels[..., 0], pixels[..., 1]),
                                           pixels[..., 2])
    return high


def channel_min(pixels: npt.NDArray[_Value]) -> npt.NDArray[_Value]:
    """``min(R, G, B)`` per pixel, as :func:`channel_max`."""
    low: npt.NDArray[_Value] = np.minimum(np.minimum(pixels[..., 0], pixels[..., 1]),
                                          pixels[..., 2])
    return low


def ensure_rgb(image: object) -> RGBImage:
    """Check that ``image`` is a non-empty ``uint8`` HxWx3 array and return it C-contiguous.

    Backends call this first so a wrong frame (grey, RGBA, float) fails with a message naming
    its shape and dtype instead of a cryptic error deep inside a model runtime.

    Raises:
        BackendError: when ``image`` is not a usable RGB frame.
    """
    if not isinstance(image, np.ndarray):
        raise BackendError(f"image must be a numpy array, got {type(image).__name__}")
    if image.ndim != 3 or image.shape[2] != 3 or image.shape[0] == 0 or image.shape[1] == 0:
        raise BackendError(f"image shape = {image.shape} must be (height, width, 3) RGB")
    if image.dtype != np.uint8:
        raise BackendError(f"image dtype = {image.dtype} must be uint8")
    return np.ascontiguousarray(image)


def tags_from_detections(detections: Iterable[Detection]) -> list[TagScore]:
    """Detector labels as tags (best score per label), best first.

    The embedded tagger's coarse tags use the detector's COCO names, so a scene's tags can be
    the union of ``tagger.tag(frame)`` and ``tags_from_detections(detector.detect(frame))``.
    """
    best: dict[str, float] = {}
    for det in detections:
        best[det.label] = max(best.get(det.label, 0.0), det.score)
    ranked = sorted(best.items(), key=lambda item: (-item[1], item[0]))
    return [TagScore(tag=label, score=score) for label, score in ranked]
