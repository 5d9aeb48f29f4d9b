"""The negative check: look hard, for one label, at a scene the tables call free of it.

Why: the representation pass runs the detector once per keyframe on the whole frame at a
confident threshold, which is right for building tracks but blind to small or brief objects
(a 40-pixel cut-out shrinks under the detector's 300x300 input until nothing is proposed).
When such a scene becomes a negative of an object question about the same label, the
benchmark's answer leaves out a true appearance: a wrong answer key. Stage 2 therefore asks
this probe, for each negative candidate of an **object** target before it enters a montage,
"is there a ``label`` here after all?", and a scene where one is seen is passed over (the
next negative is drawn) rather than answered wrongly.

The probe looks harder than the representation pass in three ways: denser frames (one at most
every ``every_s`` seconds, so brief objects are sampled), tiled detection
(:mod:`~needleforge.nemo.tiles`, so small objects reach a detectable size), and a lower score
threshold (``min_score``), since a missed object costs a wrong answer while a false alarm
only costs one negative. Detections of every label are computed once per scene and cached,
so a scene serving as a negative of many montages is looked at once; the cost is paid only
for scenes that object montages would actually take. :func:`build_probe` builds it from the
``nemo`` params (``check_*``).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Protocol, runtime_checkable

from needleforge.backends.base import Detector
from needleforge.backends.registry import Registry
from needleforge.backends.writing import Keyframe
from needleforge.config import NemoParams
from needleforge.nemo.frames import VideoKeyframes
from needleforge.nemo.tiles import detect_tiled, tile_grid
from needleforge.records import Box, Scene, Video
from needleforge.records.phrases import holds, normalize

#: Frames decoded for a scene; same shape as generate's keyframe source.
FrameSource = Callable[[Scene], Sequence[Keyframe]]


@dataclasses.dataclass(frozen=True, slots=True)
class Sighting:
    """The best detection of ``label`` (normalized) the probe made in scene ``scene_id``."""

    scene_id: str
    label: str
    score: float
    t_s: float
    box: Box

    def describe(self) -> str:
        """One line for logs and skip reasons: what, where, how sure."""
        return (f"{self.label} at {self.t_s:.1f} s (score {self.score:.2f}, box "
                f"{self.box.w * 100:.0f}x{self.box.h * 100:.0f} % of the frame)")


@runtime_checkable
class NegativeProbe(Protocol):
    """Answers "does ``scene`` show a ``label`` after all?" for negative candidates."""

    def sighting(self, scene: Scene, label: str) -> Sighting | None:
        """The evidence that ``scene`` shows ``label``, or None when none was found."""
        ...


@dataclasses.dataclass(slots=True)
class ProbeCost:
    """What the probe spent: scenes looked at, frames, detector calls, seconds (wall)."""

    scenes: int = 0
    frames: int = 0
    detector_calls: int = 0
    seconds: float = 0.0


class TiledProbe:
    """:class:`NegativeProbe` by tiled detection on dense frames, cached per scene.

    Args:
        detector: any detector; its own threshold should be at or below ``min_score``.
        frames: decodes a scene's frames (e.g. :class:`VideoKeyframes` with ``every_s``).
        cols, rows, overlap: the tile grid (:func:`~needleforge.nemo.tiles.tile_grid`).
        min_score: a detection of the label at or above this score is a sighting.

    Raises:
        ValueError: a bad grid or ``min_score`` outside [0, 1].
    """

    def __init__(self, detector: Detector, frames: FrameSource, *, cols: int, rows: int,
                 overlap: float, min_score: float) -> None:
        tile_grid(64, 64, cols=cols, rows=rows, overlap=overlap)  # validates the grid
        if not 0.0 <= min_score <= 1.0:
            raise ValueError(f"min_score = {min_score!r} must be in [0, 1]")
        self._detector, self._frames = detector, frames
        self.cols, self.rows, self.overlap, self.min_score = cols, rows, overlap, min_score
        self._seen: dict[str, dict[str, Sighting]] = {}
        self.cost = ProbeCost()

    def sighting(self, scene: Scene, label: str) -> Sighting | None:
        """The best sighting of ``label`` (or of a label that holds it: ``tabby cat`` holds
        ``cat``) in ``scene``, or None.

        Raises:
            MediaError: the scene's video cannot be decoded (raised by the frame source).
            BackendError: the detector fails on a frame.
        """
        wanted = normalize(label)
        found = [s for name, s in self._labels_in(scene).items() if holds((name,), wanted)]
        return max(found, key=lambda s: s.score, default=None)

    def _labels_in(self, scene: Scene) -> Mapping[str, Sighting]:
        cached = self._seen.get(scene.scene_id)
        if cached is not None:
            return cached
        started = time.perf_counter()
        best: dict[str, Sighting] = {}
        frames = self._frames(scene)
        for frame in frames:
            for det in detect_tiled(self._detector, frame.image, t_s=frame.t_s, cols=self.cols,
                                    rows=self.rows, overlap=self.overlap):
                name = normalize(det.label)
                if det.score >= self.min_score and (name not in best
                                                    or det.score > best[name].score):
                    best[name] = Sighting(scene.scene_id, name, det.score, det.t_s, det.box)
        self.cost.scenes += 1
        self.cost.frames += len(frames)
        self.cost.detector_calls += len(frames) * self.cols * self.rows
        self.cost.seconds += time.perf_counter() - started
        self._seen[scene.scene_id] = best
        return best

    def close(self) -> None:
        """Close the frame source when it holds files open (a :class:`VideoKeyframes`)."""
        if isinstance(self._frames, VideoKeyframes):
            self._frames.close()

    def __enter__(self) -> TiledProbe:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def build_probe(
    params: NemoParams, *, videos: Sequence[Video], registry: Registry
) -> TiledProbe | None:
    """The negative check ``params`` ask for (``check_*``), or None when it is off.

    The detector is ``check_detector`` from ``registry`` with ``score_threshold =
    check_min_score`` and, when its factory takes it, ``input_scale = check_input_scale``
    (``check_detector_options`` override both); frames come from the videos' stored files, at
    most ``check_every_s`` apart and at most ``check_max_side`` pixels on their longer side.
    Use it as a context manager, or call ``close()``.

    Raises:
        BackendError: an unknown detector, bad options, or a missing model file.
    """
    if not params.check_negatives:
        return None
    options: dict[str, object] = {"score_threshold": params.check_min_score}
    if "input_scale" in registry.accepts("detector", params.check_detector):
        options["input_scale"] = params.check_input_scale
    detector = registry.create("detector", params.check_detector,
                               **(options | dict(params.check_detector_options)))
    frames = VideoKeyframes({v.video_id: v for v in videos}, per_scene=1,
                            every_s=params.check_every_s, max_side=params.check_max_side,
                            max_cached=1)
    return TiledProbe(detector, frames, cols=params.check_cols, rows=params.check_rows,
                      overlap=params.check_overlap, min_score=params.check_min_score)
