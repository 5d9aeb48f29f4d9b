"""Scoring a model's predictions against a release: :func:`score` and :func:`score_files`.

Everything is checked before anything is scored, so bad input stops the run up front with an
:class:`~needleforge.errors.EvaluationError` naming the offending ids, never halfway:

- questions: duplicate keys, a multiple-choice sample without exactly the tries 0–3, tries of
  one sample that disagree (task, bucket, needle type, needle count or correct option text), an
  id used by both a grounding question and a multiple-choice sample;
- predictions: an unknown ``question_id`` (a predictions file of another release), a duplicate
  (it would count twice), ``try`` on a grounding prediction or none on a multiple-choice one,
  ``pred_spans`` for a multiple-choice question.

A question without a prediction is scored as wrong and listed as ``missing``; a response that
parses to nothing as ``unparsed``, one that declines as ``refused`` (see
:mod:`needleforge.evaluate.parse`). Grounding metrics: :mod:`needleforge.evaluate.metrics`,
tIoU on exact seconds (the primary figures) with the paper's whole-second sets beside
(``second_set``), and 95 % intervals of Recall@1x, average mAP and the VNBench overall
(:mod:`needleforge.evaluate.intervals`).
Multiple choice: accuracy per try, over all tries, and circular accuracy (a sample counts only
when all 4 rotations are right, VNBench Sec. 3.4); the VNBench overall score is the mean of the
retrieval, ordering and counting group means, each the mean of its tasks' circular accuracy,
over VNBench's 9 official tasks only (as VideoNIAH's ``evaluation_utils.py`` and ``eval.py``
compute it, so both give the same number for the same answers); Long and Act tasks are listed
per task beside it. A question set with none of the official tasks averages the tasks it has.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import get_args

import numpy as np
import numpy.typing as npt

from needleforge.errors import EvaluationError
from needleforge.evaluate.intervals import bootstrap_ci, stratified_ci
from needleforge.evaluate.load import load_prediction_file, load_questions
from needleforge.evaluate.metrics import (
    DEFAULT_MAP_THRESHOLDS,
    DEFAULT_RECALL_THRESHOLDS,
    GroundingResult,
    evaluate_grounding,
)
from needleforge.evaluate.parse import parse_choice, parse_spans
from needleforge.evaluate.qvhighlights import qvhighlights_scores
from needleforge.evaluate.records import (
    N_TRIES,
    VNBENCH_TASKS,
    ChoiceQuestion,
    GroundingQuestion,
    Prediction,
    ReleaseQuestion,
    Span,
    vnbench_group,
)
from needleforge.evaluate.report import (
    ChoiceScores,
    Coverage,
    GroundingScores,
    Issue,
    ScoreReport,
    SecondSetScores,
    VNBenchSummary,
)
from needleforge.records.questions import BUCKETS, VNBenchGroup

Sample = tuple[ChoiceQuestion, ...]
Mask = npt.NDArray[np.bool_]
#: Natural orders of breakdown values; other values follow, alphabetically.
_VALUE_ORDER = {**{b: i for i, b in enumerate(BUCKETS)}, "single": 0, "multi": 1,
                **{g: i for i, g in enumerate(get_args(VNBenchGroup))}}
_SAME_ACROSS_TRIES = ("family", "task", "bucket", "needle_type", "n_needles", "answer_text")
_SHOWN_IDS = 5


def _ids(items: Sequence[object]) -> str:
    shown = ", ".join(repr(i) for i in items[:_SHOWN_IDS])
    return shown + (f" and {len(items) - _SHOWN_IDS} more" if len(items) > _SHOWN_IDS else "")


def _check_questions(questions: Sequence[ReleaseQuestion]) -> tuple[list[GroundingQuestion],
                                                                    list[Sample]]:
    """Split questions into grounding questions and complete multiple-choice samples.

    Raises:
        EvaluationError: duplicates, incomplete or inconsistent samples, shared ids.
    """
    grounding: list[GroundingQuestion] = []
    tries: dict[str, dict[int, ChoiceQuestion]] = defaultdict(dict)
    seen: set[tuple[str, int | None]] = set()
    for q in questions:
        if q.key in seen:
            raise EvaluationError(f"duplicate question {q.key!r} in the questions")
        seen.add(q.key)
        if isinstance(q, GroundingQuestion):
            grounding.append(q)
        else:
            tries[q.question_id][q.try_index] = q
    shared = sorted({q.question_id for q in grounding} & tries.keys())
    if shared:
        raise EvaluationError(f"ids used by grounding and multiple-choice questions: "
                              f"{_ids(shared)}")
    incomplete = sorted(i for i, t in tries.items() if len(t) != N_TRIES)
    if incomplete:
        raise EvaluationError(f"multiple-choice samples without all tries 0..{N_TRIES - 1}: "
                              f"{_ids(incomplete)}")
    samples = [tuple(t[i] for i in range(N_TRIES)) for t in tries.values()]
    for sample in samples:
        for name in _SAME_ACROSS_TRIES:
            values = {getattr(q, name) for q in sample}
            if len(values) > 1:
                raise EvaluationError(f"sample {sample[0].question_id!r}: tries disagree on "
                                      f"{name} ({sorted(map(str, values))})")
    return grounding, samples


def _check_predictions(predictions: Sequence[Prediction], *, grounding_ids: set[str],
                       choice_ids: set[str]) -> dict[tuple[str, int | None], Prediction]:
    """Index predictions by ``(question_id, try)``.

    Raises:
        EvaluationError: unknown ids, duplicates, or a prediction of the wrong kind.
    """
    by_key: dict[tuple[str, int | None], Prediction] = {}
    unknown: list[str] = []
    for p in predictions:
        where = f"prediction for {p.question_id!r}" + (f" (line {p.line})" if p.line else "")
        if p.question_id in grounding_ids and p.try_index is not None:
            raise EvaluationError(f"{where}: try is for multiple-choice questions only")
        if p.question_id in choice_ids and (p.try_index is None or p.spans is not None):
            raise EvaluationError(f"{where}: a multiple-choice prediction needs try (0..3) "
                                  "and a response")
        if p.question_id not in grounding_ids and p.question_id not in choice_ids:
            unknown.append(p.question_id)
        elif p.key in by_key:
            first = by_key[p.key].line
            raise EvaluationError(f"{where}: duplicate of the prediction on line {first}; "
                                  "it would count twice")
        by_key[p.key] = p
    if unknown:
        raise EvaluationError(f"{len(unknown)} predictions for question ids not in the "
                              f"questions: {_ids(unknown)}")
    return by_key


def _labels(questions: Sequence[ReleaseQuestion], *, with_group: bool) -> dict[str, list[str]]:
    """Each breakdown dimension's label for every question."""
    dims: dict[str, list[str]] = {
        "all": ["all"] * len(questions),
        "family": [q.family for q in questions],
        "task": [q.task for q in questions],
        "bucket": [q.bucket for q in questions],
        "needles": ["single" if q.n_needles == 1 else "multi" for q in questions],
        "needle_type": [q.needle_type for q in questions],
    }
    if with_group:
        dims["group"] = [vnbench_group(q.task) or "other" for q in questions]
    return dims


