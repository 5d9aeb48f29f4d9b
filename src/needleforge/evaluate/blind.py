"""Blind baselines: answers from a release's metadata and question text, never its pixels.

A needle benchmark is only worth its score if its answers cannot be guessed from priors. Each
blind baseline here learns one prior from *other* questions of the same release and answers
with it; none opens a video (they get no release folder at all):

- ``position_prior`` — the relative start where answer spans most often begin (the fullest of
  10 bins of ``start / duration``, its median), holding the random baseline's span length, so
  it differs from random by position only;
- ``length_prior`` — the typical answer length (median, seconds) placed at that position;
- ``text_only`` — TF-IDF bag of words, the ``k`` nearest questions: their median relative
  start and length (grounding), or a vote for the option text that was right for them;
- ``option_prior`` — per task, the option text most often right when it is offered
  (right / offered, Laplace-smoothed towards 1/4): "the most frequent correct option text",
  normalised by how often each text is shown, so a text that is common only because it is
  offered often gains nothing;
- ``letter_prior`` — per try, the letter most often right.

**Cross-fitting**: questions are dealt into :data:`N_FOLDS` folds by video (all the questions
and tries sharing a video go together, so a montage's or sample's answers never leak), evenly
within each task; each fold is answered by a prior fitted on the others. A question outside a
baseline's scope, or one it has no opinion on (a tie between options), gets exactly the
:class:`~needleforge.evaluate.baselines.RandomBaseline` answer (seed 0, the 16 frame instants
of the evaluate stage), so a blind baseline's margin over random is its prior's alone.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt

import needleforge
from needleforge.backends.openai.client import TimedFrame
from needleforge.errors import EvaluationError
from needleforge.evaluate.baselines import RandomBaseline
from needleforge.evaluate.frame_sampling import sample_times
from needleforge.evaluate.load import load_questions
from needleforge.evaluate.parse import parse_spans
from needleforge.evaluate.records import (
    LETTERS,
    ChoiceQuestion,
    GroundingQuestion,
    Prediction,
    ReleaseQuestion,
    Span,
)

BLIND_NAMES: tuple[str, ...] = ("position_prior", "length_prior", "text_only", "option_prior",
                                "letter_prior")
N_FOLDS = 2
#: Frame instants the random fallback is given: the evaluate stage's ``--max-frames 16``.
RANDOM_FRAMES = 16
POSITION_BINS = 10
TEXT_NEIGHBOURS = 5
_WORD_RE = re.compile(r"[a-z0-9]+")
#: The random fallback reads frame times only: every frame is this 1x1 black image.
_NO_PIXELS = np.zeros((1, 1, 3), dtype=np.uint8)
#: A fitted prior: a question's answer, or None when it has no opinion (random answers then).
Fitted = Callable[[ReleaseQuestion], Prediction | None]


class BlindBaseline(Protocol):
    """A prior fitted on some questions of a release and asked about the others."""

    name: str

    def fit(self, train: Sequence[ReleaseQuestion]) -> Fitted:
        """The prior of ``train``, as a function answering other questions."""


def _hash(*parts: object) -> int:
    key = ":".join(str(p) for p in parts).encode()
    return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big")


@functools.lru_cache(maxsize=4096)
def _frames(duration_s: float) -> tuple[TimedFrame, ...]:
    """The frame instants the evaluate stage gives a video of ``duration_s`` (no pixels)."""
    return tuple((t, _NO_PIXELS) for t in sample_times(duration_s, max_frames=RANDOM_FRAMES))


def random_end_s(question: ReleaseQuestion) -> float:
    """The end of the time range the random baseline draws spans in for ``question``."""
    return _frames(question.duration_s)[-1][0] + 0.5


def random_answer(question: ReleaseQuestion, *, seed: int = 0) -> Prediction:
    """What the random baseline answers (seed ``seed``, :data:`RANDOM_FRAMES` instants)."""
    frames = _frames(question.duration_s)
    model = RandomBaseline(seed=seed)
    if isinstance(question, ChoiceQuestion):
        letter = model.answer(frames, question.question, kind="choice", options=question.options)
        return Prediction(question_id=question.question_id, try_index=question.try_index,
                          response=letter)
    text = model.answer(frames, question.question, kind="grounding")
    return Prediction(question_id=question.question_id, spans=parse_spans(text).spans)


def _choose(question: ChoiceQuestion, scores: Sequence[float], *, seed: int = 0
            ) -> Prediction | None:
    """The best-scoring option; ties broken by a draw seeded by the try, None if all tie."""
    best = [i for i, s in enumerate(scores) if s == max(scores)]
    if len(best) == len(scores):
        return None
    pick = best[_hash(seed, question.question_id, question.try_index) % len(best)]
    return Prediction(question_id=question.question_id, try_index=question.try_index,
                      response=LETTERS[pick])


def first_span(question: GroundingQuestion) -> Span:
    """The earliest answer span (records list spans in needle order, not time order)."""
    return min(question.answer_spans)


def relative_start(question: GroundingQuestion) -> float:
    """Where the earliest answer span starts, as a fraction of the video, in [0, 1]."""
    return min(1.0, max(0.0, first_span(question)[0] / question.duration_s))


def _place(question: GroundingQuestion, relative: float, length_s: float) -> Prediction:
    """One span of ``length_s`` starting at ``relative`` of the video, kept inside it."""
    duration = question.duration_s
    length = min(max(length_s, 0.0), duration)
    start = min(max(relative, 0.0) * duration, duration - length)
    return Prediction(question_id=question.question_id, spans=((start, start + length),))


def _random_length(question: GroundingQuestion) -> float:
    spans = random_answer(question).spans or ((0.0, 0.0),)
    return spans[0][1] - spans[0][0]


def modal_start(starts: Sequence[float], *, bins: int = POSITION_BINS) -> float:
    """The median of the relative starts in the fullest of ``bins`` equal bins (lowest first
    on ties): where answers most often begin.

    Raises:
        EvaluationError: no starts to fit.
    """
    if not starts:
        raise EvaluationError("no grounding questions to fit a position prior on")
    counts = Counter(min(int(s * bins), bins - 1) for s in starts)
    fullest = min(counts, key=lambda b: (-counts[b], b))
    return statistics.median(s for s in starts if min(int(s * bins), bins - 1) == fullest)


def _at_modal_start(train: Sequence[ReleaseQuestion], *, bins: int,
                    length: Callable[[GroundingQuestion], float]) -> Fitted:
    """Answer grounding questions with a span of ``length(q)`` at ``train``'s modal start."""
    starts = [relative_start(q) for q in train if isinstance(q, GroundingQuestion)]
    if not starts:
        return lambda question: None
    where = modal_start(starts, bins=bins)
    return lambda q: _place(q, where, length(q)) if isinstance(q, GroundingQuestion) else None


