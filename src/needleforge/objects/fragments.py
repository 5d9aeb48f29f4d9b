"""Fragments of one object merged into one track, before anything is counted or ranked.

Greedy keyframe-to-keyframe tracking breaks one object into several tracks whenever the
detector misses it for longer than the tracker's gap, moves its box abruptly, or calls it by
another label ("car" on one frame, "truck" on the next, for one van; "bird" and "teddy bear"
on the same box, for one cockatoo). Counted as they are, the fragments become "three trucks",
or "a white truck and two cars" for one van and one car, and an object needle about "the
white car" has a negative that is the same van under another track. Two tracks are merged
when their labels are one **family** (the same label, or labels of one of ``families``) and

* **they follow each other**: the second starts after the first ends, within ``gap_s``, and
  its first box centre lies within ``max_dist`` (normalized frame units) of the first
  track's last box centre moved on at its last velocity; or
* **they are one object under two labels**: they overlap in time, and every hit of the later
  one inside the earlier one's span matches it: boxes with IoU >= ``min_iou`` on a shared
  keyframe (the detector boxed one van as both "car" and "truck"), else a centre within
  ``max_dist`` of the earlier track's nearest hit (labels that alternate from frame to
  frame). On a shared keyframe the higher-scoring detection stays.

Two more rules, for labels of one family **or** of one ``confusable`` group (a detector's
well-known confusions: bird/teddy bear, cat/dog, cup/bowl — never a person with its bicycle):

* **one box, two labels**: the tracks overlap in time and every hit of the later one inside
  the earlier one's span has IoU >= ``label_iou`` with the earlier one's box there (on a
  shared keyframe, else its nearest hit). The bar is high (0.7 by default) because two
  *different* objects of confusable kinds may stand close; two labels on one box may not.
* **one place in a still shot**: the second starts after the first ends, within
  ``static_gap_s`` (longer than ``gap_s``: in OpenCV's vtest.avi a parked van is unseen for
  7-25 s at a time while people walk in front of it, and is still there), both tracks stand
  still (two hits at least, every box IoU >= ``static_iou`` with the track's middle box) and
  the first's last box and the second's first box overlap with IoU >= ``static_iou``. A lone
  hit is never joined so: one-frame guesses must not add up to a track.

Merging repeats until no pair qualifies, taking pairs in a fixed order (earliest start, then
input order), so the result depends only on the input. A merged track takes the label with the
most **evidence** — the summed detector score of its hits under that label, counted over every
fragment's hits before shared keyframes were thinned (keyframes x mean score; ties: more
keyframes, then the alphabetically first label) — and every hit is relabelled with it. The
evidence of every label stays with the track (:class:`LabelEvidence`), so that later steps can
tell a track that switched labels from one that never did.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from needleforge.records import Box, Detection

#: Tolerance on keyframe times (seconds), as in the tracker.
_EPS = 1e-6

Hits = tuple[Detection, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class LabelEvidence:
    """How much the detector said ``label`` about one track: ``keyframes`` hits scoring
    ``score_sum`` in all (before merged fragments were thinned to one hit per keyframe)."""

    label: str
    keyframes: int
    score_sum: float

    def __post_init__(self) -> None:
        if self.keyframes < 1 or not (math.isfinite(self.score_sum) and self.score_sum >= 0):
            raise ValueError(f"label {self.label!r}: keyframes = {self.keyframes} must be "
                             f">= 1 and score_sum = {self.score_sum} >= 0")


@dataclasses.dataclass(frozen=True, slots=True)
class Merged:
    """One merged track: its hits (one per keyframe, all under the winning label) and the
    evidence of every label its fragments had, most evidence first."""

    hits: Hits
    labels: tuple[LabelEvidence, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class MergeRules:
    """The thresholds of the merge rules (module docstring); checked on construction.

    Raises:
        ValueError: a negative gap or distance, or an IoU outside (0, 1].
    """

    families: Sequence[Sequence[str]] = ()
    confusable: Sequence[Sequence[str]] = ()
    gap_s: float = 0.0
    max_dist: float = 0.0
    min_iou: float = 0.5
    label_iou: float = 0.7
    static_gap_s: float = 0.0
    static_iou: float = 0.5

    def __post_init__(self) -> None:
        if min(self.gap_s, self.max_dist, self.static_gap_s) < 0:
            raise ValueError(f"gap_s = {self.gap_s}, max_dist = {self.max_dist} and "
                             f"static_gap_s = {self.static_gap_s} must be >= 0")
        for name in ("min_iou", "label_iou", "static_iou"):
            value = getattr(self, name)
            if not 0 < value <= 1:
                raise ValueError(f"{name} = {value} must be in (0, 1]")


def normalize_label(label: str) -> str:
    """``label`` lower-cased with whitespace runs collapsed (how families name labels)."""
    return " ".join(label.lower().split())


def family_of(label: str, families: Sequence[Sequence[str]]) -> str:
    """The key shared by every label of ``label``'s family (the label itself when alone)."""
    key = normalize_label(label)
    for family in families:
        if key in family:
            return "|".join(sorted(family))
    return key


