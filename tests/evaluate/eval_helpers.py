"""Helpers of the evaluate tests: a slow reference scorer written straight from the paper, and
record builders.

Why a reference: the library computes every metric batch-wise with numpy tricks (offset running
maxima, rank-by-rank matching); the reference uses Python sets and the ActivityNet loop, so
agreement on random inputs checks the tricks, not just the hand-worked cases.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

Span = tuple[float, float]


def ref_seconds(spans: Sequence[Span], duration_s: float = math.inf) -> set[int]:
    """Eq. 6–8 with the clipping convention: a span wholly outside the video covers nothing."""
    out: set[int] = set()
    for start, end in spans:
        if start > duration_s or end < 0:
            continue
        out.update(range(math.floor(max(start, 0.0)), math.ceil(min(end, duration_s)) + 1))
    return out


def ref_tiou(a: set[int], b: set[int]) -> float:
    union = a | b
    return len(a & b) / len(union) if union else 0.0


def ref_clipped(spans: Sequence[Span], duration_s: float = math.inf) -> list[Span]:
    """Exact seconds: each span clipped to the video, those wholly outside left out."""
    return [(max(s, 0.0), min(e, duration_s)) for s, e in spans
            if not (s > duration_s or e < 0)]


def ref_length(spans: Sequence[Span]) -> float:
    """Seconds covered by the union of (clipped) spans: merge them left to right."""
    total, reach = 0.0, -math.inf
    for start, end in sorted(spans):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def ref_pair_tiou(a: Span, b: Span, *, duration_s: float = math.inf,
                  kind: str = "second_set") -> float:
    """tIoU of two spans under ``kind``: whole-second sets, or exact seconds."""
    if kind == "second_set":
        return ref_tiou(ref_seconds([a], duration_s), ref_seconds([b], duration_s))
    ca, cb = ref_clipped([a], duration_s), ref_clipped([b], duration_s)
    la, lb = ref_length(ca), ref_length(cb)
    inter = max(min(ca[0][1], cb[0][1]) - max(ca[0][0], cb[0][0]), 0.0) if ca and cb else 0.0
    union = la + lb - inter
    return inter / union if union > 0 else 0.0


def ref_set_tiou(targets: Sequence[Span], preds: Sequence[Span], *,
                 duration_s: float = math.inf, kind: str = "second_set") -> float:
    """Set-level tIoU (eq. 9) under ``kind``."""
    if kind == "second_set":
        return ref_tiou(ref_seconds(targets, duration_s), ref_seconds(preds, duration_s))
    ct, cp = ref_clipped(targets, duration_s), ref_clipped(preds, duration_s)
    union = ref_length([*ct, *cp])
    inter = ref_length(ct) + ref_length(cp) - union
    return inter / union if union > 0 else 0.0


def ref_order(n: int, scores: Sequence[float] | None) -> list[int]:
    """Prediction indices by descending score, ties (and no scores) in the given order."""
    if scores is None:
        return list(range(n))
    return sorted(range(n), key=lambda i: -scores[i])


def ref_recall(targets: Sequence[Span], preds: Sequence[Span], *, threshold: float, k: int = 1,
               scores: Sequence[float] | None = None, duration_s: float = math.inf,
               kind: str = "second_set") -> int:
    """How many targets have some top-k·x prediction with tIoU ≥ threshold."""
    kept = [preds[i] for i in ref_order(len(preds), scores)[:k * len(targets)]]
    return sum(any(ref_pair_tiou(t, p, duration_s=duration_s, kind=kind) >= threshold
                   for p in kept) for t in targets)


def ref_ap(targets: Sequence[Span], preds: Sequence[Span], *, threshold: float,
           scores: Sequence[float] | None = None, duration_s: float = math.inf,
           kind: str = "second_set") -> float:
    """ActivityNet's compute_average_precision_detection for one query, ties → earlier target."""
    gts = list(targets)
    locked = [False] * len(gts)
    tp: list[int] = []
    for i in ref_order(len(preds), scores):
        ious = [ref_pair_tiou(g, preds[i], duration_s=duration_s, kind=kind) for g in gts]
        hit = 0
        for j in sorted(range(len(gts)), key=lambda j: -ious[j]):
            if ious[j] < threshold:
                break
            if not locked[j]:
                locked[j], hit = True, 1
                break
        tp.append(hit)
    if not tp:
        return 0.0
    cum, precision, recall = 0, [], []
    for r, hit in enumerate(tp, start=1):
        cum += hit
        precision.append(cum / r)
        recall.append(cum / len(gts))
    mprec, mrec = [0.0, *precision, 0.0], [0.0, *recall, 1.0]
    for i in range(len(mprec) - 2, -1, -1):
        mprec[i] = max(mprec[i], mprec[i + 1])
    return sum((mrec[i] - mrec[i - 1]) * mprec[i] for i in range(1, len(mrec))
               if mrec[i] != mrec[i - 1])


def grounding_q(qid: str, spans: Sequence[Sequence[float]], **extra: Any) -> dict[str, Any]:
    """A valid grounding question as a JSON object (overrides via ``extra``)."""
    base: dict[str, Any] = {
        "question_id": qid, "family": "nemo", "task": "object_grounding",
        "question": "When does the red car appear?", "video": f"videos/{qid}.mp4",
        "duration_s": 120.0, "bucket": "short", "needle_type": "object",
        "n_needles": len(spans), "answer_spans": [list(s) for s in spans]}
    base.update(extra)
    return base


def choice_tries(qid: str, *, task: str = "ret_edit1", options: Sequence[str] = (
        "Alice", "Bob", "Carol", "Dave"), answer: int = 1, **extra: Any) -> list[dict[str, Any]]:
    """The 4 rotations of one VNBench sample: try t shifts the options left by t."""
    out = []
    for t in range(4):
        rotated = [options[(i + t) % 4] for i in range(4)]
        out.append({
            "question_id": qid, "family": "vnbench", "task": task,
            "question": "What is the secret word?", "video": f"videos/{qid}.mp4",
            "duration_s": 60.0, "bucket": "short", "needle_type": "subtitle", "n_needles": 1,
            "options": rotated, "answer_index": (answer - t) % 4, "try": t, **extra})
    return out


def letter_for(question: dict[str, Any], *, right: bool = True) -> str:
    """The letter of the correct option (or of a wrong one)."""
    index = question["answer_index"] if right else (question["answer_index"] + 1) % 4
    return "ABCD"[index]


def write_jsonl(path: Path, rows: Sequence[Any]) -> Path:
    """Write one JSON value per line (strings are written as raw lines, to forge bad lines)."""
    lines = [r if isinstance(r, str) else json.dumps(r) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