def _masks(questions: Sequence[ReleaseQuestion], *, with_group: bool) -> dict[str, dict[str, Mask]]:
    """``{dimension: {value: boolean mask}}`` over ``questions``, values in a stable order."""
    out: dict[str, dict[str, Mask]] = {}
    for dim, labels in _labels(questions, with_group=with_group).items():
        arr = np.array(labels, dtype=object)
        values = sorted(set(labels), key=lambda v: (_VALUE_ORDER.get(v, 3), v))
        out[dim] = {v: np.asarray(arr == v, dtype=bool) for v in values}
    return out


def _coverage(status: npt.NDArray[np.str_], mask: Mask) -> Coverage:
    picked = status[mask]
    count = {k: int(np.count_nonzero(picked == k)) for k in ("ok", "unparsed", "refused",
                                                             "missing")}
    return Coverage(total=int(picked.size), answered=count["ok"], unparsed=count["unparsed"],
                    refused=count["refused"], missing=count["missing"])


def _grounding_answers(questions: Sequence[GroundingQuestion],
                       preds: Mapping[tuple[str, int | None], Prediction],
                       issues: list[Issue]) -> tuple[list[tuple[Span, ...]],
                                                     list[tuple[float, ...] | None], list[str]]:
    """Predicted spans, scores and answer status of every grounding question."""
    spans: list[tuple[Span, ...]] = []
    scores: list[tuple[float, ...] | None] = []
    status: list[str] = []
    for q in questions:
        p = preds.get((q.question_id, None))
        if p is None:
            spans.append(())
            scores.append(None)
            status.append("missing")
            issues.append(Issue(q.question_id, None, "missing", "no prediction"))
        elif p.spans is not None:
            spans.append(p.spans)
            scores.append(p.scores)
            status.append("ok")
        else:
            parsed = parse_spans(p.response or "")
            spans.append(parsed.spans)
            scores.append(None)
            status.append(parsed.status)
            if parsed.status != "ok":
                issues.append(Issue(q.question_id, None, parsed.status, parsed.reason))
    return spans, scores, status


