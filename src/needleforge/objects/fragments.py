"""Fragments of one object merged into one track, before anything is counted or ranked.

Greedy keyframe-to-keyframe tracking breaks one object into several tracks whenever the
detector misses it for longer than the tracker's gap, moves its box abruptly, or calls it by
another label ("car" on one frame, "truck" on the next, for one van). Counted as they are,
the fragments become "three trucks", and an object needle about "the white car" has a
negative that is the same van under another track. Two tracks are merged when their labels
are one **family** (the same label, or labels of one of ``label_families``) and either

* **they follow each other**: the second starts after the first ends, within
  ``merge_gap_s``, and its first box centre lies within ``merge_max_dist`` (normalized frame
  units) of the first track's last box centre moved on at its last velocity; or
* **they are one object under two labels**: they overlap in time, and every hit of the later one
  inside the earlier one's span matches it: boxes with IoU >= ``merge_iou`` on a shared
  keyframe (the detector boxed one van as both "car" and "truck"), else a centre within
  ``merge_max_dist`` of the earlier track's nearest hit (labels that alternate from frame
  to frame). On a shared keyframe the higher-scoring detection stays.

Merging repeats until no pair qualifies, taking pairs in a fixed order (earliest start, then
input order), so the result depends only on the input. A merged track takes the label that
most of its hits had (ties: the higher summed score, then the alphabetically first label),
and every hit is relabelled with it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from needleforge.records import Box, Detection

#: Tolerance on keyframe times (seconds), as in the tracker.
_EPS = 1e-6

Hits = tuple[Detection, ...]


def family_of(label: str, families: Sequence[Sequence[str]]) -> str:
    """The key shared by every label of ``label``'s family (the label itself when alone)."""
    key = " ".join(label.lower().split())
    for family in families:
        if key in family:
            return "|".join(sorted(family))
    return key


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


def _follows(first: Hits, second: Hits, *, gap_s: float, max_dist: float) -> bool:
    gap = second[0].t_s - first[-1].t_s
    if gap <= _EPS or gap > gap_s + _EPS:
        return False
    px, py = _predicted_centre(first, second[0].t_s)
    sx, sy = _centre(second[0].box)
    return math.hypot(px - sx, py - sy) <= max_dist + _EPS


def _same_object(a: Hits, b: Hits, *, min_iou: float, max_dist: float) -> bool:
    """True when ``a`` and ``b`` have different labels and every hit of ``b`` inside ``a``'s
    time range matches ``a`` there: IoU >= ``min_iou`` with ``a``'s box on a shared keyframe,
    else a centre within ``max_dist`` of ``a``'s nearest hit (hits that alternate between
    labels share no keyframe). Two tracks of one label that overlap in time are two objects:
    the tracker already chose not to join them."""
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
        (nx, ny), (dx, dy) = _centre(near.box), _centre(d.box)
        if math.hypot(nx - dx, ny - dy) > max_dist + _EPS:
            return False
    return compared > 0


def _majority_label(hits: Hits) -> str:
    counts: dict[str, tuple[int, float]] = {}
    for d in hits:
        n, total = counts.get(d.label, (0, 0.0))
        counts[d.label] = (n + 1, total + d.score)
    return min(counts, key=lambda lb: (-counts[lb][0], -counts[lb][1], lb))


def _union(a: Hits, b: Hits) -> Hits:
    """The hits of both, one per keyframe (the higher score where both have one)."""
    best: dict[float, Detection] = {}
    for d in (*a, *b):
        key = round(d.t_s, 6)
        if key not in best or d.score > best[key].score:
            best[key] = d
    return tuple(best[k] for k in sorted(best))


def merge_fragments(
    tracks: Sequence[Hits],
    *,
    families: Sequence[Sequence[str]],
    gap_s: float,
    max_dist: float,
    min_iou: float,
) -> list[Hits]:
    """``tracks`` (each a time-ordered run of one object's hits) with fragments merged.

    Each returned track is relabelled with its majority label (module docstring). Order:
    by first hit time, then input order of the earliest fragment.

    Raises:
        ValueError: when ``gap_s`` or ``max_dist`` is negative, ``min_iou`` not in (0, 1],
            or a track is empty.
    """
    if gap_s < 0 or max_dist < 0 or not 0 < min_iou <= 1:
        raise ValueError(f"gap_s = {gap_s}, max_dist = {max_dist} must be >= 0 and "
                         f"min_iou = {min_iou} in (0, 1]")
    if any(not t for t in tracks):
        raise ValueError("merge_fragments: a track has no hits")
    work = [tuple(t) for t in tracks]
    merged = True
    while merged:
        merged = False
        order = sorted(range(len(work)), key=lambda i: (work[i][0].t_s, i))
        for i in order:
            for j in order:
                if i == j or not _mergeable(work[i], work[j], families=families,
                                            gap_s=gap_s, max_dist=max_dist, min_iou=min_iou):
                    continue
                work[i] = _union(work[i], work[j])
                del work[j]
                merged = True
                break
            if merged:
                break
    result = []
    for hits in work:
        label = _majority_label(hits)
        result.append(tuple(d if d.label == label else
                            Detection(t_s=d.t_s, label=label, score=d.score, box=d.box)
                            for d in hits))
    return sorted(result, key=lambda h: h[0].t_s)


def _mergeable(a: Hits, b: Hits, *, families: Sequence[Sequence[str]], gap_s: float,
               max_dist: float, min_iou: float) -> bool:
    if family_of(a[0].label, families) != family_of(b[0].label, families):
        return False
    if a[0].t_s <= b[0].t_s and _follows(a, b, gap_s=gap_s, max_dist=max_dist):
        return True
    return a[0].t_s <= b[0].t_s and _same_object(a, b, min_iou=min_iou, max_dist=max_dist)
