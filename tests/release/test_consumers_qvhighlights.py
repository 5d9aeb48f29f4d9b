"""QVHighlights export and moment_detr submissions against moment_detr's own evaluation.

Reference: ``jayleicn/moment_detr`` at commit b7e553ac3b0c898ee6b85e03ee507c064eab89ca
(2026-03-08): ``standalone_eval/eval.py`` (``eval_submission``, ``eval_moment_retrieval``,
``get_data_by_range``, ``compute_mr_r1``, ``compute_mr_ap``) and ``standalone_eval/utils.py``
(``compute_average_precision_detection``, ``interpolated_precision_recall``). The reference
below re-implements what they compute, written from reading them, including the crash on an
empty length range unless the README's guard is applied.
"""

from __future__ import annotations

import json
import math
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from needleforge.evaluate import score_files
from needleforge.release.readme import QVH_GUARD
from tests.release.consumer_cases import grounding_records, write_release

THDS = [round(0.5 + 0.05 * i, 2) for i in range(10)]
RANGES = {"short": (0, 10), "middle": (10, 30), "long": (30, 150), "full": (0, 150)}


class EmptyRange(Exception):
    """Where the unguarded official script raises TypeError."""


def _iou(a: list[float], b: list[float]) -> float:
    inter = max(0.0, min(a[1], b[1]) - max(a[0], b[0]))
    union = (a[1] - a[0]) + (b[1] - b[0]) - inter
    return inter / union


def _query_ap(gts: list[list[float]], preds: list[list[float]]) -> list[float]:
    """compute_average_precision_detection for one query (all windows share its video-id)."""
    preds = sorted(preds, key=lambda p: -p[2])
    out = []
    for thd in THDS:
        lock = [-1] * len(gts)
        tp, fp = np.zeros(len(preds)), np.zeros(len(preds))
        for i, p in enumerate(preds):
            ious = np.array([_iou(p, g) for g in gts])
            for j in ious.argsort()[::-1]:
                if ious[j] < thd:
                    fp[i] = 1
                    break
                if lock[j] >= 0:
                    continue
                tp[i], lock[j] = 1, i
                break
            if not tp[i] and not fp[i]:
                fp[i] = 1
        rec = np.cumsum(tp) / len(gts)
        prec = np.cumsum(tp) / (np.cumsum(tp) + np.cumsum(fp))
        mprec, mrec = np.hstack([[0], prec, [0]]), np.hstack([[0], rec, [1]])
        for k in range(len(mprec) - 2, -1, -1):
            mprec[k] = max(mprec[k], mprec[k + 1])
        idx = np.where(mrec[1:] != mrec[:-1])[0] + 1
        out.append(float(np.sum((mrec[idx] - mrec[idx - 1]) * mprec[idx])))
    return out


def moment_detr_eval(submission: list[dict[str, Any]], gt: list[dict[str, Any]], *,
                     guard: bool) -> dict[str, Any]:
    """The moment-retrieval part of eval_submission (percent, unrounded)."""
    assert {d["qid"] for d in submission} == {d["qid"] for d in gt}  # match_number=True
    out: dict[str, Any] = {}
    for name, (lo, hi) in RANGES.items():
        if (lo, hi) == (0, 150):
            sub, ref = submission, gt
        else:
            ref = [{**d, "relevant_windows": [w for w in d["relevant_windows"]
                                              if lo < w[1] - w[0] <= hi]} for d in gt]
            ref = [d for d in ref if d["relevant_windows"]]
            sub = [d for d in submission if d["qid"] in {r["qid"] for r in ref}]
        if not ref:
            if not guard:
                raise EmptyRange(name)
            out[name] = {"MR-mAP": defaultdict(lambda: math.nan),
                         "MR-R1": defaultdict(lambda: math.nan)}
            continue
        gt_by = {d["qid"]: d["relevant_windows"] for d in ref}
        aps = np.array([_query_ap(gt_by[d["qid"]], d["pred_relevant_windows"][:10])
                        for d in sub])
        ap = dict(zip(map(str, THDS), 100 * aps.mean(0), strict=True))
        ap["average"] = float(np.mean(list(ap.values())))
        first = {d["qid"]: d["pred_relevant_windows"][0][:2] for d in sub}
        best = [max(gt_by[q], key=lambda g, p=p: _iou(p, g)) for q, p in first.items()]
        ious = np.array([_iou(p, g) for p, g in zip(first.values(), best, strict=True)])
        out[name] = {"MR-mAP": ap, "MR-R1": {str(t): 100 * float(np.mean(ious >= t))
                                             for t in THDS}}
    return out


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_release(tmp_path_factory.mktemp("qvh-release"), grounding_records(40, seed=2))


