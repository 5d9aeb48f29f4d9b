"""The scorer's report: metric values per breakdown, answer coverage, issues; JSON and Markdown.

Breakdowns are ``{dimension: {value: scores}}``; dimensions are ``all`` (value ``all``),
``family``, ``task``, ``bucket``, ``needles`` (``single`` when ``n_needles == 1``, else
``multi``), ``needle_type`` and, for multiple choice, ``group`` (VNBench retrieval / ordering /
counting). Only values that occur are listed, so no metric of an empty group is ever reported.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Literal, TypeAlias

from needleforge.evaluate.intervals import Interval

IssueKind: TypeAlias = Literal["missing", "unparsed", "refused"]
Breakdown: TypeAlias = Mapping[str, Mapping[str, Any]]
_SHOWN_ISSUES = 10


@dataclasses.dataclass(frozen=True, slots=True)
class Coverage:
    """How many questions (grounding) or tries (multiple choice) got a usable answer.

    ``answered`` + ``unparsed`` + ``refused`` + ``missing`` = ``total``; all but ``answered``
    score as wrong (empty prediction / wrong option).
    """

    total: int
    answered: int
    unparsed: int
    refused: int
    missing: int

    @property
    def refusal_rate(self) -> float:
        """Refused / total, as in NeMo's Table 11."""
        return self.refused / self.total if self.total else 0.0


@dataclasses.dataclass(frozen=True, slots=True)
class SecondSetScores:
    """The grounding metrics on the NeMo paper's whole-second sets (eq. 6–9), reported beside
    the primary ones so a figure can be compared with the paper's; never the headline, since
    rounding spans out to whole seconds inflates the overlap of short answer windows."""

    recall: Mapping[float, float]
    map: Mapping[float, float]
    average_map: float
    set_tiou: float


@dataclasses.dataclass(frozen=True, slots=True)
class GroundingScores:
    """Grounding metrics of one group; keys of ``recall`` and ``map`` are the tIoU thresholds.

    ``recall``, ``map``, ``average_map`` and ``set_tiou`` use tIoU on exact seconds (the
    primary figures); ``recall_ci`` and ``average_map_ci`` are their 95 % intervals (cluster
    bootstrap over questions, :mod:`needleforge.evaluate.intervals`); ``second_set`` holds the
    same metrics on the paper's whole-second sets.
    """

    n_questions: int
    n_targets: int
    recall: Mapping[float, float]
    map: Mapping[float, float]
    average_map: float
    set_tiou: float
    coverage: Coverage
    second_set: SecondSetScores
    recall_ci: Mapping[float, Interval]
    average_map_ci: Interval


@dataclasses.dataclass(frozen=True, slots=True)
class ChoiceScores:
    """Multiple-choice metrics of one group of samples (each sample has 4 tries).

    ``accuracy_by_try[t]`` is the share of samples whose try ``t`` is right, ``accuracy`` the
    share of all tries, ``circular_accuracy`` the share of samples with every try right.
    """

    n_samples: int
    accuracy_by_try: tuple[float, ...]
    accuracy: float
    circular_accuracy: float
    coverage: Coverage


@dataclasses.dataclass(frozen=True, slots=True)
class VNBenchSummary:
    """VNBench's headline: circular accuracy per task, per group (mean of its tasks), overall.

    ``tasks`` lists every task, Long and Act included; ``groups`` and ``overall`` (the mean
    of the group means present, all three in a full run) average only VNBench's 9 official
    tasks, as VideoNIAH's own evaluation does (all tasks when none of the 9 is present).
    ``overall_ci`` is the overall's 95 % interval (samples resampled within each task);
    ``samples`` the number of samples of each task.
    """

    tasks: Mapping[str, float]
    groups: Mapping[str, float]
    overall: float
    overall_ci: Interval = (0.0, 1.0)
    samples: Mapping[str, int] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True, slots=True)
class QVHighlightsScores:
    """Moment retrieval in moment_detr's conventions (:mod:`needleforge.evaluate.qvhighlights`).

    Keys of ``r1`` and ``map`` are tIoU thresholds; ``range_map`` holds the average mAP of the
    short, middle and long ground-truth windows, None for a range with no window.
    """

    n_queries: int
    r1: Mapping[float, float]
    map: Mapping[float, float]
    average_map: float
    range_map: Mapping[str, float | None]


@dataclasses.dataclass(frozen=True, slots=True)
class Issue:
    """A question (or try) that scored as wrong without a usable answer, and why."""

    question_id: str
    try_index: int | None
    kind: IssueKind
    reason: str