class PositionPrior:
    """Grounding: the random baseline's span moved to where answers most often start."""

    name = "position_prior"

    def __init__(self, *, bins: int = POSITION_BINS) -> None:
        self.bins = bins

    def fit(self, train: Sequence[ReleaseQuestion]) -> Fitted:
        """Fit the modal relative start of ``train``'s grounding questions; the span keeps
        the random baseline's length (no length prior)."""
        return _at_modal_start(train, bins=self.bins, length=_random_length)


class LengthPrior:
    """Grounding: the typical answer length (median seconds) at the modal start."""

    name = "length_prior"

    def __init__(self, *, bins: int = POSITION_BINS) -> None:
        self.bins = bins

    def fit(self, train: Sequence[ReleaseQuestion]) -> Fitted:
        """Fit the modal relative start and the median earliest-span length of ``train``."""
        lengths = [first_span(q)[1] - first_span(q)[0] for q in train
                   if isinstance(q, GroundingQuestion)]
        if not lengths:
            return lambda question: None
        typical = statistics.median(lengths)
        return _at_modal_start(train, bins=self.bins, length=lambda q: typical)


def words(text: str) -> list[str]:
    """Lower-cased word tokens of ``text`` (letters and digits)."""
    return _WORD_RE.findall(text.casefold())


