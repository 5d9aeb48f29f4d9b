"""English words about records, shared by the stages and the backends that write or check text.

The objects stage names objects with these words (colours, places, plurals), the NeMo stage
compares tags with them, and the embedded question writer and verifier (a backend) write and
read descriptions with them: one shared notion of "this text names that tag" keeps a writer
and a verifier from disagreeing over spelling. Living in the records leaf, it can be imported
by all of them without a backend ever importing a stage.

Matching rules: labels are compared lower-cased with runs of whitespace collapsed, a term
matches only as whole words (``cat`` is not in ``category``), its plural counts (``cats``),
and longer terms win over the terms inside them (``brick wall`` is one claim, not also
``wall``).
"""

from __future__ import annotations

import functools
import re
import sys
import threading
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, TypeVar

from needleforge.records.representation import SceneTag

if TYPE_CHECKING:
    import inflect

_T = TypeVar("_T")

#: Every basic colour name an object's dominant colour can get, in tie-break order.
COLOUR_NAMES: tuple[str, ...] = (
    "red", "orange", "yellow", "green", "blue", "purple", "pink", "brown", "black", "white",
    "grey",
)

#: The 3×3 grid of coarse places in a frame, rows top to bottom, columns left to right.
POSITION_NAMES: tuple[tuple[str, str, str], ...] = (
    ("top left", "top", "top right"),
    ("left", "centre", "right"),
    ("bottom left", "bottom", "bottom right"),
)

#: Every position word, longest first so "top left" beats "top".
POSITIONS: tuple[str, ...] = tuple(
    sorted({p for row in POSITION_NAMES for p in row}, key=lambda p: (-len(p), p))
)

#: Attribute words: checked against object attributes, never read as tags or labels (a
#: "white" tag on a negative must not make "the white cat" a claim about tags).
ATTRIBUTE_WORDS: frozenset[str] = frozenset(COLOUR_NAMES) | frozenset(POSITIONS)

_NUMBERS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
            "ten", "eleven", "twelve")
_POSITION_RE = re.compile(
    r"\b(?:on|in|at) the (" + "|".join(re.escape(p) for p in POSITIONS) + r")\b"
)
_WORD_RE = re.compile(r"[a-z0-9']+")
#: Words too common to show that a phrase was copied from the subtitles.
_FUNCTION_WORDS = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "have", "in", "is",
    "it", "its", "of", "on", "or", "that", "the", "their", "this", "to", "was", "were", "what",
    "when", "where", "which", "who", "will", "with", "you", "your", "i", "we", "he", "she",
    "they", "there",
))


#: Labels that name people. A colour word is never put directly before them: "a black
#: person" reads as skin colour, while the colour we measure is of clothing and background.
#: People are described by what they wear instead: "a person in black".
PERSON_WORDS: frozenset[str] = frozenset((
    "person", "people", "man", "men", "woman", "women", "child", "children", "boy", "boys",
    "girl", "girls", "baby", "babies", "kid", "kids", "pedestrian", "pedestrians", "rider",
    "riders", "player", "players", "adult", "adults", "teenager", "teenagers", "guy", "guys",
    "lady", "ladies", "gentleman", "gentlemen",
))
#: The largest count written as a number; more are "several" (a viewer can check two or
#: three at a glance, not eleven).
MAX_EXACT_COUNT = 3
#: Marks a referring expression that cannot tell its object apart from look-alikes in the
#: same scene; writers skip such objects rather than ask about one of several alike.
UNTELLABLE_MARK = " (one of "


def is_person(label: str) -> bool:
    """True when the label's head noun (its last word) names people."""
    words = normalize(label).split()
    return bool(words) and words[-1] in PERSON_WORDS


def with_colour(label: str, colour: str) -> str:
    """``"white car"``, but ``"person in black"``: no colour word directly before people."""
    label, colour = clean_label(label), colour.strip()
    if not colour:
        return label
    return f"{label} in {colour}" if is_person(label) else f"{colour} {label}"