def confusable(a: str, b: str, groups: Sequence[Sequence[str]]) -> bool:
    """Whether labels ``a`` and ``b`` differ and appear together in one of ``groups``."""
    a, b = normalize_label(a), normalize_label(b)
    return a != b and any(a in group and b in group for group in groups)


def _centre(box: Box) -> tuple[float, float]:
    return box.x + box.w / 2, box.y + box.h / 2


def _predicted_centre(hits: Hits, t_s: float) -> tuple[float, float]:
    """The last box centre moved on to ``t_s`` at the velocity of the last two hits."""
    cx, cy = _centre(hits[-1].box)
    if len(hits) < 2:
        return cx, cy
    px, py = _centre(hits[-2].box)
    dt = hits[-1].t_s - hits[-2].t_s
    ahead = t_s - hits[-1].t_s
    return cx + (cx - px) / dt * ahead, cy + (cy - py) / dt * ahead


def _gap(first: Hits, second: Hits) -> float:
    return second[0].t_s - first[-1].t_s


def _follows(first: Hits, second: Hits, *, gap_s: float, max_dist: float) -> bool:
    gap = _gap(first, second)
    if gap <= _EPS or gap > gap_s + _EPS:
        return False
    px, py = _predicted_centre(first, second[0].t_s)
    sx, sy = _centre(second[0].box)
    return math.hypot(px - sx, py - sy) <= max_dist + _EPS


