"""Greedy multi-object tracking across the keyframes of one scene.

The detector sees a scene only on sparse keyframes (1–2 fps), so tracking is association
from keyframe to keyframe, not dense optical flow:

* **Candidates.** A detection may continue a track of the same label that is still *open*:
  the track's unseen time — from its last hit to the keyframe just before the current one —
  is at most ``max_gap_s``. Consecutive hits have a gap of 0; missing one keyframe at 1 fps
  gives a gap of 1 s.
* **Prediction.** A track's box is moved to the current time at the constant velocity of
  its last two hits (its last box when it has only one), kept inside the frame.
* **Matching.** A pair qualifies when the predicted box and the detection overlap with
  IoU ≥ ``iou_threshold``, or else (fallback for fast or shrinking objects) when their
  centres lie within ``max_centroid_dist`` (Euclidean, normalized frame units). Pairs are
  taken best first — every IoU pair by IoU descending, then every centroid pair by distance
  ascending — each track and each detection at most once. Unmatched detections start tracks.
* **Filtering.** Detections scoring below ``min_detection_score``, and boxes covering more
  than ``max_box_area_frac`` of the frame, are ignored before association.
* **Fragments.** Tracks of one object (one label family, lined up in time and place; two
  confusable labels on one box; one place in a still shot) are merged
  (:mod:`needleforge.objects.fragments`); then tracks with fewer than ``min_hits``
  detections are dropped.

Everything is deterministic: ties break on input order and tracks come back sorted by start
time, label, then the top-left of their first box.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Sequence
from statistics import fmean

from needleforge.objects.fragments import LabelEvidence, MergeRules, merge_fragments
from needleforge.params import ObjectParams
from needleforge.records import Box, Detection, TimedBox

#: Tolerance on times (seconds): keyframe timestamps come from float arithmetic.
TIME_EPS = 1e-6


@dataclasses.dataclass(frozen=True, slots=True)
class RawTrack:
    """One tracked object before attributes and a referring expression are attached.

    ``detections`` are the hits in time order, one per keyframe at most. ``visible_s`` is the
    total length of the keyframe intervals ``[t_k, t_{k+1}]`` (consecutive keyframes of the
    scene) on *both* ends of which the track was detected. A keyframe where the track was
    missed breaks the intervals on either side of it, so bridged gaps do not count; a track seen
    on a single keyframe has ``visible_s == 0``. The intervals are disjoint and lie inside
    ``[start_s, end_s]``, hence ``0 <= visible_s <= end_s - start_s`` always, as
    :class:`~needleforge.records.ObjectTrack` requires.

    ``labels`` is what the detector called the object, most evidence first (see
    :mod:`~needleforge.objects.fragments`); empty when not recorded. A track that switched
    between "car" and "truck" keeps both here while ``label`` holds one.
    """

    label: str
    detections: tuple[Detection, ...]
    visible_s: float
    labels: tuple[LabelEvidence, ...] = ()

    def __post_init__(self) -> None:
        if not self.detections:
            raise ValueError(f"track {self.label!r} has no detections")
        labels = sorted({d.label for d in self.detections})
        if labels != [self.label]:
            raise ValueError(f"track {self.label!r} mixes labels {labels}")
        times = [d.t_s for d in self.detections]
        if any(b <= a for a, b in itertools.pairwise(times)):
            raise ValueError(f"track {self.label!r}: detection times {times} not increasing")
        span = times[-1] - times[0]
        if not 0 <= self.visible_s <= span + TIME_EPS:
            raise ValueError(f"track {self.label!r}: visible_s = {self.visible_s} "
                             f"outside [0, {span}]")

    @property
    def start_s(self) -> float:
        """Time of the first hit."""
        return self.detections[0].t_s

    @property
    def end_s(self) -> float:
        """Time of the last hit."""
        return self.detections[-1].t_s

    @property
    def boxes(self) -> tuple[TimedBox, ...]:
        """Where the object was on each keyframe it was seen on."""
        return tuple(TimedBox(t_s=d.t_s, box=d.box) for d in self.detections)

    @property
    def mean_area_frac(self) -> float:
        """Mean box area as a fraction of the frame, capped at 1 (boxes may overshoot 1e-6)."""
        return min(1.0, fmean(d.box.area for d in self.detections))

    @property
    def mean_score(self) -> float:
        """Mean detector confidence over the hits."""
        return fmean(d.score for d in self.detections)


@dataclasses.dataclass(slots=True)
class _Builder:
    """A track under construction: its hits, in time order."""

    hits: list[Detection]

    @property
    def last_t(self) -> float:
        return self.hits[-1].t_s

    def predict(self, t_s: float) -> Box:
        """The last box moved to ``t_s`` at the velocity of the last two hits, inside the frame."""
        last = self.hits[-1]
        if len(self.hits) < 2:
            return last.box
        prev = self.hits[-2]
        dt = last.t_s - prev.t_s
        ahead = t_s - last.t_s
        b, p = last.box, prev.box
        x = b.x + (b.x - p.x + (b.w - p.w) / 2) / dt * ahead
        y = b.y + (b.y - p.y + (b.h - p.h) / 2) / dt * ahead
        return Box(x=min(max(x, 0.0), 1.0 - b.w), y=min(max(y, 0.0), 1.0 - b.h), w=b.w, h=b.h)


def _centre_distance(a: Box, b: Box) -> float:
    return math.hypot(a.x + a.w / 2 - b.x - b.w / 2, a.y + a.h / 2 - b.y - b.h / 2)


def _associate(
    tracks: Sequence[_Builder], detections: Sequence[Detection], *, t_s: float,
    params: ObjectParams,
) -> list[tuple[int, int]]:
    """One-to-one (track index, detection index) pairs, best pairs first (see module doc)."""
    pairs: list[tuple[int, float, int, int]] = []
    for ti, track in enumerate(tracks):
        predicted = track.predict(t_s)
        label = track.hits[0].label
        for di, det in enumerate(detections):
            if det.label != label:
                continue
            iou = predicted.iou(det.box)
            if iou >= params.iou_threshold:
                pairs.append((0, -iou, ti, di))
                continue
            dist = _centre_distance(predicted, det.box)
            if dist <= params.max_centroid_dist:
                pairs.append((1, dist, ti, di))
    pairs.sort()
    used_tracks: set[int] = set()
    used_dets: set[int] = set()
    matches: list[tuple[int, int]] = []
    for _, _, ti, di in pairs:
        if ti in used_tracks or di in used_dets:
            continue
        used_tracks.add(ti)
        used_dets.add(di)
        matches.append((ti, di))
    return matches


def _check_frames(
    detections_by_time: Sequence[tuple[float, Sequence[Detection]]], *, scene_id: str,
    scene_start_s: float, scene_end_s: float,
) -> None:
    """Raise ``ValueError`` naming the first bad scene bound, keyframe time or detection."""
    if not (math.isfinite(scene_start_s) and scene_start_s >= 0):
        raise ValueError(f"scene {scene_id}: scene_start_s = {scene_start_s!r} must be >= 0")
    if not (math.isfinite(scene_end_s) and scene_end_s > scene_start_s):
        raise ValueError(f"scene {scene_id}: scene_end_s = {scene_end_s!r} must be > "
                         f"scene_start_s = {scene_start_s!r}")
    prev: float | None = None
    for t_s, detections in detections_by_time:
        if not scene_start_s - TIME_EPS <= t_s <= scene_end_s + TIME_EPS:
            raise ValueError(f"scene {scene_id}: keyframe t_s = {t_s!r} outside "
                             f"[{scene_start_s}, {scene_end_s}]")
        if prev is not None and t_s <= prev + TIME_EPS:
            raise ValueError(f"scene {scene_id}: keyframe times must increase; "
                             f"t_s = {t_s!r} follows {prev!r}")
        prev = t_s
        for det in detections:
            if abs(det.t_s - t_s) > TIME_EPS:
                raise ValueError(f"scene {scene_id}: detection {det.label!r} has "
                                 f"t_s = {det.t_s!r} but sits on keyframe t_s = {t_s!r}")


def _visible_s(frames: Sequence[int], times: Sequence[float]) -> float:
    """Sum of keyframe intervals whose both ends are hits (see :class:`RawTrack`)."""
    hit = set(frames)
    total = sum(times[k + 1] - times[k] for k in frames if k + 1 in hit)
    return min(total, times[frames[-1]] - times[frames[0]])


def track_objects(
    detections_by_time: Sequence[tuple[float, Sequence[Detection]]],
    *,
    scene_id: str,
    scene_start_s: float,
    scene_end_s: float,
    params: ObjectParams,
) -> list[RawTrack]:
    """Link per-keyframe detections of one scene into object tracks.

    ``detections_by_time`` lists **every** keyframe of the scene in time order, with an empty
    sequence where nothing was detected: the keyframe timeline defines gaps and
    ``visible_s`` (see :class:`RawTrack`), so dropping empty keyframes would overstate
    visibility. The association rules are in the module docstring.

    Raises ``ValueError`` when the scene bounds are invalid, keyframe times do not strictly
    increase or fall outside the scene, or a detection's ``t_s`` is not its keyframe's time.
    """
    _check_frames(detections_by_time, scene_id=scene_id, scene_start_s=scene_start_s,
                  scene_end_s=scene_end_s)
    times = [t for t, _ in detections_by_time]
    builders: list[_Builder] = []
    open_tracks: list[_Builder] = []
    for k, (t_s, frame_detections) in enumerate(detections_by_time):
        detections = [d for d in frame_detections if usable(d, params=params)]
        if k > 0:
            # Unseen time is measured up to the previous keyframe; a closed track never reopens.
            open_tracks = [b for b in open_tracks
                           if times[k - 1] - b.last_t <= params.max_gap_s + TIME_EPS]
        matched: set[int] = set()
        for ti, di in _associate(open_tracks, detections, t_s=t_s, params=params):
            open_tracks[ti].hits.append(detections[di])
            matched.add(di)
        for di, det in enumerate(detections):
            if di not in matched:
                builder = _Builder(hits=[det])
                builders.append(builder)
                open_tracks.append(builder)
    merged = merge_fragments([tuple(b.hits) for b in builders], rules=merge_rules(params))
    index = {round(t, 6): k for k, t in enumerate(times)}
    kept = [m for m in merged if len(m.hits) >= params.min_hits]
    kept.sort(key=lambda m: track_order(m.hits))
    return [RawTrack(label=m.hits[0].label, detections=m.hits, labels=m.labels,
                     visible_s=_visible_s([index[round(d.t_s, 6)] for d in m.hits], times))
            for m in kept]


def track_order(hits: Sequence[Detection]) -> tuple[float, str, float, float]:
    """How tracks are ordered: start time, label, then the top-left of the first box."""
    return hits[0].t_s, hits[0].label, hits[0].box.y, hits[0].box.x


def merge_rules(params: ObjectParams) -> MergeRules:
    """The fragment-merge thresholds of ``params`` (see :mod:`.fragments`)."""
    return MergeRules(families=params.label_families, confusable=params.confusable_labels,
                      gap_s=params.merge_gap_s, max_dist=params.merge_max_dist,
                      min_iou=params.merge_iou, label_iou=params.merge_label_iou,
                      static_gap_s=params.merge_static_gap_s,
                      static_iou=params.merge_static_iou)


def usable(detection: Detection, *, params: ObjectParams) -> bool:
    """Whether a detection is evidence at all: confident enough, and not a box covering
    (nearly) the whole frame, which the detector draws around texture, not objects."""
    return (detection.score >= params.min_detection_score
            and detection.box.area <= params.max_box_area_frac)