def count_phrase(n: int, label: str) -> str:
    """``"two cars"`` up to :data:`MAX_EXACT_COUNT`, ``"several cars"`` beyond.

    Raises:
        ValueError: when ``n < 2`` (one object is named with an article, not a count).
    """
    if n < 2:
        raise ValueError(f"count_phrase: n = {n} must be >= 2")
    count = number_word(n) if n <= MAX_EXACT_COUNT else "several"
    return f"{count} {plural(label)}"


def clean_label(label: str) -> str:
    """The label with runs of whitespace collapsed (``"cell  phone "`` → ``"cell phone"``)."""
    return " ".join(label.split())


@functools.lru_cache(maxsize=8192)
def plural(label: str) -> str:
    """English plural of a (possibly multi-word) label, as inflect writes it.

    ``tomato`` → ``tomatoes``, ``loaf`` → ``loaves``, ``person`` → ``people``, ``mother-in-law``
    → ``mothers-in-law``; nouns inflect knows as invariant stay (``sheep``, ``goldfish``). One
    rule of ours on top: a label that is already plural is its own plural. inflect, asked for
    the plural of a plural, adds a second ending to its ``-s`` (``jeans`` → ``jeanss``,
    ``3D glasses`` → ``3D glasseses``), which no English plural does: we keep the label then
    (``jeans``, ``skis``, ``glasses``). Mass nouns get inflect's count plural (``waters``),
    harmless when matching text since the singular form always matches too.

    Raises:
        ValueError: when ``label`` is empty or only whitespace.
    """
    cleaned = clean_label(label)
    if not cleaned:
        raise ValueError(f"plural: label = {label!r} is empty")
    inflected = _inflect_engine().plural_noun(cleaned)
    if (cleaned.endswith("s") and inflected == cleaned + "s") or (
            cleaned.endswith("es") and inflected == cleaned + "es"):
        return cleaned
    return inflected


_INFLECT_LOCK = threading.Lock()


@functools.cache
def _inflect_engine() -> inflect.engine:
    """inflect's engine, imported (once, on first use) without typeguard's instrumentation.

    inflect wraps its methods in ``typeguard.typechecked``, which re-parses inflect's source
    for each one when inflect is imported: 1.3 s of CPU in every process that pluralises
    (jaraco/inflect#212, open). Those checks only reject arguments of the wrong type, which
    :func:`plural` rules out itself, so inflect is imported with a pass-through decorator, and
    typeguard's own is put back at once. The plurals are the same (tests compare them with a
    plainly imported inflect).
    """
    with _INFLECT_LOCK:
        if "inflect" not in sys.modules:
            import typeguard

            checked = typeguard.typechecked
            typeguard.typechecked = _unchecked  # type: ignore[assignment]
            try:
                import inflect
            finally:
                typeguard.typechecked = checked
        import inflect

        return inflect.engine()


def _unchecked(target: _T) -> _T:
    return target


def number_word(n: int) -> str:
    """``2`` → ``"two"`` up to twelve, digits beyond."""
    return _NUMBERS[n] if 0 <= n < len(_NUMBERS) else str(n)


def position_phrase(position: str) -> str:
    """``"left"`` → ``"on the left"``, ``"centre"`` → ``"in the centre"``, else ``"at the …"``."""
    if not position:
        return ""
    if position in ("left", "right"):
        return f"on the {position}"
    if position == "centre":
        return "in the centre"
    return f"at the {position}"


def normalize(term: str) -> str:
    """``term`` lower-cased, whitespace runs collapsed: ``" Brick  Wall"`` → ``"brick wall"``."""
    return " ".join(term.lower().split())


def ranked_tags(tags: Iterable[SceneTag]) -> tuple[str, ...]:
    """Distinct normalized tag names, best score first (ties by name), so order is stable.

    Several taggers may give a scene the same tag; the best score stands for it.
    """
    best: dict[str, float] = {}
    for tag in tags:
        name = normalize(tag.tag)
        if name:
            best[name] = max(best.get(name, 0.0), tag.score)
    return tuple(name for name, _ in sorted(best.items(), key=lambda kv: (-kv[1], kv[0])))


