"""Baselines that run on a CPU: random answers, and an embedded detector/OCR "specialist".

- :class:`RandomBaseline` answers grounding questions with one random span of a typical needle
  length (3–8 s) and multiple-choice questions with a random letter. The draw is seeded by the
  baseline seed *and* the question (text, options, frame times), so answers do not depend on the
  order or thread in which questions are asked.
- :class:`EmbeddedGroundingBaseline` is our version of the papers' specialist / shortcut
  baselines: it never reads the video as a whole, it only looks for the asked thing frame by
  frame. The thing is an object label (a COCO label, or a common synonym, found in the question
  text) seen by the offline SSD detector, or text read by the offline OCR (compared casefolded
  with whitespace removed, since the OCR drops spaces between Latin words). Grounding answers are
  the runs of consecutive sampled frames where it is seen, longest run first; multiple choice
  picks the option seen (retrieval), seen in that order (ordering) or nearest the number of runs
  seen (counting; pasted copies count every detection of a run's busiest frame).

Cost (the baseline has to score a demo release inside ``make demo``): the models run only for
what a question asks (OCR only when it asks about text, nothing when it names neither an object
nor a text), once per video for all its questions (:class:`~.memo.LRUCache`), and once per
*picture*: a frame nearly identical to one already seen, in this video or another, reuses its
results (:class:`~.memo.NearDuplicateMemo`), since montages reuse one pool of source scenes.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import queue
import random
import re
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from needleforge.backends.base import RGBImage
from needleforge.backends.embedded.labels import COCO_LABELS
from needleforge.backends.openai.client import TimedFrame
from needleforge.errors import BackendError
from needleforge.evaluate.memo import LRUCache, NearDuplicateMemo
from needleforge.evaluate.prompts import AnswerKind
from needleforge.evaluate.records import LETTERS
from needleforge.records.phrases import term_spans

if TYPE_CHECKING:
    from needleforge.backends.embedded.detector import EmbeddedDetector
    from needleforge.backends.embedded.ocr import EmbeddedTextReader

#: Words that name a COCO category without being its label.
SYNONYMS: dict[str, str] = {
    "people": "person", "man": "person", "woman": "person", "men": "person",
    "women": "person", "child": "person", "boy": "person", "girl": "person",
    "kitten": "cat", "puppy": "dog", "motorbike": "motorcycle", "bike": "bicycle",
    "television": "tv", "sofa": "couch", "plane": "airplane", "aeroplane": "airplane",
    "ship": "boat", "phone": "cell phone", "mobile phone": "cell phone", "table": "dining table",
    "ball": "sports ball", "plant": "potted plant", "lorry": "truck", "automobile": "car",
}
_TEXT_WORDS = ("secret word", "caption", "text", "subtitle", "written", "says", "word")
_VIDEO_CACHE = 256
_COPY_WORDS = ("copies", "copy", "pasted", "overlaid")
_MAX_SPANS = 5
_TYPICAL_SPAN_S = (3.0, 8.0)


def _vocabulary() -> dict[str, str]:
    """Word → COCO label: every label names itself, and :data:`SYNONYMS` name labels."""
    return {**{label: label for label in COCO_LABELS.values()}, **SYNONYMS}


_VOCABULARY = _vocabulary()


def find_label(text: str) -> str | None:
    """The COCO label named in ``text`` (whole words, plurals allowed), earliest mention first.

    Longer names win over their own parts ("cell phone" over "phone"); None if none is named.
    Names and plurals are matched as :func:`~needleforge.records.phrases.term_spans` does
    everywhere else ("knives" names "knife").
    """
    found = term_spans(text, _VOCABULARY)
    if not found:
        return None
    first = min(found, key=lambda word: (found[word][0][0], -len(word)))
    return _VOCABULARY[first]


def squash(text: str) -> str:
    """``text`` casefolded without whitespace or punctuation: how OCR text is compared."""
    return re.sub(r"[\W_]+", "", text.casefold())


def _seed_for(seed: int, frames: Sequence[TimedFrame], question: str,
              options: Sequence[str] | None) -> int:
    key = f"{seed}|{question}|{options}|{[round(t, 3) for t, _ in frames]}"
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big")


def _spans_text(spans: Sequence[tuple[float, float]]) -> str:
    return ", ".join(f"{start:.1f} - {end:.1f}" for start, end in spans)


class RandomBaseline:
    """Random spans of typical needle length and random letters, reproducible per question.

    Raises:
        BackendError: ``span_s`` is not ``0 < low <= high``.
    """

    prompt_style: str = "none"
    #: Only the frame times matter: :func:`~.run.run_model` skips decoding for this model.
    needs_pixels: bool = False

    def __init__(self, *, seed: int = 0, span_s: tuple[float, float] = _TYPICAL_SPAN_S) -> None:
        if not 0 < span_s[0] <= span_s[1]:
            raise BackendError(f"span_s = {span_s!r} must satisfy 0 < low <= high")
        self.seed, self.span_s = seed, span_s
        self.name = "random"
        self.version = f"seed={seed},span_s={span_s[0]:g}-{span_s[1]:g}"

    def answer(self, frames: Sequence[TimedFrame], question_text: str, *, kind: AnswerKind,
               options: Sequence[str] | None = None) -> str:
        """One random span inside the sampled time range, or one random option letter."""
        rng = random.Random(_seed_for(self.seed, frames, question_text, options))
        if kind == "choice":
            return LETTERS[rng.randrange(len(options) if options else len(LETTERS))]
        end_s = frames[-1][0] + 0.5 if frames else self.span_s[1]
        length = min(rng.uniform(*self.span_s), end_s)
        start = rng.uniform(0.0, end_s - length)
        return _spans_text([(start, start + length)])


class _Seen:
    """What the embedded models saw on each sampled frame of one video (filled lazily)."""

    def __init__(self, frames: Sequence[TimedFrame]) -> None:
        self.times = [t for t, _ in frames]
        self.labels: list[Counter[str]] | None = None
        self.texts: list[str] | None = None


class EmbeddedGroundingBaseline:
    """Finds the asked object or text frame by frame with the offline detector and OCR.

    ``detector`` and ``reader`` default to the embedded models; the OCR model is loaded only
    when a question asks about text. Per-video results are cached (the 4 tries of a multiple
    choice sample share frames) for the last ``video_cache`` videos, and each model's results
    per near-identical frame are kept in a :class:`~.memo.NearDuplicateMemo`
    (``near_duplicate_diff`` grey levels, 0 turns it off). OpenCV nets are not thread-safe and
    this one gains nothing from a second OpenCV thread, so the default builds ``parallel``
    single-threaded detectors that threads borrow one at a time (a given ``detector`` is the
    only one, shared under the same rule). OCR readers follow the same rule: up to
    ``parallel`` single-threaded ones, made on first use (a given ``reader`` is the only one;
    two onnxruntime threads beside a busy detector only spin, for the same lines).

    Raises:
        BackendError: the embedded model files are missing (see the backends), or a cache
            setting or ``parallel`` is out of range.
    """

    prompt_style: str = "none"
    needs_pixels: bool = True

    def __init__(self, *, detector: EmbeddedDetector | None = None,
                 reader: EmbeddedTextReader | None = None, score_threshold: float = 0.5,
                 near_duplicate_diff: float = 2.0, video_cache: int = _VIDEO_CACHE,
                 parallel: int = 2) -> None:
        if parallel < 1:
            raise BackendError(f"{parallel = } must be >= 1")
        if detector is None:
            from needleforge.backends.embedded.detector import EmbeddedDetector

            detectors = [EmbeddedDetector(score_threshold=score_threshold, num_threads=1)
                         for _ in range(parallel)]
        else:
            detectors = [detector]
        self.detector = detectors[0]
        self._free: queue.SimpleQueue[EmbeddedDetector] = queue.SimpleQueue()
        for each in detectors:
            self._free.put(each)
        # OCR readers, made when a question first asks about text: up to ``parallel`` (one
        # onnxruntime thread each, as the detectors), or the one given
        self._readers: queue.SimpleQueue[EmbeddedTextReader] = queue.SimpleQueue()
        self._readers_made = 0 if reader is None else parallel
        if reader is not None:
            self._readers.put(reader)
        self._parallel = parallel
        self.name = "embedded"
        # the memo can change an answer (a near-duplicate's detections), so it is provenance
        self.version = (f"{self.detector.name}@{self.detector.version}+ocr,"
                        f"dup<{near_duplicate_diff:g}")
        self._ocr_lock = threading.Lock()
        self._cache: LRUCache[str, _Seen] = LRUCache(video_cache)
        self.label_memo: NearDuplicateMemo[Counter[str]] = NearDuplicateMemo(
            max_diff=near_duplicate_diff)
        self.text_memo: NearDuplicateMemo[str] = NearDuplicateMemo(max_diff=near_duplicate_diff)

    def answer(self, frames: Sequence[TimedFrame], question_text: str, *, kind: AnswerKind,
               options: Sequence[str] | None = None) -> str:
        """Spans where the asked thing is seen, or the letter of the option the frames support.

        An empty answer (scored as unparsed) means nothing asked about was recognised.

        Raises:
            BackendError: no frames, or a frame the models cannot take.
        """
        if not frames:
            raise BackendError("the embedded baseline needs at least one frame")
        seen = self._seen(frames)
        if kind == "grounding":
            return self._ground(frames, seen, question_text)
        return self._choose(frames, seen, question_text, list(options or ()))

    def _seen(self, frames: Sequence[TimedFrame]) -> _Seen:
        digest = hashlib.blake2b(digest_size=16)
        for t_s, image in frames:
            digest.update(f"{t_s:.3f}{image.shape}".encode())
            digest.update(image[::16, ::16].tobytes())
        return self._cache.get_or_make(digest.hexdigest(), lambda: _Seen(frames))

    def _labels(self, frames: Sequence[TimedFrame], seen: _Seen) -> list[Counter[str]]:
        if seen.labels is None:
            def labels_of(image: RGBImage, t_s: float) -> Counter[str]:
                detector = self._free.get()  # blocks while every detector is busy
                try:
                    return Counter(d.label for d in detector.detect(image, t_s=t_s))
                finally:
                    self._free.put(detector)

            seen.labels = [self.label_memo.get_or_compute(
                image, functools.partial(labels_of, t_s=t_s)) for t_s, image in frames]
        return seen.labels

    def _texts(self, frames: Sequence[TimedFrame], seen: _Seen) -> list[str]:
        if seen.texts is None:
            def text_of(image: RGBImage) -> str:
                reader = self._borrow_reader()  # blocks while every reader is busy
                try:
                    return squash("".join(reader.read(image)))
                finally:
                    self._readers.put(reader)

            seen.texts = [self.text_memo.get_or_compute(image, text_of) for _, image in frames]
        return seen.texts

    def _borrow_reader(self) -> EmbeddedTextReader:
        """A free OCR reader: one made now while fewer than ``parallel`` exist and none is
        free, else the next one given back."""
        with self._ocr_lock:
            if self._readers_made < self._parallel:
                try:
                    return self._readers.get_nowait()
                except queue.Empty:
                    from needleforge.backends.embedded.ocr import EmbeddedTextReader

                    self._readers_made += 1
                    return EmbeddedTextReader(num_threads=1)
        return self._readers.get()

    def _matcher(self, frames: Sequence[TimedFrame], seen: _Seen, thing: str, *,
                 read_text: bool) -> Callable[[int], int]:
        """Per frame index, how many of ``thing`` are seen (object copies, or 1 for text).

        ``thing`` names no object and ``read_text`` is false: nothing is looked for (OCR is the
        costliest model and finds nothing in a question that does not ask about text).
        """
        label = find_label(thing)
        if label is not None:
            labels = self._labels(frames, seen)
            return lambda i: labels[i][label]
        needle = squash(thing)
        if not needle or not read_text:
            return lambda i: 0
        texts = self._texts(frames, seen)
        return lambda i: int(needle in texts[i])

    def _ground(self, frames: Sequence[TimedFrame], seen: _Seen, question: str) -> str:
        quoted = re.findall(r"[\"“]([^\"”]+)[\"”]", question)
        thing = question if find_label(question) is not None or not quoted else quoted[0]
        # quoted words name a text to find; an unquoted question without an object asks nothing
        hits = self._matcher(frames, seen, thing, read_text=bool(quoted) or _asks_text(question))
        runs = sorted(_runs([hits(i) > 0 for i in range(len(frames))]),
                      key=lambda run: run[0] - run[1])
        return _spans_text([_span(seen.times, run) for run in runs[:_MAX_SPANS]])

    def _choose(self, frames: Sequence[TimedFrame], seen: _Seen, question: str,
                options: list[str]) -> str:
        if not options:
            return LETTERS[0]
        numbers = [_as_int(o) for o in options]
        if all(n is not None for n in numbers):
            count = self._count(frames, seen, question)
            fit = [(-abs((n or 0) - count), 0) for n in numbers]  # nearest count fits best
        else:
            read_text = _asks_text(question)
            fit = [self._first_seen(frames, seen, option.split(", "), read_text=read_text)
                   for option in options]
        # Ties (often: nothing seen at all) are broken by a draw seeded by the question, not
        # by position, so the baseline has no letter bias for circular evaluation to punish.
        best = [i for i, f in enumerate(fit) if f == max(fit)]
        rng = random.Random(_seed_for(0, frames, question, options))
        return LETTERS[best[rng.randrange(len(best))] if len(best) > 1 else best[0]]

    def _first_seen(self, frames: Sequence[TimedFrame], seen: _Seen, items: Sequence[str], *,
                    read_text: bool) -> tuple[int, int]:
        """(items seen, items seen in listed order): bigger means the option fits better."""
        firsts: list[int] = []
        for item in items:
            hits = self._matcher(frames, seen, item, read_text=read_text)
            first = next((i for i in range(len(frames)) if hits(i) > 0), None)
            if first is not None:
                firsts.append(first)
        in_order = sum(1 for a, b in itertools.pairwise(firsts) if a < b)
        return (len(firsts), in_order)

    def _count(self, frames: Sequence[TimedFrame], seen: _Seen, question: str) -> int:
        lowered = question.casefold()
        label = find_label(question)
        if label is None or any(w in lowered for w in _TEXT_WORDS[:3]):
            if not _asks_text(question):
                return 0  # neither an object nor a text to count: no model is run
            texts = self._texts(frames, seen)
            return len(_runs(["secretword" in t for t in texts]))
        counts = self._labels(frames, seen)
        runs = _runs([c[label] > 0 for c in counts])
        if any(w in lowered for w in _COPY_WORDS):
            return sum(max(counts[i][label] for i in range(a, b + 1)) for a, b in runs)
        return len(runs)


def _asks_text(question: str) -> bool:
    """Whether ``question`` asks about text on screen (a caption, a word, a subtitle)."""
    return bool(term_spans(question, _TEXT_WORDS))


def _as_int(text: str) -> int | None:
    stripped = text.strip()
    return int(stripped) if stripped.isdigit() else None


def _runs(flags: Sequence[bool]) -> list[tuple[int, int]]:
    """Inclusive index ranges of consecutive true flags."""
    runs: list[tuple[int, int]] = []
    start: int | None = None
    for i, flag in enumerate([*flags, False]):
        if flag and start is None:
            start = i
        elif not flag and start is not None:
            runs.append((start, i - 1))
            start = None
    return runs


def _span(times: Sequence[float], run: tuple[int, int]) -> tuple[float, float]:
    """The time a run of sampled frames stands for: half a frame step beyond each end."""
    first, last = run
    step = (times[-1] - times[0]) / (len(times) - 1) if len(times) > 1 else 1.0
    return (max(0.0, times[first] - step / 2), times[last] + step / 2)