class _Tfidf:
    """A TF-IDF space fitted on some texts (sublinear tf, smoothed idf, unit rows)."""

    def __init__(self, texts: Sequence[str]) -> None:
        df: Counter[str] = Counter()
        for text in texts:
            df.update(set(words(text)))
        self.vocabulary = {w: i for i, w in enumerate(sorted(df))}
        n = len(texts)
        self.idf = np.array([math.log((1 + n) / (1 + df[w])) + 1.0 for w in sorted(df)])
        self.rows = np.stack([self.vector(t) for t in texts]) if texts else np.zeros((0, 0))

    def vector(self, text: str) -> npt.NDArray[np.float64]:
        """The unit TF-IDF vector of ``text`` (words unseen in fitting are ignored)."""
        vec = np.zeros(len(self.vocabulary))
        for word, count in Counter(words(text)).items():
            if word in self.vocabulary:
                vec[self.vocabulary[word]] = 1.0 + math.log(count)
        vec *= self.idf
        norm = float(np.linalg.norm(vec))
        return vec / norm if norm > 0 else vec

    def nearest(self, text: str, k: int) -> list[tuple[int, float]]:
        """Indices and cosine similarities of the ``k`` most similar texts (similarity > 0),
        most similar first, earlier texts first on ties."""
        sims = self.rows @ self.vector(text)
        order = sorted((i for i in range(len(sims)) if sims[i] > 1e-12),
                       key=lambda i: (-round(float(sims[i]), 12), i))
        return [(i, float(sims[i])) for i in order[:k]]


def _norm(text: str) -> str:
    return text.strip().casefold()


class TextOnly:
    """Question text → answer: the ``k`` nearest questions by TF-IDF cosine similarity."""

    name = "text_only"

    def __init__(self, *, k: int = TEXT_NEIGHBOURS) -> None:
        self.k = k

    def fit(self, train: Sequence[ReleaseQuestion]) -> Fitted:
        """Index ``train``'s grounding questions and one try of each choice sample."""
        grounding = [q for q in train if isinstance(q, GroundingQuestion)]
        samples = list({q.question_id: q for q in train if isinstance(q, ChoiceQuestion)
                        and q.try_index == 0}.values())
        g_space = _Tfidf([q.question for q in grounding]) if grounding else None
        c_space = _Tfidf([q.question for q in samples]) if samples else None

        def answer(q: ReleaseQuestion) -> Prediction | None:
            if isinstance(q, GroundingQuestion):
                if g_space is None:
                    return None
                near = [grounding[i] for i, _ in g_space.nearest(q.question, self.k)]
                if not near:
                    return None
                return _place(q, statistics.median(relative_start(n) for n in near),
                              statistics.median(first_span(n)[1] - first_span(n)[0]
                                                for n in near))
            if c_space is None:
                return None
            votes: dict[str, float] = defaultdict(float)
            for i, sim in c_space.nearest(q.question, self.k):
                votes[_norm(samples[i].answer_text)] += sim
            return _choose(q, [votes.get(_norm(o), 0.0) for o in q.options])

        return answer


class OptionPrior:
    """Choice: per task, the offered option text most often right when offered."""

    name = "option_prior"

    def fit(self, train: Sequence[ReleaseQuestion]) -> Fitted:
        """Count, per task, how often each text is offered and how often it is right."""
        right: dict[str, Counter[str]] = defaultdict(Counter)
        shown: dict[str, Counter[str]] = defaultdict(Counter)
        for q in train:
            if isinstance(q, ChoiceQuestion) and q.try_index == 0:  # one count per sample
                right[q.task][_norm(q.answer_text)] += 1
                shown[q.task].update(_norm(o) for o in q.options)

        def answer(q: ReleaseQuestion) -> Prediction | None:
            if not isinstance(q, ChoiceQuestion):
                return None
            n = len(q.options)
            rates = [(right[q.task][_norm(o)] + 1) / (shown[q.task][_norm(o)] + n)
                     for o in q.options]
            return _choose(q, rates)

        return answer


class LetterPrior:
    """Choice: per try, the letter most often right."""

    name = "letter_prior"

    def fit(self, train: Sequence[ReleaseQuestion]) -> Fitted:
        """Count the right letter of each try index."""
        letters: dict[int, Counter[int]] = defaultdict(Counter)
        for q in train:
            if isinstance(q, ChoiceQuestion):
                letters[q.try_index][q.answer_index] += 1

        def answer(q: ReleaseQuestion) -> Prediction | None:
            if not isinstance(q, ChoiceQuestion):
                return None
            return _choose(q, [letters[q.try_index][i] for i in range(len(q.options))])

        return answer