def _average_map(result: GroundingResult, mask: Mask) -> float:
    return result.average_map(mask=mask) if result.average_precision else 0.0


def _map_ci(result: GroundingResult, mask: Mask) -> tuple[float, float]:
    """Average mAP's interval: it is the mean over questions of each one's mean AP over the
    thresholds, so questions are the clusters."""
    if not result.average_precision:
        return (0.0, 0.0)
    per_question = np.mean([ap[mask] for ap in result.average_precision.values()], axis=0)
    return bootstrap_ci((per_question, np.ones(per_question.size)))


def _grounding_scores(result: GroundingResult, paper: GroundingResult, mask: Mask,
                      status: npt.NDArray[np.str_]) -> GroundingScores:
    """One breakdown row: exact-second metrics with intervals, second-set metrics beside."""
    targets = result.n_targets[mask].astype(np.float64)
    return GroundingScores(
        n_questions=int(mask.sum()), n_targets=int(targets.sum()),
        recall={m: result.recall(m, mask=mask) for m in result.recalled},
        map={t: result.mean_ap(t, mask=mask) for t in result.average_precision},
        average_map=_average_map(result, mask),
        set_tiou=result.mean_set_tiou(mask=mask), coverage=_coverage(status, mask),
        second_set=SecondSetScores(
            recall={m: paper.recall(m, mask=mask) for m in paper.recalled},
            map={t: paper.mean_ap(t, mask=mask) for t in paper.average_precision},
            average_map=_average_map(paper, mask), set_tiou=paper.mean_set_tiou(mask=mask)),
        recall_ci={m: bootstrap_ci((hits[mask].astype(np.float64), targets))
                   for m, hits in result.recalled.items()},
        average_map_ci=_map_ci(result, mask))


def _score_grounding(questions: Sequence[GroundingQuestion],
                     preds: Mapping[tuple[str, int | None], Prediction], issues: list[Issue], *,
                     recall_thresholds: Sequence[float], map_thresholds: Sequence[float],
                     ) -> dict[str, dict[str, GroundingScores]]:
    spans, scores, status = _grounding_answers(questions, preds, issues)
    primary, paper = (evaluate_grounding(
        [q.answer_spans for q in questions], spans, durations_s=[q.duration_s for q in questions],
        scores=scores, recall_thresholds=recall_thresholds, map_thresholds=map_thresholds,
        kind=kind) for kind in ("continuous", "second_set"))
    status_arr = np.array(status)
    return {dim: {value: _grounding_scores(primary, paper, mask, status_arr)
                  for value, mask in values.items()}
            for dim, values in _masks(questions, with_group=False).items()}


def _choice_answers(samples: Sequence[Sample],
                    preds: Mapping[tuple[str, int | None], Prediction],
                    issues: list[Issue]) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.str_]]:
    """``(n_samples, 4)`` arrays: whether each try is right, and its answer status."""
    correct = np.zeros((len(samples), N_TRIES), dtype=bool)
    status = np.full((len(samples), N_TRIES), "ok", dtype="<U8")
    for s, sample in enumerate(samples):
        for t, q in enumerate(sample):
            p = preds.get((q.question_id, t))
            if p is None:
                status[s, t] = "missing"
                issues.append(Issue(q.question_id, t, "missing", "no prediction"))
                continue
            parsed = parse_choice(p.response or "", options=q.options)
            status[s, t] = parsed.status
            if parsed.status != "ok":
                issues.append(Issue(q.question_id, t, parsed.status, parsed.reason))
            correct[s, t] = parsed.index == q.answer_index
    return correct, status


def _choice_scores(correct: npt.NDArray[np.bool_], status: npt.NDArray[np.str_],
                   mask: Mask) -> ChoiceScores:
    picked = correct[mask]
    return ChoiceScores(
        n_samples=int(mask.sum()),
        accuracy_by_try=tuple(float(v) for v in picked.mean(axis=0)),
        accuracy=float(picked.mean()), circular_accuracy=float(picked.all(axis=1).mean()),
        coverage=_coverage(status.ravel(), np.repeat(mask, N_TRIES)))


