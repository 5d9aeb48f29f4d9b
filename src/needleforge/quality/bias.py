"""The bias audit of a release: can its answers be guessed without watching the videos?

Computed from the release's question records alone (``questions.jsonl`` objects), so the
gate, the card and the manifest all describe exactly what ships:

- **answer positions** — a histogram (10 bins) of the relative start of every answer span
  (each span of a multi-needle question counts: the earliest of several well-spread needles
  sits early by construction, 27 % in the first tenth for 3 uniform starts, which would read
  as a bias; multi-needle spans are also counted apart), the share of spans in the first
  tenth and at 0 s, and the p-value of a chi-square test that the single-needle questions'
  *depth* (start / (duration - answer length): where the answer sits among the starts it
  could have) is flat — the relative start itself cannot be (no answer starts in the last
  answer-length of its video);
- **option texts** — per counting and ordering task, how often each text is the right one
  (one count per sample), and for counting the rank of the right number among the four;
- **letters** — per try, how often the answer is A, B, C or D, and the chi-square p-value of
  try 0 against even letters (every try is a rotation of try 0, so pooled tries are always
  even);
- **blind baselines** (:mod:`needleforge.evaluate.blind`) — each one's score, averaged over
  :data:`FOLD_SPLITS` cross-fits (fold splits), with a cluster-bootstrap confidence interval
  (questions, or samples of 4 tries, resampled), beside the random baseline's *expected*
  score on the same questions: 1 / options for multiple choice, the mean over
  :data:`RANDOM_DRAWS` draws of the random baseline's spans for grounding. A question a prior
  has no opinion on counts at that expectation (its random fallback answer would add noise).

Scores are Recall@1x at tIoU :data:`AUDIT_TIOU` for grounding (the scorer's lower threshold,
where a prior shows first; tIoU on exact seconds, the scorer's primary definition) and
accuracy per try for multiple choice, per VNBench group (retrieval, ordering, counting: a
prior lives in one kind of task; circular accuracy would hide a letter bias, since each
rotation moves the answer).

A baseline *fails* when even the low end of its interval beats random by more than the margin
(``quality.blind_margin``): the release can be answered blind by more than the margin beyond
the sampling error of its questions. The intervals hold at 95 % *together* (Bonferroni over
the audit's ~12 blind rows), since the gate fails a release on any one of them. Why not the
point score: a sample release has ~120 grounding questions and (since issue 35) 40 VNBench
samples per group, 8 before, so a blind score's standard error is 2–3 points (grounding) and
4–7 points (a group; 8–15 at 8 samples); over 60 seeds of the studio recipe at 8 samples per
group (``tests/quality/bias_cases.py``) a point-score gate at 3 points failed 48 balanced
releases on noise and this one none, while planted biases (every answer in the first tenth,
every count "1") failed all 60.
Everything is seeded, so the same records give the same audit, byte for byte.
"""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from needleforge.errors import EvaluationError
from needleforge.evaluate.baselines import RandomBaseline
from needleforge.evaluate.blind import (
    BLIND_NAMES,
    POSITION_BINS,
    blind_baseline,
    first_span,
    prior_answers,
    random_end_s,
)
from needleforge.evaluate.intervals import Outcomes, bootstrap_ci
from needleforge.evaluate.metrics import evaluate_grounding
from needleforge.evaluate.parse import parse_choice
from needleforge.evaluate.prompts import AnswerKind
from needleforge.evaluate.records import (
    ChoiceQuestion,
    GroundingQuestion,
    Prediction,
    ReleaseQuestion,
    Span,
    question_from_json,
    vnbench_group,
)
from needleforge.records.questions import LETTERS

if TYPE_CHECKING:
    import pandas as pd

AUDIT_TIOU = 0.5
RANDOM_DRAWS = 256
#: Confidence of the audit's intervals *together* (Bonferroni over its blind rows).
CONFIDENCE = 0.95
#: Fold splits each blind baseline is cross-fitted over (scores averaged): less split luck.
FOLD_SPLITS = 4
#: Which answers each blind baseline has a prior for (it answers the rest as random does).
SCOPES: Mapping[str, tuple[AnswerKind, ...]] = {
    "position_prior": ("grounding",), "length_prior": ("grounding",),
    "text_only": ("grounding", "choice"), "option_prior": ("choice",),
    "letter_prior": ("choice",),
}
METRICS: Mapping[AnswerKind, str] = {"grounding": f"R@1x tIoU {AUDIT_TIOU:g} (exact seconds)",
                               "choice": "accuracy per try"}
