"""Parsing free-text model responses into time spans or an option index; never raises.

A response that yields nothing is not an error of the scorer: it is a wrong answer, reported
with the reason, and told apart from a *refusal* (the model declined: "I cannot determine …"),
which NeMo reports separately (seed 001, Table 11).

Spans. Times are ``12``, ``12.5``, ``12 s``/``sec``/``seconds``, ``2 min``/``1m30s``, ``mm:ss``
and ``hh:mm:ss`` (fractions allowed: ``01:02.5``). A span is two times joined by ``to``,
``until``, ``through``, ``-``, ``–``, ``—`` or ``~``, or ``between X and Y``, or a bracketed pair
``[10, 15]`` / ``(10, 15)`` (so JSON-ish ``[[10, 15], [40, 45]]`` gives two spans), or
``{"start": 10, "end": 15}``. Every span found is kept, in text order. A lone time ("at 12 s")
is not a span. A reversed range ("15 to 10") makes the whole response unparsed: swapping would
guess what the model meant.

Letters. In order of trust: the whole response is a letter (``B``, ``(B)``, ``b)``, ``**B**``);
an answer statement (``Answer: B``, ``The answer is (B)``, ``Option B``); a leading letter
(``B. Carol``, ``(B) Carol``); a letter standing alone in the text (a capital ``A`` followed by
a lower-case word is read as the article); the option text itself. Two different letters at the
same level ("A or B") leave the response unparsed as ambiguous.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import Literal, TypeAlias

from needleforge.evaluate.records import LETTERS, Span

Status: TypeAlias = Literal["ok", "unparsed", "refused"]


@dataclasses.dataclass(frozen=True, slots=True)
class SpanParse:
    """Spans read from a response; ``reason`` says why when ``status`` is not ``ok``."""

    status: Status
    spans: tuple[Span, ...] = ()
    reason: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class ChoiceParse:
    """The option index read from a response (None unless ``status`` is ``ok``)."""

    status: Status
    index: int | None = None
    reason: str = ""


_NUM = r"\d+(?:\.\d+)?"
_SEC_UNIT = r"(?:seconds?|secs?|s)(?![a-z])"
_MIN_UNIT = r"(?:minutes?|mins?|m)(?![a-z])"
_TIME = (rf"(?:\d+:\d{{1,2}}(?::\d{{1,2}})?(?:\.\d+)?"
         rf"|{_NUM}\s*{_MIN_UNIT}(?:\s*{_NUM}\s*{_SEC_UNIT})?"
         rf"|{_NUM}(?:\s*{_SEC_UNIT})?)")
_SEP = r"\s*(?:-|–|—|~|\bto\b|\buntil\b|\btill\b|\bthrough\b)\s*"
_SPAN_RE = re.compile(
    rf"[\[(]\s*(?P<b1>{_TIME})\s*,\s*(?P<b2>{_TIME})\s*[\])]"
    rf"|\"start(?:_s)?\"\s*:\s*(?P<j1>{_NUM})\s*,\s*\"end(?:_s)?\"\s*:\s*(?P<j2>{_NUM})"
    rf"|\bbetween\s+(?P<w1>{_TIME})\s+and\s+(?P<w2>{_TIME})"
    rf"|(?<![\d.:])(?P<r1>{_TIME}){_SEP}(?P<r2>{_TIME})",
    re.IGNORECASE,
)
_NUM_RE = re.compile(_NUM)
_MIN_SEC_RE = re.compile(rf"({_NUM})\s*{_MIN_UNIT}(?:\s*({_NUM})\s*{_SEC_UNIT})?", re.IGNORECASE)
_REFUSAL_RE = re.compile(
    r"\b(?:i\s*(?:am|'m|’m)\s+(?:sorry|unable|not able)|i\s+(?:cannot|can't|can’t|can not|"
    r"could not|couldn't|couldn’t|won't|will not|am unable)|unable to|not possible to|"
    r"(?:cannot|can't|can’t)\s+(?:be\s+)?(?:determine|determined|identify|answer|find|tell)|"
    r"i\s+(?:do not|don't|don’t)\s+know|(?:refuse|decline)\s+to|no\s+(?:answer|information))",
    re.IGNORECASE,
)


def is_refusal(text: str) -> bool:
    """Whether a response declines to answer ("I'm sorry", "cannot determine", "unable to")."""
    return _REFUSAL_RE.search(text) is not None


def _seconds(token: str) -> float | None:
    """One time token in seconds; None for an impossible clock time such as ``1:75``."""
    token = token.strip()
    if ":" in token:
        *head, last = token.split(":")
        parts = [int(p) for p in head]
        sec = float(last)
        if sec >= 60 or (len(parts) == 2 and parts[1] >= 60):
            return None
        return (parts[0] * 3600 + parts[1] * 60 if len(parts) == 2 else parts[0] * 60) + sec
    if token[-1].isdigit():
        return float(token)
    minutes = _MIN_SEC_RE.fullmatch(token)
    if minutes:
        return float(minutes.group(1)) * 60 + float(minutes.group(2) or 0)
    number = _NUM_RE.match(token)
    return float(number.group(0)) if number else None


def _unparsed(text: str, reason: str) -> SpanParse:
    if is_refusal(text):
        return SpanParse("refused", reason="the response declines to answer")
    return SpanParse("unparsed", reason=reason)


def parse_spans(text: str) -> SpanParse:
    """Read every time span of a grounding response, in text order (see the module docstring).

    Never raises: an unreadable response comes back with status ``unparsed`` (or ``refused``)
    and a reason, and is scored as an empty prediction.
    """
    spans: list[Span] = []
    for match in _SPAN_RE.finditer(text):
        last = match.lastgroup or "r2"  # the closing group of the branch that matched
        start, end = _seconds(match.group(last[0] + "1")), _seconds(match.group(last))
        if start is None or end is None:
            return SpanParse("unparsed", reason=f"impossible clock time in {match.group(0)!r}")
        if start > end:
            return SpanParse("unparsed", reason=f"reversed range {match.group(0)!r}")
        spans.append((start, end))
    if not spans:
        return _unparsed(text, "no time range found")
    return SpanParse("ok", spans=tuple(spans))


_MARKDOWN_RE = re.compile(r"[*_`#]+")
_ONLY_LETTER_RE = re.compile(r"[\(\[]?\s*([A-Da-d])\s*[\)\]]?\s*[.:]?")
_LETTER = r"(?:[A-D]|[a-d](?=[\)\]]|\s*\.?\s*$))"
_STATEMENT_RE = re.compile(
    r"(?i:\b(?:answer|option|choice)\b(?:\s+(?:is|would be|should be|will be))?\s*[:=\-]?\s*"
    rf"(?:option\s+)?)[\(\[]?({_LETTER})(?![\w'’])")
_AMBIGUOUS_RE = re.compile(
    r"(?<![\w'’])[\(\[]?([A-D])[\)\]]?\s*(?i:or|and|/|,)\s*[\(\[]?([A-D])(?![\w'’])")
_LEADING_RE = re.compile(rf"\s*[\(\[]?({_LETTER})\s*[\)\].:,\-–—]\s*\S")
_STANDALONE_RE = re.compile(r"(?<![\w'’])([A-D])(?![\w'’])")
_ARTICLE_AFTER_RE = re.compile(r"\s+[a-z]")
_NON_WORD_RE = re.compile(r"[\W_]+")


def _norm(text: str) -> str:
    """Case-folded words joined by single spaces: "Apple -> Banana" → "apple banana"."""
    return _NON_WORD_RE.sub(" ", text.casefold()).strip()


def _one_letter(letters: Sequence[str], level: str) -> ChoiceParse | None:
    """The parse for the letters found at one trust level (None when there are none)."""
    distinct = sorted({letter.upper() for letter in letters})
    if not distinct:
        return None
    if len(distinct) > 1:
        return ChoiceParse("unparsed", reason=f"ambiguous {level}: {', '.join(distinct)}")
    return ChoiceParse("ok", index=LETTERS.index(distinct[0]))


def _standalone_letters(text: str) -> list[str]:
    """Capital A–D standing alone, skipping the article "A" ("A cat walks")."""
    return [m.group(1) for m in _STANDALONE_RE.finditer(text)
            if not (m.group(1) == "A" and _ARTICLE_AFTER_RE.match(text, m.end()))]


def _by_option_text(text: str, options: Sequence[str]) -> ChoiceParse | None:
    said = _norm(text)
    normed = [_norm(o) for o in options]
    if said in normed:
        return ChoiceParse("ok", index=normed.index(said))
    padded = f" {said} "
    hits = [i for i, o in enumerate(normed) if o and f" {o} " in padded]
    if len(hits) > 1:
        return ChoiceParse("unparsed", reason="the response names several options' texts")
    return ChoiceParse("ok", index=hits[0]) if hits else None


def parse_choice(text: str, *, options: Sequence[str]) -> ChoiceParse:
    """Read which option (0–3) a multiple-choice response picks (see the module docstring).

    Never raises: an unreadable or ambiguous response comes back ``unparsed`` with a reason,
    a declining one ``refused``; both are scored as wrong.
    """
    cleaned = _MARKDOWN_RE.sub("", text).strip()
    if not cleaned:
        return ChoiceParse("unparsed", reason="empty response")
    only = _ONLY_LETTER_RE.fullmatch(cleaned)
    if only:
        return ChoiceParse("ok", index=LETTERS.index(only.group(1).upper()))
    found = _one_letter([m.group(1) for m in _STATEMENT_RE.finditer(cleaned)], "answer")
    if found is not None:
        return found
    pair = _AMBIGUOUS_RE.search(cleaned)
    if pair and pair.group(1) != pair.group(2):
        return ChoiceParse("unparsed", reason=f"ambiguous: {pair.group(0)!r}")
    leading = _LEADING_RE.match(cleaned)
    found = _one_letter([leading.group(1)] if leading else [], "leading letter") \
        or _one_letter(_standalone_letters(cleaned), "letters") \
        or _by_option_text(cleaned, options)
    if found is not None:
        return found
    if is_refusal(cleaned):
        return ChoiceParse("refused", reason="the response declines to answer")
    return ChoiceParse("unparsed", reason="no option letter or option text found")
