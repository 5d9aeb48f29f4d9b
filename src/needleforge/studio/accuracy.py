"""How accurate a representation is, scored against the studio's ground truth.

Why: the synthetic programs know every cut and which object is on screen where and when
(:mod:`.truth`), so the represent stage's shot detector, object detector and tracker can be
measured, not only timed. Three parts:

* :func:`load_truth` reads ``ground_truth.json`` (written by :mod:`.truth`) into frozen
  records, keeping what scoring needs (scenes, cuts, objects; not subtitles or assets).
* :func:`cut_accuracy` matches predicted cuts to true cuts one-to-one within
  ±``tolerance_frames``: candidate pairs are taken greedily by distance (in frames, to a
  thousandth); equal distances go to the earlier true cut, then the earlier prediction. A
  thousandth of a frame is added to the tolerance to absorb the 6-decimal rounding of stored
  times, so a cut exactly ``tolerance_frames`` away matches. With nothing to find recall is
  1; with nothing predicted precision is 1 (no false claims); F1 is 0 when both are 0.
* :func:`object_presence` asks, per true object, whether a track with the same label lies in
  a corresponding predicted scene (any predicted scene overlapping the true one, so missed or
  false cuts are tolerated) and overlaps the object in time ("found"); and, separately,
  whether one of that track's keyframe boxes inside the object's lifetime reaches IoU >=
  ``iou_threshold`` with the true box at that time ("localized"). Tracks span the closed
  keyframe interval ``[start_s, end_s]``, objects the half-open ``[start_s, end_s)``: a last
  hit at the object's first frame overlaps it, a first hit at its ``end_s`` does not. Not
  one-to-one: one track may find two same-label objects of a scene (only "localized" tells
  them apart). A track is correct (track precision) when it finds some true object.

"Featured" objects have ``mean_area_frac >= 0.05`` and ``visible_s >= 4`` (NeMo's target
rule); the others are "small" (small or brief). Rates over an empty group are 1.
"""

from __future__ import annotations

import bisect
import dataclasses
import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, TypeAlias

from needleforge.errors import StudioError
from needleforge.records import Box, ObjectTrack, Representation, Scene
from needleforge.studio.truth import VERSION

#: Normalized ``(x, y, w, h)`` with a top-left origin, as ``ground_truth.json`` stores boxes.
BoxXYWH: TypeAlias = tuple[float, float, float, float]
FEATURED_MIN_AREA_FRAC = 0.05
FEATURED_MIN_VISIBLE_S = 4.0
#: Slack on stored times (seconds) and frame distances (frames): both are rounded floats.
_TIME_EPS = 1e-6
_FRAME_EPS = 1e-3


@dataclasses.dataclass(frozen=True, slots=True)
class TruthScene:
    """One true shot, ``[start_s, end_s)``."""

    index: int
    start_s: float
    end_s: float


@dataclasses.dataclass(frozen=True, slots=True)
class TruthObject:
    """One cut-out on screen for ``[start_s, end_s)``, moving linearly (see :mod:`.truth`)."""

    object_id: str
    scene_index: int
    label: str
    start_s: float
    end_s: float
    visible_s: float
    box_start: BoxXYWH
    box_end: BoxXYWH
    mean_area_frac: float

    def __post_init__(self) -> None:
        if not self.end_s > self.start_s:
            raise ValueError(f"{self.object_id}: end_s = {self.end_s} <= start_s = {self.start_s}")

    @property
    def featured(self) -> bool:
        """Big and long enough to be a NeMo target (see the module docstring)."""
        return (self.mean_area_frac >= FEATURED_MIN_AREA_FRAC
                and self.visible_s >= FEATURED_MIN_VISIBLE_S - _TIME_EPS)

    def box_at(self, t_s: float) -> Box:
        """The true box at ``t_s`` (clamped to the lifetime), unrounded (<= 1 pixel off)."""
        u = min(max((t_s - self.start_s) / (self.end_s - self.start_s), 0.0), 1.0)
        x, y, w, h = (a + (b - a) * u for a, b in zip(self.box_start, self.box_end, strict=True))
        # Stored values are rounded to 6 decimals: keep x + w <= 1 for Box's own check.
        return Box(x=min(max(x, 0.0), 1.0 - w), y=min(max(y, 0.0), 1.0 - h), w=w, h=h)