_AT_ZERO_S = 0.05


@dataclasses.dataclass(frozen=True, slots=True)
class BaselineScore:
    """One baseline's score on one kind of question (multiple choice: one VNBench ``group``),
    its interval (95 % together with the audit's other rows), and random's."""

    baseline: str
    kind: AnswerKind
    n: int
    score: float
    ci_low: float
    ci_high: float
    random: float
    group: str | None = None

    @property
    def metric(self) -> str:
        """The metric's name (:data:`METRICS`), with the group it is measured on."""
        return METRICS[self.kind] + (f" ({self.group})" if self.group else "")

    @property
    def excess(self) -> float:
        """Score minus the random baseline's expected score (a fraction: 0.03 = 3 points)."""
        return self.score - self.random

    @property
    def excess_low(self) -> float:
        """The low end of the interval minus random: how far above random the baseline is at
        least, beyond sampling error (what the gate bounds by the margin)."""
        return self.ci_low - self.random

    def exceeds(self, margin: float) -> bool:
        """Whether even the low end of the interval beats random by more than ``margin``."""
        return self.excess_low > margin

    def summary(self) -> str:
        """``"12.3 % [CI 8.0–17.1] vs random 6.5 %"``."""
        return (f"{100 * self.score:.1f} % [CI {100 * self.ci_low:.1f}–"
                f"{100 * self.ci_high:.1f}] vs random {100 * self.random:.1f} %")

    def to_dict(self) -> dict[str, Any]:
        return {"baseline": self.baseline, "kind": self.kind, "metric": self.metric,
                "n": self.n, "score": _r(self.score), "ci_low": _r(self.ci_low),
                "ci_high": _r(self.ci_high), "random": _r(self.random),
                "excess": _r(self.excess), "excess_low": _r(self.excess_low)}


