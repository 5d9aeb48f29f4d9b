"""The models the looking verifier sees with, built on first use, and per-frame caches.

:class:`Eyes` gives :mod:`.confirm`'s rules their callables: SSD detections at
:data:`~.confirm.REDETECT_SCALE` (cached per frame, since one scene serves as a negative of
many montages), ImageNet probabilities of a crop,
MoveNet keypoint scores of a crop, and the COCO → ImageNet class indices. Nothing is loaded
until a rule asks for it: a verifier that fails every question on its tables never loads a
model. Frames are cached by ``(scene id, t_s, image shape)``, so the same scene time must
always carry the same picture (what
:class:`~needleforge.nemo.video_keyframes.VideoKeyframes` gives).
Not thread-safe.

**Looking ahead.** :meth:`Eyes.look_ahead` has the SSD x1.5 detections of frames a verdict
will need computed on worker threads (each with its own detector, configured as this one),
while the caller does other work; :meth:`Eyes.detections` then takes a frame's result from
its job instead of running the model, but only when the frame it is asked about is the very
picture the job looked at (same array, or equal pixels), so a verdict sees exactly the
detections it would have computed itself. A job that failed raises there, as the model would
have; one that was cancelled (the caller's workers closed) is computed here.
"""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Protocol, TypeVar, get_args

import numpy as np
import numpy.typing as npt

from needleforge.backends.base import FloatArray, Keyframe, RGBImage
from needleforge.backends.embedded import confirm as c
from needleforge.backends.embedded.crop_classes import crop_class_indices
from needleforge.backends.embedded.detector import EmbeddedDetector
from needleforge.backends.embedded.labels import IMAGENET_COARSE
from needleforge.backends.embedded.model_files import (
    OPENPIBO_DISTRIBUTION,
    OPENPIBO_PACKAGE,
    require_file,
    resolve_models_dir,
)
from needleforge.backends.embedded.pose import EmbeddedPose
from needleforge.backends.embedded.ssd_runtime import Precision
from needleforge.backends.embedded.tagger import LABELS_FILE, EmbeddedTagger
from needleforge.errors import BackendError
from needleforge.records import Detection
from needleforge.records.phrases import holds, is_person, normalize

_K = TypeVar("_K")
_V = TypeVar("_V")
_M = TypeVar("_M")
_R = TypeVar("_R")
_FrameKey = tuple[str, float, tuple[int, ...]]


class Submit(Protocol):
    """Runs ``job(model)`` on a worker thread, ``model`` being that thread's own ``make()``
    (made once per thread and ``make``); e.g. ``needleforge.nemo.ahead.Workers.submit``."""

    def __call__(self, make: Callable[[], _M], job: Callable[[_M], _R], /) -> Future[_R]:
        ...