def _gt(release: Path) -> list[dict[str, Any]]:
    lines = (release / "exports/qvhighlights.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def _submission(gt: list[dict[str, Any]], how: str, rng: random.Random) -> list[dict[str, Any]]:
    """A moment_detr submission as its inference writes it (saliency scores included)."""
    out = []
    for d in gt:
        if how == "perfect":
            windows = [[s, e, 1.0 - 0.1 * i] for i, (s, e) in enumerate(d["relevant_windows"])]
        elif how == "shifted":
            shift = d["duration"]  # past the end: no overlap with any window
            windows = [[s + shift, e + shift, 0.9] for s, e in d["relevant_windows"]]
        else:
            windows = []
            for _ in range(5):
                s = rng.uniform(0, d["duration"] - 4)
                windows.append([round(s, 1), round(min(s + rng.uniform(2, 20), d["duration"]),
                                                   1), round(rng.random(), 3)])
        out.append({"qid": d["qid"], "query": d["query"], "vid": d["vid"],
                    "pred_relevant_windows": windows,
                    "pred_saliency_scores": [0.0] * int(d["duration"] // 2)})
    return out


def test_export_keeps_moment_retrieval_fields_only(release: Path) -> None:
    for d in _gt(release):
        assert set(d) == {"qid", "query", "vid", "duration", "relevant_windows"}
        assert all(0 <= s < e <= d["duration"] for s, e in d["relevant_windows"])
    readme = (release / "README.md").read_text()
    assert "Saliency is not annotated" in readme and QVH_GUARD in readme


def test_the_official_script_needs_the_readme_guard_on_an_empty_range(release: Path) -> None:
    gt = _gt(release)
    sub = _submission(gt, "perfect", random.Random(0))
    with pytest.raises(EmptyRange, match="long"):
        moment_detr_eval(sub, gt, guard=False)
    # The README's line, run where it goes, gives the "long" range NaN and lets the rest run.
    ret_metrics: dict[str, Any] = {}
    scope = {"defaultdict": defaultdict, "ret_metrics": ret_metrics, "name": "long",
             "_ground_truth": []}
    exec(compile("for _ in [0]:\n" + QVH_GUARD, "guard", "exec"), scope)
    assert math.isnan(ret_metrics["long"]["MR-mAP"]["average"])


@pytest.mark.parametrize("how", ["perfect", "shifted", "random"])
def test_needleforge_score_reads_a_submission_and_matches_moment_detr(
        release: Path, tmp_path: Path, how: str) -> None:
    gt = _gt(release)
    sub = _submission(gt, how, random.Random(9))
    path = tmp_path / "submission.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in sub))
    official = moment_detr_eval(sub, gt, guard=True)
    report = score_files(release / "questions.jsonl", path)
    q = report.qvhighlights
    assert q is not None and q.n_queries == len(gt)
    full = official["full"]
    assert 100 * q.r1[0.5] == pytest.approx(full["MR-R1"]["0.5"])
    assert 100 * q.r1[0.7] == pytest.approx(full["MR-R1"]["0.7"])
    assert 100 * q.average_map == pytest.approx(full["MR-mAP"]["average"])
    assert 100 * q.map[0.75] == pytest.approx(full["MR-mAP"]["0.75"])
    for name in ("short", "middle"):
        assert 100 * (q.range_map[name] or 0.0) == pytest.approx(
            official[name]["MR-mAP"]["average"])
    assert q.range_map["long"] is None  # no 30-150 s window in this release
    ours = report.grounding["all"]["all"]
    if how == "perfect":
        assert full["MR-R1"]["0.7"] == 100 and full["MR-mAP"]["average"] == 100
        assert ours.recall[0.7] == 1.0 and ours.average_map == 1.0
    elif how == "shifted":
        assert full["MR-R1"]["0.5"] == 0 and full["MR-mAP"]["average"] == 0
    else:
        assert full["MR-R1"]["0.5"] < 30 and full["MR-mAP"]["average"] < 20  # near chance
    assert "QVHighlights conventions" in report.to_markdown()