def _still(hits: Hits, min_iou: float) -> bool:
    """``hits`` show an object standing still: two boxes at least (one box cannot show it,
    and joining lone hits would turn one-frame guesses into tracks), each overlapping the
    middle one with IoU >= ``min_iou``."""
    middle = hits[(len(hits) - 1) // 2].box
    return len(hits) >= 2 and all(d.box.iou(middle) >= min_iou for d in hits)


def _same_place_later(first: Hits, second: Hits, *, gap_s: float, min_iou: float) -> bool:
    """``second`` takes up where ``first`` stood, after a gap of at most ``gap_s``."""
    gap = _gap(first, second)
    return (_EPS < gap <= gap_s + _EPS and first[-1].box.iou(second[0].box) >= min_iou
            and _still(first, min_iou) and _still(second, min_iou))


def _same_object(a: Hits, b: Hits, *, min_iou: float, max_dist: float | None) -> bool:
    """True when ``a`` and ``b`` have different labels and every hit of ``b`` inside ``a``'s
    time range matches ``a`` there: IoU >= ``min_iou`` with ``a``'s box on a shared
    keyframe; elsewhere a centre within ``max_dist`` of ``a``'s nearest hit, or (``max_dist``
    None) IoU >= ``min_iou`` with that hit's box. Hits that alternate between labels share
    no keyframe. Two tracks of one label that overlap in time are two objects: the tracker
    already chose not to join them."""
    if a[0].label == b[0].label:
        return False
    by_time = {round(d.t_s, 6): d for d in a}
    compared = 0
    for d in b:
        if not a[0].t_s - _EPS <= d.t_s <= a[-1].t_s + _EPS:
            continue
        compared += 1
        twin = by_time.get(round(d.t_s, 6))
        if twin is not None:
            if twin.box.iou(d.box) < min_iou:
                return False
            continue
        near = min(a, key=lambda x: abs(x.t_s - d.t_s))
        if max_dist is None:
            if near.box.iou(d.box) < min_iou:
                return False
            continue
        (nx, ny), (dx, dy) = _centre(near.box), _centre(d.box)
        if math.hypot(nx - dx, ny - dy) > max_dist + _EPS:
            return False
    return compared > 0


def label_evidence(detections: Sequence[Detection]) -> tuple[LabelEvidence, ...]:
    """Per label: keyframes and summed score; most evidence first (module docstring)."""
    counts: dict[str, tuple[int, float]] = {}
    for d in detections:
        n, total = counts.get(d.label, (0, 0.0))
        counts[d.label] = (n + 1, total + d.score)
    order = sorted(counts, key=lambda lb: (-counts[lb][1], -counts[lb][0], lb))
    return tuple(LabelEvidence(lb, counts[lb][0], counts[lb][1]) for lb in order)


def _union(a: Hits, b: Hits) -> Hits:
    """The hits of both, one per keyframe (the higher score where both have one)."""
    best: dict[float, Detection] = {}
    for d in (*a, *b):
        key = round(d.t_s, 6)
        if key not in best or d.score > best[key].score:
            best[key] = d
    return tuple(best[k] for k in sorted(best))


def relabel(hits: Hits, label: str) -> Hits:
    """``hits`` with every detection's label set to ``label``."""
    return tuple(d if d.label == label else dataclasses.replace(d, label=label) for d in hits)


def merge_fragments(tracks: Sequence[Hits], *, rules: MergeRules) -> list[Merged]:
    """``tracks`` (each a time-ordered run of one object's hits) with fragments merged.

    Each returned track is relabelled with its best-evidenced label (module docstring).
    Order: by first hit time, then input order of the earliest fragment.

    Raises:
        ValueError: when a track is empty.
    """
    if any(not t for t in tracks):
        raise ValueError("merge_fragments: a track has no hits")
    work = [(tuple(t), tuple(t)) for t in tracks]  # (hits, every hit ever merged in)
    merged = True
    while merged:
        merged = False
        order = sorted(range(len(work)), key=lambda i: (work[i][0][0].t_s, i))
        for i in order:
            for j in order:
                if i == j or not _mergeable(work[i][0], work[j][0], rules=rules):
                    continue
                work[i] = (_union(work[i][0], work[j][0]), work[i][1] + work[j][1])
                del work[j]
                merged = True
                break
            if merged:
                break
    result = []
    for hits, seen in work:
        evidence = label_evidence(seen)
        result.append(Merged(hits=relabel(hits, evidence[0].label), labels=evidence))
    return sorted(result, key=lambda m: m.hits[0].t_s)


def _mergeable(a: Hits, b: Hits, *, rules: MergeRules) -> bool:
    if a[0].t_s > b[0].t_s:
        return False
    family = family_of(a[0].label, rules.families) == family_of(b[0].label, rules.families)
    if family and (_follows(a, b, gap_s=rules.gap_s, max_dist=rules.max_dist)
                   or _same_object(a, b, min_iou=rules.min_iou, max_dist=rules.max_dist)):
        return True
    if not (family or confusable(a[0].label, b[0].label, rules.confusable)):
        return False
    return (_same_object(a, b, min_iou=rules.label_iou, max_dist=None)
            or _same_place_later(a, b, gap_s=rules.static_gap_s, min_iou=rules.static_iou))