@dataclasses.dataclass(frozen=True, slots=True)
class TruthVideo:
    """The truth of one synthetic video; ``path`` is relative to the ground-truth folder."""

    path: str
    program: str
    episode: int
    fps: float
    duration_s: float
    cuts_s: tuple[float, ...]
    scenes: tuple[TruthScene, ...]
    objects: tuple[TruthObject, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class StudioTruth:
    """A whole ``ground_truth.json``; ``root`` is its folder."""

    root: Path
    seed: int
    videos: tuple[TruthVideo, ...]

    def video_for(self, source_path: str | Path) -> TruthVideo:
        """The truth of the video file at ``source_path`` (compared after resolving).

        Raises :class:`StudioError` when the file is not one of this truth's videos (a real
        clip, or another corpus).
        """
        wanted = Path(source_path).resolve()
        for video in self.videos:
            if (self.root / video.path).resolve() == wanted:
                return video
        raise StudioError(f"{wanted} is not a synthetic video of {self.root}/ground_truth.json")


def load_truth(path: Path) -> StudioTruth:
    """Read a studio ``ground_truth.json``.

    Raises :class:`StudioError` naming the file (and the entry) when it is missing, not JSON,
    of another format version, or lacks a field or has one of the wrong type.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise StudioError(f"{path}: cannot read ground truth ({err.strerror or err})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise StudioError(f"{path}: not a UTF-8 JSON ground-truth file ({err})") from None
    version = data.get("version") if isinstance(data, dict) else None
    if version != VERSION:
        raise StudioError(f"{path}: ground-truth version {version!r}, expected {VERSION}")
    try:
        videos = tuple(_video(v, f"videos[{i}]") for i, v in enumerate(_get(data, "videos", list)))
        return StudioTruth(root=path.resolve().parent, seed=_get(data, "seed", int), videos=videos)
    except (KeyError, TypeError, ValueError) as err:
        raise StudioError(f"{path}: {err.args[0] if err.args else err}") from None


def _get(data: Any, key: str, kind: type | tuple[type, ...], where: str = "") -> Any:
    """``data[key]`` checked to be a ``kind`` (bools are not numbers); KeyError/TypeError."""
    if not isinstance(data, dict) or key not in data:
        raise KeyError(f"{where or 'top level'}: missing {key!r}")
    value = data[key]
    if isinstance(value, bool) or not isinstance(value, kind):
        raise TypeError(f"{where or 'top level'}.{key} = {value!r} has the wrong type")
    return value


def _box(data: Any, key: str, where: str) -> BoxXYWH:
    v = _get(data, key, list, where)
    if len(v) != 4 or not all(isinstance(x, int | float) for x in v):
        raise ValueError(f"{where}.{key} = {v!r} is not [x, y, w, h]")
    return float(v[0]), float(v[1]), float(v[2]), float(v[3])


def _video(data: Any, where: str) -> TruthVideo:
    num = (int, float)
    scenes = tuple(
        TruthScene(*(_get(s, key, kind, f"{where}.scenes[{k}]")
                     for key, kind in (("index", int), ("start_s", num), ("end_s", num))))
        for k, s in enumerate(_get(data, "scenes", list, where))
    )
    objects = []
    for k, o in enumerate(_get(data, "objects", list, where)):
        at = f"{where}.objects[{k}]"
        objects.append(TruthObject(
            object_id=_get(o, "object_id", str, at), scene_index=_get(o, "scene_index", int, at),
            label=_get(o, "label", str, at), start_s=float(_get(o, "start_s", num, at)),
            end_s=float(_get(o, "end_s", num, at)), visible_s=float(_get(o, "visible_s", num, at)),
            box_start=_box(o, "box_start", at), box_end=_box(o, "box_end", at),
            mean_area_frac=float(_get(o, "mean_area_frac", num, at)),
        ))
    return TruthVideo(
        path=_get(data, "path", str, where), program=_get(data, "program", str, where),
        episode=_get(data, "episode", int, where), fps=float(_get(data, "fps", num, where)),
        duration_s=float(_get(data, "duration_s", num, where)),
        cuts_s=tuple(float(c) for c in _get(data, "cuts_s", list, where)),
        scenes=scenes, objects=tuple(objects),
    )


def _rate(hits: int, total: int) -> float:
    return hits / total if total else 1.0


@dataclasses.dataclass(frozen=True, slots=True)
class CutScore:
    """Cut detection counts; ``matches`` pairs (true_s, predicted_s) in true-cut order."""

    tp: int
    fp: int
    fn: int
    matches: tuple[tuple[float, float], ...] = ()
    missed_s: tuple[float, ...] = ()
    spurious_s: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if min(self.tp, self.fp, self.fn) < 0:
            raise ValueError(f"counts tp={self.tp} fp={self.fp} fn={self.fn} must be >= 0")

    @property
    def precision(self) -> float:
        return _rate(self.tp, self.tp + self.fp)

    @property
    def recall(self) -> float:
        return _rate(self.tp, self.tp + self.fn)

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r > 0 else 0.0

    @classmethod
    def combine(cls, scores: Iterable[CutScore]) -> CutScore:
        """Pool several videos' scores (micro average: counts are summed)."""
        parts = list(scores)
        return cls(
            sum(s.tp for s in parts), sum(s.fp for s in parts), sum(s.fn for s in parts),
            tuple(m for s in parts for m in s.matches),
            tuple(m for s in parts for m in s.missed_s),
            tuple(m for s in parts for m in s.spurious_s),
        )


def cut_accuracy(
    predicted_cuts_s: Sequence[float], true_cuts_s: Sequence[float], *, fps: float,
    tolerance_frames: int = 2,
) -> CutScore:
    """Match predicted cuts to true cuts one-to-one within ±``tolerance_frames`` frames.

    See the module docstring for the greedy order, its tie-break and the empty cases.
    Raises ``ValueError`` for ``fps <= 0``, a negative tolerance or a non-finite time.
    """
    if not (math.isfinite(fps) and fps > 0):
        raise ValueError(f"fps = {fps!r} must be finite and > 0")
    if tolerance_frames < 0:
        raise ValueError(f"tolerance_frames = {tolerance_frames!r} must be >= 0")
    bad = [t for t in (*predicted_cuts_s, *true_cuts_s) if not math.isfinite(t)]
    if bad:
        raise ValueError(f"cut times must be finite, got {bad}")
    predicted, truth = sorted(predicted_cuts_s), sorted(true_cuts_s)
    reach_s = (tolerance_frames + _FRAME_EPS) / fps
    pairs = sorted(
        (round(abs(predicted[j] - t) * fps, 3), i, j)
        for i, t in enumerate(truth)
        for j in range(bisect.bisect_left(predicted, t - reach_s),
                       bisect.bisect_right(predicted, t + reach_s))
    )
    taken_t: dict[int, int] = {}
    taken_p: set[int] = set()
    for _, i, j in pairs:
        if i not in taken_t and j not in taken_p:
            taken_t[i] = j
            taken_p.add(j)
    return CutScore(
        tp=len(taken_t), fp=len(predicted) - len(taken_p), fn=len(truth) - len(taken_t),
        matches=tuple((truth[i], predicted[taken_t[i]]) for i in sorted(taken_t)),
        missed_s=tuple(t for i, t in enumerate(truth) if i not in taken_t),
        spurious_s=tuple(p for j, p in enumerate(predicted) if j not in taken_p),
    )


def predicted_cuts(scenes: Sequence[Scene]) -> tuple[float, ...]:
    """The cuts a scene list implies: the start of every scene but the first (time order)."""
    return tuple(s.start_s for s in sorted(scenes, key=lambda s: s.start_s)[1:])


@dataclasses.dataclass(frozen=True, slots=True)
class GroupRecall:
    """How many true objects of a group were found, and localized."""

    n: int
    found: int
    localized: int

    @property
    def recall(self) -> float:
        return _rate(self.found, self.n)

    @property
    def localized_recall(self) -> float:
        return _rate(self.localized, self.n)


@dataclasses.dataclass(frozen=True, slots=True)
class ObjectOutcome:
    """One true object and the tracks (object ids) that found / localized it."""

    object_id: str
    label: str
    featured: bool
    found_by: tuple[str, ...]
    localized_by: tuple[str, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class PresenceScore:
    """Per-object outcomes plus track counts; recalls and precision are derived."""

    outcomes: tuple[ObjectOutcome, ...]
    n_tracks: int
    correct_tracks: int

    def group(self, *, featured: bool | None = None, label: str | None = None) -> GroupRecall:
        """Recall counts over the objects matching the filters (None = any)."""
        chosen = [o for o in self.outcomes if (featured is None or o.featured == featured)
                  and (label is None or o.label == label)]
        return GroupRecall(len(chosen), sum(1 for o in chosen if o.found_by),
                           sum(1 for o in chosen if o.localized_by))

    @property
    def by_label(self) -> dict[str, GroupRecall]:
        return {lab: self.group(label=lab) for lab in sorted({o.label for o in self.outcomes})}

    @property
    def track_precision(self) -> float:
        return _rate(self.correct_tracks, self.n_tracks)

    @classmethod
    def combine(cls, scores: Iterable[PresenceScore]) -> PresenceScore:
        """Pool several videos' scores (micro average)."""
        parts = list(scores)
        return cls(tuple(o for s in parts for o in s.outcomes),
                   sum(s.n_tracks for s in parts), sum(s.correct_tracks for s in parts))


def scene_correspondence(
    truth_scenes: Sequence[TruthScene], predicted: Sequence[Scene]
) -> dict[int, frozenset[str]]:
    """For each true scene index, the ids of the predicted scenes overlapping it in time."""
    return {
        t.index: frozenset(p.scene_id for p in predicted
                           if min(t.end_s, p.end_s) - max(t.start_s, p.start_s) > _TIME_EPS)
        for t in truth_scenes
    }


def _overlaps(track: ObjectTrack, obj: TruthObject) -> bool:
    return track.start_s < obj.end_s - _TIME_EPS and track.end_s >= obj.start_s - _TIME_EPS


def _localizes(track: ObjectTrack, obj: TruthObject, iou_threshold: float) -> bool:
    return any(obj.start_s - _TIME_EPS <= b.t_s < obj.end_s - _TIME_EPS
               and b.box.iou(obj.box_at(b.t_s)) >= iou_threshold for b in track.boxes)


def object_presence(
    rep_objects: Sequence[ObjectTrack], truth_objects: Sequence[TruthObject], *,
    scenes: Sequence[Scene], truth_scenes: Sequence[TruthScene], iou_threshold: float = 0.3,
) -> PresenceScore:
    """Score one video's tracks against its true objects (rules in the module docstring).

    ``scenes`` are the predicted scenes the tracks point at; ``truth_scenes`` the true ones.
    Raises ``ValueError`` for an ``iou_threshold`` outside (0, 1], a track of an unknown
    predicted scene, or an object of an unknown true scene.
    """
    if not 0.0 < iou_threshold <= 1.0:
        raise ValueError(f"iou_threshold = {iou_threshold!r} must be in (0, 1]")
    known = {s.scene_id for s in scenes}
    stray = sorted({t.scene_id for t in rep_objects} - known)
    if stray:
        raise ValueError(f"tracks point at scenes not in `scenes`: {stray}")
    corresponding = scene_correspondence(truth_scenes, scenes)
    outcomes: list[ObjectOutcome] = []
    correct: set[str] = set()
    for obj in truth_objects:
        if obj.scene_index not in corresponding:
            raise ValueError(f"{obj.object_id}: scene_index {obj.scene_index} not in truth_scenes")
        found = [t for t in rep_objects if t.scene_id in corresponding[obj.scene_index]
                 and t.tag.strip().lower() == obj.label.strip().lower() and _overlaps(t, obj)]
        localized = [t for t in found if _localizes(t, obj, iou_threshold)]
        correct.update(t.object_id for t in found)
        outcomes.append(ObjectOutcome(obj.object_id, obj.label, obj.featured,
                                      tuple(t.object_id for t in found),
                                      tuple(t.object_id for t in localized)))
    return PresenceScore(tuple(outcomes), n_tracks=len(rep_objects), correct_tracks=len(correct))


def score_representation(
    rep: Representation, video: TruthVideo, *, tolerance_frames: int = 2,
    iou_threshold: float = 0.3,
) -> tuple[CutScore, PresenceScore]:
    """Cuts and objects of ``rep`` against ``video``'s truth (raises as the two scorers do)."""
    cuts = cut_accuracy(predicted_cuts(rep.scenes), video.cuts_s, fps=video.fps,
                        tolerance_frames=tolerance_frames)
    return cuts, object_presence(rep.objects, video.objects, scenes=rep.scenes,
                                 truth_scenes=video.scenes, iou_threshold=iou_threshold)