@dataclasses.dataclass(frozen=True, slots=True)
class BiasAudit:
    """What :func:`audit_release` found (see the module docstring for each part).

    ``position_bins`` counts the answer spans (``n_spans`` of them, every span of every
    grounding question) per tenth of the video they start in, ``multi_bins`` those of the
    multi-needle questions, ``first_tenth`` and ``at_zero`` are shares of the spans;
    ``position_p`` tests the single-needle questions' depth for flatness.
    ``options`` maps a counting or ordering task to ``{right text: samples}``;
    ``ranks`` a counting task to how often the right number is the 1st..4th smallest option;
    ``letters`` a try to its right-letter counts (A..D). ``margin`` is the gate's allowance.
    """

    n_grounding: int
    n_spans: int
    position_bins: tuple[int, ...]
    multi_bins: tuple[int, ...]
    position_p: float | None
    first_tenth: float | None
    at_zero: float | None
    options: Mapping[str, Mapping[str, int]]
    ranks: Mapping[str, tuple[int, ...]]
    letters: Mapping[int, tuple[int, ...]]
    letter_p: float | None
    scores: tuple[BaselineScore, ...]
    margin: float

    def failing(self) -> list[BaselineScore]:
        """Blind baselines beating random by more than the margin beyond sampling error."""
        return [s for s in self.scores if s.baseline != "random" and s.exceeds(self.margin)]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (what ``manifest.json`` holds under ``bias_audit``)."""
        return {
            "margin": self.margin, "passed": not self.failing(),
            "positions": {"n": self.n_grounding, "n_spans": self.n_spans,
                          "bins": list(self.position_bins),
                          "multi_needle_bins": list(self.multi_bins),
                          "single_needle_depth_flat_p": _r(self.position_p),
                          "first_tenth": _r(self.first_tenth),
                          "at_zero": _r(self.at_zero)},
            "options": {t: dict(sorted(c.items())) for t, c in sorted(self.options.items())},
            "counting_ranks": {t: list(r) for t, r in sorted(self.ranks.items())},
            "letters": {str(t): list(c) for t, c in sorted(self.letters.items())},
            "letters_flat_p": _r(self.letter_p),
            "baselines": [s.to_dict() for s in self.scores],
        }


def _r(value: float | None) -> float | None:
    return None if value is None else round(float(value), 4)


def flat_p(counts: Sequence[int]) -> float | None:
    """p-value of a chi-square test of ``counts`` against equal expected counts
    (:func:`scipy.stats.chisquare`); None when there is nothing to test."""
    if sum(counts) == 0 or len(counts) < 2:
        return None
    from scipy import stats  # ~2 s to import: only audits pay it

    return float(stats.chisquare(counts).pvalue)


def read_questions(records: Sequence[Any]) -> list[ReleaseQuestion]:
    """The records that load as scorer questions, first of each key; the others are left to
    the release suite, which names them (the audit never raises on bad records)."""
    questions: dict[tuple[str, int | None], ReleaseQuestion] = {}
    for record in records:
        try:
            question = question_from_json(record)
        except EvaluationError:
            continue
        questions.setdefault(question.key, question)
    return list(questions.values())


def _span_tenths(questions: Sequence[GroundingQuestion]) -> list[int]:
    """The tenth of its video each answer span starts in (every span of every question)."""
    return [min(int(max(0.0, start / q.duration_s) * POSITION_BINS), POSITION_BINS - 1)
            for q in questions for start, _ in q.answer_spans]


def _bins(questions: Sequence[GroundingQuestion]) -> tuple[int, ...]:
    """Answer spans per tenth of the video they start in."""
    counts = Counter(_span_tenths(questions))
    return tuple(counts[b] for b in range(POSITION_BINS))


def depth(question: GroundingQuestion) -> float:
    """Where a single answer starts among the starts it could have had, in [0, 1]."""
    start, end = first_span(question)
    room = question.duration_s - (end - start)
    return min(1.0, max(0.0, start / room)) if room > 0 else 0.0


def _positions(grounding: Sequence[GroundingQuestion]) -> dict[str, Any]:
    single = [q for q in grounding if len(q.answer_spans) == 1]
    depths = Counter(min(int(depth(q) * POSITION_BINS), POSITION_BINS - 1) for q in single)
    bins = _bins(grounding)
    spans = sum(bins)
    at_zero = sum(start <= _AT_ZERO_S for q in grounding for start, _ in q.answer_spans)
    return {"n_grounding": len(grounding), "n_spans": spans, "position_bins": bins,
            "multi_bins": _bins([q for q in grounding if len(q.answer_spans) > 1]),
            "position_p": flat_p([depths[b] for b in range(POSITION_BINS)]) if single
            else None,
            "first_tenth": bins[0] / spans if spans else None,
            "at_zero": at_zero / spans if spans else None}


def _options(choice: Sequence[ChoiceQuestion]) -> tuple[dict[str, dict[str, int]],
                                                        dict[str, tuple[int, ...]]]:
    """Right texts per counting/ordering task and ranks of the right count (one per sample)."""
    texts: dict[str, Counter[str]] = defaultdict(Counter)
    ranks: dict[str, Counter[int]] = defaultdict(Counter)
    for q in choice:
        group = vnbench_group(q.task)
        if q.try_index != 0 or group not in ("counting", "ordering"):
            continue
        texts[q.task][q.answer_text.strip()] += 1
        numbers = [o.strip() for o in q.options]
        if group == "counting" and all(n.isdigit() for n in numbers):
            ranks[q.task][sorted(numbers, key=int).index(q.answer_text.strip())] += 1
    return ({t: dict(c) for t, c in texts.items()},
            {t: tuple(c[i] for i in range(len(LETTERS))) for t, c in ranks.items()})


def _letters(choice: Sequence[ChoiceQuestion]) -> dict[int, tuple[int, ...]]:
    per_try: dict[int, Counter[int]] = defaultdict(Counter)
    for q in choice:
        per_try[q.try_index][q.answer_index] += 1
    return {t: tuple(c[i] for i in range(len(LETTERS))) for t, c in per_try.items()}


def _grounding_hits(questions: Sequence[GroundingQuestion],
                    spans: Sequence[Sequence[Sequence[Span]]]) -> npt.NDArray[np.float64]:
    """Targets recalled per question at :data:`AUDIT_TIOU`, averaged over the span sets
    (``spans[d][i]``: the predicted spans of question ``i`` in set ``d``)."""
    repeats = len(spans)
    result = evaluate_grounding(
        [q.answer_spans for q in questions] * repeats, [s for one in spans for s in one],
        durations_s=[q.duration_s for q in questions] * repeats,
        recall_thresholds=(AUDIT_TIOU,), map_thresholds=())
    hits = result.recalled[AUDIT_TIOU].reshape(repeats, len(questions))
    return np.asarray(hits.mean(axis=0), dtype=np.float64)


def random_spans(questions: Sequence[GroundingQuestion], *, draws: int = RANDOM_DRAWS,
                 seed: int = 0) -> list[list[tuple[Span]]]:
    """``draws`` sets of spans drawn as the random baseline draws them (a uniform length in
    its ``span_s``, a uniform start in the sampled range, tenths of a second), vectorised:
    what its expected score is averaged over."""
    low, high = RandomBaseline().span_s
    ends = np.array([random_end_s(q) for q in questions])
    rng = np.random.default_rng(seed)
    lengths = np.minimum(rng.uniform(low, high, size=(draws, len(ends))), ends)
    starts = rng.uniform(0.0, 1.0, size=lengths.shape) * (ends - lengths)
    starts, stops = np.round(starts, 1), np.round(starts + lengths, 1)
    return [[((float(a), float(b)),) for a, b in zip(row_a, row_b, strict=True)]
            for row_a, row_b in zip(starts, stops, strict=True)]


def _clusters(keys: Sequence[str], num: Sequence[float], den: Sequence[float]) -> Outcomes:
    """Sum numerators and denominators per cluster (a question, or a sample's tries)."""
    index: dict[str, int] = {}
    for key in keys:
        index.setdefault(key, len(index))
    n, d = np.zeros(len(index)), np.zeros(len(index))
    for key, a, b in zip(keys, num, den, strict=True):
        n[index[key]] += a
        d[index[key]] += b
    return n, d


def _score(name: str, kind: AnswerKind, outcomes: Outcomes, random: float, *, n: int,
           seed: int, level: float) -> BaselineScore:
    num, den = outcomes
    low, high = bootstrap_ci(outcomes, seed=seed, level=level)
    return BaselineScore(baseline=name, kind=kind, n=n, score=float(num.sum() / den.sum()),
                         ci_low=low, ci_high=high, random=random)


def _grounding_scores(grounding: Sequence[GroundingQuestion],
                      answers: Mapping[str, Sequence[Sequence[Prediction | None]]], *, seed: int,
                      level: float) -> list[BaselineScore]:
    """Recall@1x of each baseline; a question a prior has no opinion on counts at the random
    baseline's expected recall for it (its realised random answer would only add noise)."""
    keys = [q.question_id for q in grounding]
    targets = [float(len(q.answer_spans)) for q in grounding]
    random_hits = _grounding_hits(grounding, random_spans(grounding, seed=seed))
    random_outcomes = _clusters(keys, list(random_hits), targets)
    expected = float(random_outcomes[0].sum() / random_outcomes[1].sum())
    scores = [_score("random", "grounding", random_outcomes, expected, n=len(grounding),
                     seed=seed, level=level)]
    for name, runs in answers.items():
        found = _grounding_hits(grounding, [[p.spans or () if p else () for p in preds]
                                            for preds in runs])
        share = np.mean([[p is not None for p in preds] for preds in runs], axis=0)
        # hits where the prior answered, plus random's expectation where it did not
        hits = found + (1.0 - share) * random_hits
        scores.append(_score(name, "grounding", _clusters(keys, list(hits), targets), expected,
                             n=len(grounding), seed=seed, level=level))
    return scores


#: VNBench groups, in report order; a task of none of them is "other".
GROUPS = ("retrieval", "ordering", "counting", "other")


def _right(question: ChoiceQuestion, answer: Prediction | None) -> float:
    """1 for a right answer, 0 for a wrong one, chance (1 / options) for no opinion."""
    if answer is None:
        return 1.0 / len(question.options)
    picked = parse_choice(answer.response or "", options=question.options).index
    return float(picked == question.answer_index)


def _choice_scores(choice: Sequence[ChoiceQuestion],
                   answers: Mapping[str, Sequence[Sequence[Prediction | None]]], *, seed: int,
                   level: float) -> list[BaselineScore]:
    """Accuracy per try of each baseline, per VNBench group: a prior lives in one kind of
    task (counts, orders, names), and pooled over all tries it would be diluted by the
    others (every count "1" moves a third of the tries). A try a prior has no opinion on
    counts at chance."""
    right = {name: np.mean([[_right(q, p) for q, p in zip(choice, preds, strict=True)]
                            for preds in runs], axis=0) for name, runs in answers.items()}
    groups = [vnbench_group(q.task) or "other" for q in choice]
    scores: list[BaselineScore] = []
    for group in GROUPS:
        picked = [i for i, g in enumerate(groups) if g == group]
        if not picked:
            continue
        keys = [choice[i].question_id for i in picked]
        ones = [1.0] * len(picked)
        chance = _clusters(keys, [1.0 / len(choice[i].options) for i in picked], ones)
        expected = float(chance[0].sum() / chance[1].sum())
        scores.append(BaselineScore("random", "choice", len(picked), expected, expected,
                                    expected, expected, group))  # exact: no interval
        for name, outcomes in right.items():
            score = _score(name, "choice", _clusters(keys, [outcomes[i] for i in picked],
                                                     ones), expected, n=len(picked), seed=seed,
                           level=level)
            scores.append(dataclasses.replace(score, group=group))
    return scores


def _blind_answers(questions: Sequence[ReleaseQuestion], *, seed: int, repeats: int
                   ) -> dict[AnswerKind, dict[str, list[list[Prediction | None]]]]:
    """Every blind baseline's cross-fitted answers (``repeats`` fold splits; None: no
    opinion), split by the kind they have a prior for."""
    out: dict[AnswerKind, dict[str, list[list[Prediction | None]]]] = {"grounding": {},
                                                                 "choice": {}}
    for name in BLIND_NAMES:
        for r in range(repeats):
            predictions = prior_answers(questions, blind_baseline(name), seed=seed + r)
            for kind in SCOPES[name]:
                wanted = GroundingQuestion if kind == "grounding" else ChoiceQuestion
                out[kind].setdefault(name, []).append(
                    [p for q, p in zip(questions, predictions, strict=True)
                     if isinstance(q, wanted)])
    return out


def _row_level(grounding: Sequence[GroundingQuestion], choice: Sequence[ChoiceQuestion]
               ) -> float:
    """Each row's confidence so that all the blind rows hold together at :data:`CONFIDENCE`
    (Bonferroni): the gate tests them all, and one row in twelve would fail a sound release
    at 95 % each."""
    rows = sum(len(kinds) for kinds in SCOPES.values())
    grounding_rows = sum("grounding" in kinds for kinds in SCOPES.values())
    groups = {vnbench_group(q.task) or "other" for q in choice}
    k = (grounding_rows if grounding else 0) + (rows - grounding_rows) * len(groups)
    return 1 - (1 - CONFIDENCE) / max(k, 1)


def audit_release(records: Sequence[Any], *, margin: float = 0.03, seed: int = 0,
                  repeats: int = FOLD_SPLITS) -> BiasAudit:
    """Audit a release's question records (see the module docstring); never raises on bad
    records (they are skipped: the release suite names them).

    Raises:
        ValueError: ``margin`` is not in [0, 1].
    """
    if not 0 <= margin <= 1:
        raise ValueError(f"{margin = } must be a fraction in [0, 1] (0.03 = 3 points)")
    questions = read_questions(records)
    grounding = [q for q in questions if isinstance(q, GroundingQuestion)]
    choice = [q for q in questions if isinstance(q, ChoiceQuestion)]
    options, ranks = _options(choice)
    letters = _letters(choice)
    answers = _blind_answers(questions, seed=seed, repeats=repeats)
    level = _row_level(grounding, choice)
    scores = ((_grounding_scores(grounding, answers["grounding"], seed=seed, level=level)
               if grounding else [])
              + (_choice_scores(choice, answers["choice"], seed=seed, level=level) if choice
                 else []))
    return BiasAudit(
        **_positions(grounding), options=options, ranks=ranks, letters=letters,
        letter_p=flat_p(letters[0]) if 0 in letters else None, scores=tuple(scores),
        margin=margin)


#: Columns of the GX frame of the ``release_bias`` suite, in order.
BIAS_COLUMNS: tuple[str, ...] = ("baseline", "metric", "n", "score", "random", "excess",
                                 "excess_low", "ci_low", "ci_high", "summary")


def bias_frame(audit: BiasAudit) -> pd.DataFrame:
    """One row per blind baseline score (random's rows left out: they are the reference)."""
    import pandas as pd

    rows = [{"baseline": s.baseline, "metric": s.metric, "n": s.n, "score": s.score,
             "random": s.random, "excess": s.excess, "excess_low": s.excess_low,
             "ci_low": s.ci_low, "ci_high": s.ci_high,
             "summary": s.summary()} for s in audit.scores if s.baseline != "random"]
    return pd.DataFrame.from_records(rows, columns=list(BIAS_COLUMNS))