@dataclasses.dataclass(frozen=True, slots=True)
class ScoreReport:
    """Everything :func:`needleforge.evaluate.score` measured; empty sections are empty dicts.

    ``qvhighlights`` is set when the predictions were a moment_detr submission.
    """

    grounding: Mapping[str, Mapping[str, GroundingScores]]
    choice: Mapping[str, Mapping[str, ChoiceScores]]
    vnbench: VNBenchSummary | None
    issues: tuple[Issue, ...]
    qvhighlights: QVHighlightsScores | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict (threshold keys become strings such as ``"0.7"``)."""
        return {
            "grounding": _jsonable(self.grounding),
            "choice": _jsonable(self.choice),
            "vnbench": _jsonable(self.vnbench),
            "qvhighlights": _jsonable(self.qvhighlights),
            "issues": [dict(_jsonable(i), **{"try": i.try_index}) for i in self.issues],
            "issue_counts": self.issue_counts(),
        }

    def issue_counts(self) -> dict[str, int]:
        """How many issues of each kind (missing, unparsed, refused)."""
        counts = {"missing": 0, "unparsed": 0, "refused": 0}
        for issue in self.issues:
            counts[issue.kind] += 1
        return counts

    def to_markdown(self) -> str:
        """A short Markdown rendering: one table per section, then the first issues."""
        parts = ["# Scores", ""]
        if self.grounding:
            parts += ["## Grounding", "", _GROUNDING_NOTE, "", *_grounding_table(self.grounding),
                      ""]
        if self.choice:
            parts += ["## Multiple choice", "", *_choice_table(self.choice), ""]
        if self.vnbench is not None:
            groups = ", ".join(f"{g} {_pct(v)}" for g, v in self.vnbench.groups.items())
            parts += [f"**VNBench overall** {_pct(self.vnbench.overall)} "
                      f"{_interval(self.vnbench.overall_ci)} ({groups}; the 9 official tasks, "
                      "as VNBench's own evaluation averages them; 95 % interval, samples "
                      "resampled within each task)", ""]
        if self.qvhighlights is not None:
            parts += [*_qvhighlights_lines(self.qvhighlights), ""]
        counts = self.issue_counts()
        parts.append("Issues: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
        for issue in self.issues[:_SHOWN_ISSUES]:
            try_part = "" if issue.try_index is None else f" try {issue.try_index}"
            parts.append(f"- `{issue.question_id}`{try_part}: {issue.kind} ({issue.reason})")
        if len(self.issues) > _SHOWN_ISSUES:
            parts.append(f"- … and {len(self.issues) - _SHOWN_ISSUES} more")
        return "\n".join(parts) + "\n"


def _jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)
                if f.name != "try_index"}
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_jsonable(v) for v in value]
    return value


def _pct(value: float) -> str:
    return f"{100 * value:.2f}"


def _interval(ci: Interval) -> str:
    return f"[{100 * ci[0]:.1f}–{100 * ci[1]:.1f}]"


_GROUNDING_NOTE = (
    "tIoU on exact seconds (the primary figures, as moment_detr measures it; R@1x and avg mAP "
    "of `all` with their 95 % intervals); the columns marked `(s)` use the NeMo paper's "
    "whole-second sets (eq. 6–9), which round every span out to whole seconds and so "
    "inflate the overlap of short answer windows.")


def _qvhighlights_lines(q: QVHighlightsScores) -> list[str]:
    ranges = ", ".join(f"{name} {'n/a' if v is None else _pct(v)}"
                       for name, v in q.range_map.items())
    return ["## QVHighlights conventions (moment_detr standalone_eval)", "",
            f"R1@0.5 {_pct(q.r1[0.5])}, R1@0.7 {_pct(q.r1[0.7])}, mAP {_pct(q.average_map)} "
            f"(mAP@0.5 {_pct(q.map[0.5])}, mAP@0.75 {_pct(q.map[0.75])}; by window length: "
            f"{ranges}) over {q.n_queries} queries"]


def _rows(breakdown: Breakdown) -> list[tuple[str, Any]]:
    return [("all" if dim == "all" else f"{dim}={value}", scores)
            for dim, values in breakdown.items() for value, scores in values.items()]


def _grounding_table(breakdown: Mapping[str, Mapping[str, GroundingScores]]) -> list[str]:
    first = next(iter(next(iter(breakdown.values())).values()))
    recall_cols = [f"R@1x {t}" for t in first.recall]
    head = ["group", "n", *recall_cols, "avg mAP", "tIoU", *(f"{c} (s)" for c in recall_cols),
            "avg mAP (s)", "tIoU (s)", "refused", "unparsed", "missing"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, s in _rows(breakdown):
        cov, paper = s.coverage, s.second_set
        recall = [_pct(v) for v in s.recall.values()]
        average_map = _pct(s.average_map)
        if name == "all":
            recall = [f"{v} {_interval(s.recall_ci[t])}"
                      for v, t in zip(recall, s.recall, strict=True)]
            average_map += f" {_interval(s.average_map_ci)}"
        cells = [name, str(s.n_questions), *recall, average_map, _pct(s.set_tiou),
                 *(_pct(v) for v in paper.recall.values()), _pct(paper.average_map),
                 _pct(paper.set_tiou), str(cov.refused), str(cov.unparsed), str(cov.missing)]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _choice_table(breakdown: Mapping[str, Mapping[str, ChoiceScores]]) -> list[str]:
    head = ["group", "samples", "try 0", "try 1", "try 2", "try 3", "accuracy", "circular",
            "refused", "unparsed", "missing"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, s in _rows(breakdown):
        cov = s.coverage
        cells = [name, str(s.n_samples), *(_pct(v) for v in s.accuracy_by_try),
                 _pct(s.accuracy), _pct(s.circular_accuracy), str(cov.refused),
                 str(cov.unparsed), str(cov.missing)]
        lines.append("| " + " | ".join(cells) + " |")
    return lines