def _vnbench(samples: Sequence[Sample], circular: npt.NDArray[np.bool_]) -> VNBenchSummary | None:
    """Circular accuracy per VNBench task; per group and overall over the official tasks."""
    by_task: dict[str, list[bool]] = defaultdict(list)
    for sample, right in zip(samples, circular, strict=True):
        if sample[0].family == "vnbench":
            by_task[sample[0].task].append(bool(right))
    if not by_task:
        return None
    tasks = {t: float(np.mean(v)) for t, v in sorted(by_task.items())}
    averaged = [t for t in tasks if t in VNBENCH_TASKS] or list(tasks)
    groups = {g: float(np.mean(v)) for g, v in _group_means(
        {t: np.asarray([tasks[t]]) for t in averaged}).items()}
    overall_ci = stratified_ci({t: by_task[t] for t in averaged}, _overall)
    return VNBenchSummary(tasks=tasks, groups=groups, overall=float(np.mean(list(groups.values()))),
                          overall_ci=overall_ci,
                          samples={t: len(v) for t, v in sorted(by_task.items())})


def _group_means(task_means: Mapping[str, npt.NDArray[np.float64]]
                 ) -> dict[str, npt.NDArray[np.float64]]:
    """Retrieval, ordering and counting means (those present) of per-task means."""
    per_group: dict[str, list[npt.NDArray[np.float64]]] = defaultdict(list)
    for task, means in task_means.items():
        per_group[vnbench_group(task) or "other"].append(means)
    order: tuple[str, ...] = ("retrieval", "ordering", "counting")
    return {g: np.mean(per_group[g], axis=0) for g in order if g in per_group}


def _overall(task_means: Mapping[str, npt.NDArray[np.float64]]) -> npt.NDArray[np.float64]:
    """VNBench overall of per-task means (arrays over bootstrap resamples)."""
    return np.asarray(np.mean(list(_group_means(task_means).values()), axis=0))


def _score_choice(samples: Sequence[Sample], preds: Mapping[tuple[str, int | None], Prediction],
                  issues: list[Issue]) -> tuple[dict[str, dict[str, ChoiceScores]],
                                                VNBenchSummary | None]:
    correct, status = _choice_answers(samples, preds, issues)
    masks = _masks([s[0] for s in samples], with_group=True)
    table = {dim: {value: _choice_scores(correct, status, mask) for value, mask in values.items()}
             for dim, values in masks.items()}
    return table, _vnbench(samples, np.asarray(correct.all(axis=1), dtype=bool))


def score(
    questions: Sequence[ReleaseQuestion],
    predictions: Sequence[Prediction],
    *,
    recall_thresholds: Sequence[float] = DEFAULT_RECALL_THRESHOLDS,
    map_thresholds: Sequence[float] = DEFAULT_MAP_THRESHOLDS,
) -> ScoreReport:
    """Score predictions against a release's questions (definitions: ``docs/metrics.md``).

    Why one function for both families: a release may mix NeMo grounding and VNBench multiple
    choice; each section of the report is filled only when such questions exist.

    Raises:
        EvaluationError: inconsistent questions or unusable predictions (see the module
            docstring); nothing is scored then.
    """
    grounding, samples = _check_questions(questions)
    preds = _check_predictions(predictions, grounding_ids={q.question_id for q in grounding},
                               choice_ids={s[0].question_id for s in samples})
    issues: list[Issue] = []
    grounding_table = _score_grounding(
        grounding, preds, issues, recall_thresholds=recall_thresholds,
        map_thresholds=map_thresholds) if grounding else {}
    choice_table, vnbench = _score_choice(samples, preds, issues) if samples else ({}, None)
    return ScoreReport(grounding=grounding_table, choice=choice_table, vnbench=vnbench,
                       issues=tuple(issues))


def score_files(questions_path: str | Path, predictions_path: str | Path, *,
                recall_thresholds: Sequence[float] = DEFAULT_RECALL_THRESHOLDS,
                map_thresholds: Sequence[float] = DEFAULT_MAP_THRESHOLDS) -> ScoreReport:
    """Load both JSONL files and :func:`score` them: what a ``needleforge score`` command calls.

    A moment_detr submission (``pred_relevant_windows``) is scored against the grounding
    questions only, and the report adds the QVHighlights metrics beside ours.

    Raises:
        EvaluationError: an unreadable or malformed file (with path and line number), a
            moment_detr submission for a release without grounding questions, or any error
            of :func:`score`.
    """
    questions = load_questions(questions_path)
    predictions, layout = load_prediction_file(predictions_path)
    if layout == "needleforge":
        return score(questions, predictions, recall_thresholds=recall_thresholds,
                     map_thresholds=map_thresholds)
    grounding = [q for q in questions if isinstance(q, GroundingQuestion)]
    if not grounding:
        raise EvaluationError(f"{predictions_path} is a moment_detr submission, but "
                              f"{questions_path} holds no grounding question")
    report = score(grounding, predictions, recall_thresholds=recall_thresholds,
                   map_thresholds=map_thresholds)
    return dataclasses.replace(report, qvhighlights=qvhighlights_scores(grounding, predictions))