@functools.lru_cache(maxsize=4096)
def _pattern(term: str) -> re.Pattern[str]:
    forms = sorted({term, normalize(plural(term))}, key=len, reverse=True)
    body = "|".join(re.escape(f).replace(r"\ ", r"\s+") for f in forms)
    return re.compile(rf"(?<![a-z0-9])(?:{body})(?![a-z0-9])")


def term_spans(text: str, terms: Iterable[str]) -> dict[str, list[tuple[int, int]]]:
    """Where each of ``terms`` occurs in ``text`` as whole words, longest terms claimed first.

    Returns ``{term: [(start, end), …]}`` only for terms found; a span already claimed by a
    longer term is not reused by a shorter one.
    """
    lowered = text.lower()
    taken: list[tuple[int, int]] = []
    found: dict[str, list[tuple[int, int]]] = {}
    for term in sorted({normalize(t) for t in terms if len(normalize(t)) > 1},
                       key=lambda t: (-len(t), t)):
        for match in _pattern(term).finditer(lowered):
            span = match.span()
            if any(span[0] < end and start < span[1] for start, end in taken):
                continue
            taken.append(span)
            found.setdefault(term, []).append(span)
    return found


def named_terms(text: str, terms: Iterable[str]) -> frozenset[str]:
    """The members of ``terms`` that ``text`` names (see :func:`term_spans`)."""
    return frozenset(term_spans(text, terms))


def holds(terms: Iterable[str], claim: str) -> bool:
    """True when one of a scene's ``terms`` is, or contains as whole words, ``claim``.

    A scene tagged ``tabby cat`` holds ``cat``: deciding otherwise would let a cat into the
    negatives of a cat question. Both sides are normalized first.
    """
    claim = normalize(claim)
    return any(normalize(t) == claim or bool(term_spans(t, (claim,))) for t in terms)


def named_colours(text: str, *, skip: Sequence[tuple[int, int]] = ()) -> frozenset[str]:
    """Basic colour names in ``text`` outside the ``skip`` spans (e.g. the label "orange")."""
    lowered = text.lower()
    colours = set()
    for colour in COLOUR_NAMES:
        for match in re.finditer(rf"(?<![a-z0-9]){colour}(?![a-z0-9])", lowered):
            if not any(match.start() < end and start < match.end() for start, end in skip):
                colours.add(colour)
    return frozenset(colours)


def named_positions(text: str) -> frozenset[str]:
    """Places in the frame the text names as ``on/in/at the <position>``."""
    return frozenset(m.group(1) for m in _POSITION_RE.finditer(text.lower()))


def copied_phrase(text: str, subtitle: str, *, allowed: Iterable[str], n: int = 3) -> str | None:
    """The first run of ``n`` words of ``text`` also found in ``subtitle``, if any.

    A run counts only when one of its words is neither a function word nor part of an
    ``allowed`` term (the tags and labels the text may legitimately repeat): a description
    that copies the subtitles claims what only the subtitles say (seed 001, Table 16, rule 4).

    Raises:
        ValueError: when ``n < 1``.
    """
    if n < 1:
        raise ValueError(f"n = {n} must be >= 1")
    words = _WORD_RE.findall(text.lower())
    sub_words = _WORD_RE.findall(subtitle.lower())
    sub_runs = {tuple(sub_words[i:i + n]) for i in range(len(sub_words) - n + 1)}
    harmless = set(_FUNCTION_WORDS)
    for term in allowed:
        harmless.update(_WORD_RE.findall(normalize(term)))
        if term.strip():
            harmless.update(_WORD_RE.findall(normalize(plural(term))))
    for i in range(len(words) - n + 1):
        run = tuple(words[i:i + n])
        if run in sub_runs and any(w not in harmless for w in run):
            return " ".join(run)
    return None
