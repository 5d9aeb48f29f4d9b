"""Small builders shared by the objects tests: detections, keyframe timelines, params."""

from __future__ import annotations

from collections.abc import Sequence

from needleforge.params import ObjectParams
from needleforge.records import Box, Detection


def det(t_s: float, label: str, x: float, y: float, *, w: float = 0.2, h: float = 0.2,
        score: float = 0.9) -> Detection:
    """A detection of ``label`` at ``t_s`` whose box has its top-left at ``(x, y)``."""
    return Detection(t_s=t_s, label=label, score=score, box=Box(x=x, y=y, w=w, h=h))


def timeline(times: Sequence[float], *detections: Detection) -> list[tuple[float, list[Detection]]]:
    """Every keyframe in ``times`` with the detections whose ``t_s`` matches it."""
    return [(t, [d for d in detections if abs(d.t_s - t) < 1e-9]) for t in times]


def params(**overrides: object) -> ObjectParams:
    """Tracker params with test-friendly defaults (every hit kept unless said otherwise).

    Fragment merging is off (``merge_gap_s = merge_static_gap_s = 0``, no label families or
    confusable groups) so that tests of the tracker see its tracks as it made them; the
    merging tests turn it on.
    """
    base: dict[str, object] = {"iou_threshold": 0.3, "max_centroid_dist": 0.1,
                               "max_gap_s": 1.0, "min_hits": 1, "min_detection_score": 0.0,
                               "merge_gap_s": 0.0, "label_families": (),
                               "merge_static_gap_s": 0.0, "confusable_labels": ()}
    base.update(overrides)
    return ObjectParams.model_validate(base)
