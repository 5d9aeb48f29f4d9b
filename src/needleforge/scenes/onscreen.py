"""On-screen text as evidence: which OCR lines are worth asking about, and how to match them.

Why: a caption, a sign or a lower third is something a viewer reads at a glance ("the scene
where the on-screen text reads 'JULY'"), and the OCR reader can read it again on any other
frame, so it is a claim a verifier can confirm and a negative can be refused for. But the
reader (:mod:`needleforge.backends.embedded.ocr`, trained mostly on Chinese) also "reads"
textures: on the project's real clips it gives single characters ('#' 0.85, '®' 0.92), symbol
runs ('+电电电+' 0.69) and CJK glyphs on rock walls and bookshelves, while the one real caption
(statement.mp4's lower third) reads at 0.93-1.00. So a line is **legible** (:func:`legible`)
only when it reads at :data:`MIN_CONFIDENCE` or more, at least :data:`MIN_LATIN_SHARE` of its
characters are Latin letters or digits, and it has :data:`MIN_LETTERS` letters with a run of
:data:`MIN_WORD_RUN` in a row (a word, not "104" or "E:0"). A scene's text is asked about only
when it **holds** (:func:`held_lines`, :func:`holds`): read legibly on :data:`MIN_FRAMES` of
the keyframes read, the same line (:func:`same_line`) each time; a legible line read once is
still recorded (a weaker ``text:`` tag, :func:`tag_score`), so that no negative showing it is
drawn.

**Matching.** The recognizer drops the spaces between Latin words and confuses "," with ".",
so text is compared by its :func:`squashed` form: upper case, letters and digits only. A
quote is **shown** by a line (:func:`shows`) when it occurs in it as a substring with at most
one character wrong in five (:func:`allowed_errors`), the edit distance of the best-matching
stretch (an approximate substring search).

**What is quoted.** A line as read ("PRESIDENTOBAMASTATEMENTONIRAN") is often not what a
viewer sees, so a question quotes a short *part* of it (:func:`parts`): consecutive tokens
(runs of letters or of digits) holding a word, at most :data:`MAX_PART_LETTERS` characters,
the shortest first ("JULY" of "JULY14.2015"). Text is quoted as written, never turned into a
claim about who someone is.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence

#: A scene tag holding on-screen text starts with this (``text:JULY14.2015``).
TEXT_PREFIX = "text:"
#: Recorded in the representation's model fingerprint; bumped when a rule here changes.
RULE_NAME = "onscreen-text"
RULE_VERSION = "1"
#: Recognition confidence a line needs to be legible (garbage reads up to 0.92 but is never
#: a word; real captions read 0.93-1.00).
MIN_CONFIDENCE = 0.8
#: Share of a line's non-space characters that must be Latin letters or digits.
MIN_LATIN_SHARE = 0.8
#: Latin letters a legible line holds, and how many of them in a row make a word.
MIN_LETTERS = 4
MIN_WORD_RUN = 3
#: Keyframes of a scene the representation reads, and on how many a line must be read.
READ_KEYFRAMES = 3
MIN_FRAMES = 2
#: The text detector's input (shorter side, pixels) in the representation: the reader's
#: default 736 upscales a 240-line frame three times over; at 480 statement.mp4's caption
#: reads the same at half the cost (0.74 -> 0.36 s a frame on 2 shared cores), at 320 its
#: date line is lost.
READ_SIDE_PX = 480
#: The longest part a question quotes (squashed characters): longer runs are merged words.
MAX_PART_LETTERS = 16
#: How a description names on-screen text; :func:`quotes` reads it back.
_PHRASE = "on-screen text reads '{}'"
_QUOTE = re.compile(r"on-screen text reads '([A-Za-z0-9 ]+)'")
_TOKEN = re.compile(r"[A-Za-z]+|[0-9]+")


def squashed(text: str) -> str:
    """``text`` in upper case with everything but ASCII letters and digits removed: the form
    text is compared in ("July 14, 2015" and "JULY14.2015" both → "JULY142015")."""
    return "".join(ch for ch in text.upper() if ch.isascii() and ch.isalnum())


def legible(text: str, confidence: float) -> bool:
    """Whether an OCR line is worth asking about (rules in the module docstring)."""
    chars = "".join(text.split())
    if not chars or confidence < MIN_CONFIDENCE:
        return False
    latin = sum(ch.isascii() and ch.isalnum() for ch in chars)
    letters = sum(ch.isascii() and ch.isalpha() for ch in chars)
    return (latin >= MIN_LATIN_SHARE * len(chars) and letters >= MIN_LETTERS
            and re.search(rf"[A-Za-z]{{{MIN_WORD_RUN},}}", chars) is not None)


def allowed_errors(length: int) -> int:
    """Characters that may be wrong when matching ``length`` squashed characters: one in
    five, rounded down (a four-letter word must match exactly)."""
    return length // 5


def _distance(needle: str, haystack: str, *, anywhere: bool) -> int:
    """The edit distance between ``needle`` and ``haystack``, or (``anywhere``) between
    ``needle`` and the stretch of ``haystack`` it matches best (Sellers' approximate
    substring search: the match may start and end anywhere)."""
    previous = [0] * (len(haystack) + 1) if anywhere else list(range(len(haystack) + 1))
    for i, ch in enumerate(needle, start=1):
        current = [i] + [0] * len(haystack)
        for j, other in enumerate(haystack, start=1):
            current[j] = min(previous[j - 1] + (ch != other), previous[j] + 1, current[j - 1] + 1)
        previous = current
    return min(previous) if anywhere else previous[-1]


def shows(line: str, quote: str) -> bool:
    """Whether ``line`` (text as read) shows ``quote``: the squashed quote occurs in the
    squashed line with at most :func:`allowed_errors` characters wrong. An empty quote is
    shown by nothing."""
    needle, haystack = squashed(quote), squashed(line)
    if not needle or not haystack:
        return False
    return _distance(needle, haystack, anywhere=True) <= allowed_errors(len(needle))


def same_line(a: str, b: str) -> bool:
    """Whether two readings are one line: their squashed forms differ by at most
    :func:`allowed_errors` of the longer one (the recognizer's spaces and commas vary)."""
    x, y = squashed(a), squashed(b)
    if not x or not y:
        return False
    return _distance(x, y, anywhere=False) <= allowed_errors(max(len(x), len(y)))


@dataclasses.dataclass
class _Group:
    text: str
    confidence: float
    frames: set[int]


def read_lines(readings: Sequence[Sequence[tuple[str, float]]]) -> list[tuple[str, int]]:
    """``(line, frames)`` for every legible line of ``readings`` (per frame, the OCR's
    ``(line, confidence)`` pairs): readings of one line (:func:`same_line`) are grouped, each
    given as its most confident reading with whitespace runs collapsed, with the number of
    frames it was read on, in first-seen order."""
    groups: list[_Group] = []
    for index, lines in enumerate(readings):
        for text, confidence in lines:
            if not legible(text, confidence):
                continue
            group = next((g for g in groups if same_line(g.text, text)), None)
            if group is None:
                groups.append(_Group(" ".join(text.split()), confidence, {index}))
                continue
            group.frames.add(index)
            if confidence > group.confidence:
                group.text, group.confidence = " ".join(text.split()), confidence
    return [(g.text, len(g.frames)) for g in groups]


def held_lines(readings: Sequence[Sequence[tuple[str, float]]], *,
               min_frames: int = MIN_FRAMES) -> list[str]:
    """The legible lines read on at least ``min_frames`` of the frames (:func:`read_lines`).
    A scene read on fewer frames than ``min_frames`` keeps nothing (text seen once may be a
    flash or a misread).

    Raises:
        ValueError: ``min_frames`` below 1.
    """
    if min_frames < 1:
        raise ValueError(f"min_frames = {min_frames!r} must be >= 1")
    return [line for line, frames in read_lines(readings) if frames >= min_frames]


def tag_score(frames: int) -> float:
    """A ``text:`` tag's score: the share of :data:`READ_KEYFRAMES` frames its line was
    read on. Text read once is still a tag (a negative showing it is refused), but only
    :func:`holds` text is asked about."""
    if frames < 1:
        raise ValueError(f"frames = {frames!r} must be >= 1")
    return min(1.0, frames / READ_KEYFRAMES)


def holds(score: float) -> bool:
    """Whether a ``text:`` tag of ``score`` (:func:`tag_score`) was read on
    :data:`MIN_FRAMES` frames: text that holds, worth a question."""
    return score * READ_KEYFRAMES >= MIN_FRAMES - 1e-6


def is_text_tag(tag: str) -> bool:
    """Whether a scene tag (or a normalized term) holds on-screen text."""
    return tag.lower().startswith(TEXT_PREFIX)


def text_of(tag: str) -> str:
    """The text of a ``text:`` tag (``"text:JULY14.2015"`` → ``"JULY14.2015"``).

    Raises:
        ValueError: a tag that is not a text tag.
    """
    if not is_text_tag(tag):
        raise ValueError(f"tag {tag!r} is not on-screen text (no {TEXT_PREFIX!r} prefix)")
    return tag[len(TEXT_PREFIX):]


def parts(line: str) -> list[str]:
    """The parts of ``line`` a question may quote, shortest first (then in reading order):
    runs of consecutive tokens (letters or digits) holding a token of at least
    :data:`MIN_LETTERS` letters, at most :data:`MAX_PART_LETTERS` characters squashed,
    tokens joined by one space ("JULY14.2015" → ["JULY", "JULY 14", "JULY 14 2015"])."""
    tokens = _TOKEN.findall(line)
    found: dict[str, int] = {}
    for start in range(len(tokens)):
        for end in range(start + 1, len(tokens) + 1):
            run = tokens[start:end]
            if sum(map(len, run)) > MAX_PART_LETTERS:
                break
            if any(t.isalpha() and len(t) >= MIN_LETTERS for t in run):
                found.setdefault(" ".join(run), start)
    return sorted(found, key=lambda p: (len(squashed(p)), found[p], p))


def phrase(part: str) -> str:
    """How a description names on-screen text: ``on-screen text reads 'JULY'``.

    Raises:
        ValueError: a part :func:`quotes` could not read back (anything but letters, digits
            and single spaces, or empty).
    """
    text = _PHRASE.format(part)
    if quotes(text) != [part]:
        raise ValueError(f"part {part!r} must be letters and digits separated by spaces")
    return text


def quotes(text: str) -> list[str]:
    """The on-screen text a description or question quotes (:func:`phrase`), in order."""
    return [m.group(1) for m in _QUOTE.finditer(text) if m.group(1).strip() == m.group(1)
            and "  " not in m.group(1)]


def shown_by(lines: Iterable[str], quote: str) -> str | None:
    """The first of ``lines`` that :func:`shows` ``quote``, or None."""
    return next((line for line in lines if shows(line, quote)), None)


def without_quotes(text: str) -> str:
    """``text`` with every quoted on-screen text left out ("on-screen text reads 'BOOK'" →
    "on-screen text"), so the quote's words are not read as things the scene shows."""
    return _QUOTE.sub("on-screen text", text)