class Eyes:
    """The embedded models as :mod:`.confirm` callables (module docstring).

    Args:
        models_dir, num_threads: passed to every model.
        cache: frames whose detections and tags are kept (least recently added dropped).
        min_score: the lowest detection score any rule will ask about.
        precision: the SSD's (``"f32"`` or ``"int8"``; checked when the detector is built).
    """

    def __init__(self, *, models_dir: Path | str | None = None, num_threads: int = 2,
                 cache: int = 4096, min_score: float = c.REDETECT_MIN_SCORE,
                 precision: Precision = "f32") -> None:
        self._models_dir, self._threads, self._cache_size = models_dir, num_threads, cache
        if precision not in get_args(Precision):  # found now, not at the first detection
            raise BackendError(f"precision = {precision!r} must be one of "
                               f"{', '.join(get_args(Precision))}")
        self._min_score, self._precision = min_score, precision
        self._detector: EmbeddedDetector | None = None
        self._tagger: EmbeddedTagger | None = None
        self._pose: EmbeddedPose | None = None
        self._indices: dict[str, npt.NDArray[np.intp]] | None = None
        self._vocabulary: tuple[str, ...] | None = None
        self._found: OrderedDict[_FrameKey, list[Detection]] = OrderedDict()
        self._ahead: dict[_FrameKey, tuple[RGBImage, Future[list[Detection]]]] = {}

    def _tagger_model(self) -> EmbeddedTagger:
        if self._tagger is None:
            self._tagger = EmbeddedTagger(num_threads=self._threads,
                                          models_dir=self._models_dir)
        return self._tagger

    @property
    def indices(self) -> dict[str, npt.NDArray[np.intp]]:
        """COCO label → its ImageNet class indices (read from the tagger's label file)."""
        if self._indices is None:
            folder = resolve_models_dir(self._models_dir, package=OPENPIBO_PACKAGE,
                                        distribution=OPENPIBO_DISTRIBUTION)
            path = require_file(folder / LABELS_FILE, distribution=OPENPIBO_DISTRIBUTION)
            lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
            self._indices = crop_class_indices(lines)
        return self._indices

    def names(self, term: str) -> bool:
        """True when the tagger can give ``term`` (or a tag containing it)."""
        if self._vocabulary is None:
            self._vocabulary = (*(normalize(t) for t in self._tagger_model().class_tags),
                                *IMAGENET_COARSE)
        return holds(self._vocabulary, term)

    def probabilities(self, image: RGBImage) -> FloatArray:
        return self._tagger_model().probabilities(image)

    def _pose_model(self) -> EmbeddedPose:
        if self._pose is None:
            self._pose = EmbeddedPose(num_threads=self._threads, models_dir=self._models_dir)
        return self._pose

    def keypoints(self, image: RGBImage) -> FloatArray:
        """The 17 keypoint scores of the most prominent person in ``image``."""
        return self._pose_model().keypoint_scores(image)

    def pose_points(self, image: RGBImage) -> FloatArray:
        """The 17 keypoints, ``(y, x, score)`` in ``image``'s own normalised coordinates."""
        return self._pose_model().keypoints(image)

    def shows_pose(self, frame: Keyframe, found: Detection) -> bool:
        """A person box passes only with a pose in it; other labels always pass."""
        if not is_person(found.label):
            return True
        count = c.pose_count(frame, found.box, keypoints=self.keypoints)
        return count is not None and count >= c.POSE_MIN_KEYPOINTS

    def detections(self, scene_id: str) -> Callable[[Keyframe], list[Detection]]:
        """Per-frame SSD x1.5 detections of ``scene_id``'s keyframes, cached by frame time
        (taken from a :meth:`look_ahead` job when one looked at this very picture)."""
        def detect(frame: Keyframe) -> list[Detection]:
            key = (scene_id, frame.t_s, frame.image.shape)
            if key not in self._found:
                ahead = self._ahead.pop(key, None)
                if ahead is not None and not ahead[1].cancelled() and (
                        ahead[0] is frame.image or np.array_equal(ahead[0], frame.image)):
                    found = ahead[1].result()
                else:
                    found = self._model().detect(frame.image, t_s=frame.t_s)
                self._remember(self._found, key, found)
            return self._found[key]
        return detect

    def look_ahead(self, scene_id: str, frames: Sequence[Keyframe], submit: Submit) -> int:
        """Queue the detections of ``frames`` (those neither cached nor queued) on worker
        threads through ``submit``; returns how many were queued (module docstring)."""
        queued = 0
        for frame in frames:
            key = (scene_id, frame.t_s, frame.image.shape)
            if key in self._found or key in self._ahead:
                continue
            self._ahead[key] = (frame.image, submit(
                self._worker_model, operator.methodcaller("detect", frame.image, t_s=frame.t_s)))
            queued += 1
        return queued

    def drop_ahead(self) -> int:
        """Forget queued detections never asked for (their jobs are not stopped: close the
        workers first); returns how many there were."""
        dropped = len(self._ahead)
        self._ahead.clear()
        return dropped

    def _model(self) -> EmbeddedDetector:
        if self._detector is None:
            self._detector = self._new_detector(self._threads)
        return self._detector

    def _worker_model(self) -> EmbeddedDetector:
        """A worker thread's own detector (one thread: the workers are the parallelism)."""
        return self._new_detector(1)

    def _new_detector(self, threads: int) -> EmbeddedDetector:
        # all six feature maps upscaled: the redetect thresholds were measured that way
        return EmbeddedDetector(score_threshold=self._min_score, num_threads=threads,
                                models_dir=self._models_dir, input_scale=c.REDETECT_SCALE,
                                coarse_maps="upscaled", precision=self._precision)

    def _remember(self, cache: OrderedDict[_K, _V], key: _K, value: _V) -> None:
        cache[key] = value
        if len(cache) > self._cache_size:
            cache.popitem(last=False)