def blind_baseline(name: str) -> BlindBaseline:
    """The blind baseline called ``name`` (one of :data:`BLIND_NAMES`).

    Raises:
        EvaluationError: an unknown name (the known ones are listed).
    """
    makers: Mapping[str, Callable[[], BlindBaseline]] = {
        "position_prior": PositionPrior, "length_prior": LengthPrior, "text_only": TextOnly,
        "option_prior": OptionPrior, "letter_prior": LetterPrior}
    if name not in makers:
        raise EvaluationError(f"unknown blind baseline {name!r}; known: {', '.join(makers)}")
    return makers[name]()


def folds(questions: Sequence[ReleaseQuestion], *, n_folds: int = N_FOLDS, seed: int = 0
          ) -> list[int]:
    """The fold of each question: whole videos dealt round-robin within each task, in an
    order drawn by ``seed``, so folds are even per task and no video is split.

    Raises:
        EvaluationError: ``n_folds`` < 2.
    """
    if n_folds < 2:
        raise EvaluationError(f"{n_folds = } must be >= 2 (a prior is never fitted on the "
                              "questions it answers)")
    task_of: dict[str, str] = {}
    for q in questions:
        task_of.setdefault(q.video, q.task)
    by_task: dict[str, list[str]] = defaultdict(list)
    for video, task in task_of.items():
        by_task[task].append(video)
    fold_of: dict[str, int] = {}
    offset = 0
    for task in sorted(by_task):
        ordered = sorted(by_task[task], key=lambda v: (_hash(seed, v), v))
        for i, video in enumerate(ordered):
            fold_of[video] = (offset + i) % n_folds
        offset += len(ordered)  # the next task starts where this one stopped: folds stay even
    return [fold_of[q.video] for q in questions]


def prior_answers(questions: Sequence[ReleaseQuestion], model: BlindBaseline, *,
                  n_folds: int = N_FOLDS, seed: int = 0) -> list[Prediction | None]:
    """``model``'s cross-fitted answer to every question, in the given order, None where its
    prior has no opinion (what the bias audit counts at the random baseline's expectation).

    Raises:
        EvaluationError: ``n_folds`` < 2.
    """
    fold = folds(questions, n_folds=n_folds, seed=seed)
    out: list[Prediction | None] = [None] * len(questions)
    for k in range(n_folds):
        fitted = model.fit([q for q, f in zip(questions, fold, strict=True) if f != k])
        for i, (q, f) in enumerate(zip(questions, fold, strict=True)):
            if f == k:
                out[i] = fitted(q)
    return out


def blind_predictions(questions: Sequence[ReleaseQuestion], model: BlindBaseline, *,
                      n_folds: int = N_FOLDS, seed: int = 0) -> list[Prediction]:
    """``model``'s cross-fitted answer to every question, in the given order: its prior's
    (:func:`prior_answers`), else the random baseline's (module doc).

    Raises:
        EvaluationError: ``n_folds`` < 2.
    """
    answers = prior_answers(questions, model, n_folds=n_folds, seed=seed)
    return [p or random_answer(q) for q, p in zip(questions, answers, strict=True)]


def _record(prediction: Prediction) -> dict[str, object]:
    record: dict[str, object] = {"question_id": prediction.question_id}
    if prediction.try_index is not None:
        record["try"] = prediction.try_index
    if prediction.spans is not None:
        record["pred_spans"] = [[round(s, 3), round(e, 3)] for s, e in prediction.spans]
    else:
        record["response"] = prediction.response
    return record


def run_blind(questions_path: str | Path, *, name: str, out: str | Path,
              seed: int = 0) -> Path:
    """Answer every question of ``questions_path`` with the blind baseline ``name`` into
    ``out`` (predictions JSONL, plus ``<out>.meta.json``); reads no video. Returns ``out``.

    Why no resuming (unlike :func:`~needleforge.evaluate.run.run_model`): the whole run takes
    well under a second, and a fold's answers depend on every other question.

    Raises:
        EvaluationError: a malformed questions file or an unknown baseline.
        OSError: ``out`` cannot be written.
    """
    model = blind_baseline(name)
    questions = load_questions(questions_path)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(_record(p), ensure_ascii=False)
             for p in blind_predictions(questions, model, seed=seed)]
    out.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    meta = {"model": name, "model_version": f"blind,folds={N_FOLDS},seed={seed}",
            "prompt_style": "none", "reads": "questions.jsonl only (no video)",
            "needleforge_version": needleforge.__version__, "questions": str(questions_path)}
    out.with_name(out.name + ".meta.json").write_text(json.dumps(meta, indent=2) + "\n",
                                                      encoding="utf-8")
    return out
