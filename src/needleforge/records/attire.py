"""People told apart by what they wear: "the person in black" against the people of a negative.

Why: on real footage nearly every scene shows somebody, so a question about "the person in
black" whose negatives may show **no person at all** finds no negatives, and a program of
people yields nothing (issue 32: "0 of 9 eligible fit … negatives may hold none of
['person']"). The description does not claim that nobody else exists; it claims that nobody
else *in black* does. So a negative may show people as long as none of them could be the
one described:

* every person seen there has a **known** clothing colour (a person whose torso could not be
  measured — a face close-up, a back in shadow, a body pose without a box — could be
  anyone, and refuses the negative), and
* none of those colours is **near** the described one (:data:`NEAR_COLOURS`): a viewer who
  reads "in black" may well point at navy, dark brown or charcoal, so those refuse too.

The rule is one module so that the three places that apply it agree: the negatives drawn
from the tables (:mod:`needleforge.nemo.negatives`), the probe that looks again at each
negative (:mod:`needleforge.nemo.checks.negative_scan`), and the looking verifier
(:mod:`needleforge.backends.embedded.verifier`). Only people are qualified this way: their
clothing colour is measured on the torso with the skin left out; another object's dominant
colour is a weaker signal (lighting, background), and its label stays excluded outright.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from needleforge.records.phrases import COLOUR_NAMES, is_person, normalize

#: The colours a viewer could take for each described colour (symmetric; each holds itself).
#: Dark colours run together under studio or street light, and so do pale ones.
_NEAR_PAIRS: tuple[tuple[str, str], ...] = (
    ("black", "grey"), ("black", "brown"), ("black", "blue"), ("black", "purple"),
    ("white", "grey"), ("white", "pink"), ("white", "yellow"),
    ("grey", "blue"), ("grey", "brown"),
    ("red", "pink"), ("red", "orange"), ("red", "brown"), ("red", "purple"),
    ("orange", "brown"), ("orange", "yellow"),
    ("yellow", "green"),
    ("green", "blue"),
    ("blue", "purple"),
    ("purple", "pink"),
)
NEAR_COLOURS: dict[str, frozenset[str]] = {
    colour: frozenset({colour} | {b for a, b in _NEAR_PAIRS if a == colour}
                      | {a for a, b in _NEAR_PAIRS if b == colour})
    for colour in COLOUR_NAMES
}
#: What a person whose clothing colour could not be measured is recorded as.
UNKNOWN = ""
#: How a probe's per-colour person sighting is labelled: ``person~black``, ``person~`` for a
#: person whose clothing could not be measured. ``~`` is no word character, so the whole
#: label still *holds* ``person`` (:func:`needleforge.records.phrases.holds`).
SIGHTING_SEPARATOR = "~"


def could_be(described: str, seen: str) -> bool:
    """Whether a person seen wearing ``seen`` (``""``: unknown) could be the one described
    as wearing ``described``.

    Raises:
        ValueError: ``described`` is not a basic colour name.
    """
    if described not in NEAR_COLOURS:
        raise ValueError(f"described colour {described!r} is not one of {list(COLOUR_NAMES)}")
    seen = seen.strip()
    return seen == UNKNOWN or seen in NEAR_COLOURS[described]


def described_attire(text: str, labels: Iterable[str]) -> dict[str, str]:
    """``{label: colour}`` for each person label of ``labels`` that ``text`` describes by
    its clothing ("the person in black on the left" → ``{"person": "black"}``).

    A label named twice with different colours, or once without a colour, is left out: the
    text then also speaks of a person it does not qualify, and the label stays excluded.
    """
    lowered = normalize(text)
    colours = "|".join(COLOUR_NAMES)
    found: dict[str, str] = {}
    for label in {normalize(x) for x in labels if is_person(x)}:
        mentions = list(re.finditer(rf"(?<![a-z0-9]){re.escape(label)}(?![a-z0-9])", lowered))
        qualified = [re.match(rf" in ({colours})(?![a-z0-9])", lowered[m.end():])
                     for m in mentions]
        named = {q.group(1) for q in qualified if q is not None}
        if mentions and len(named) == 1 and all(q is not None for q in qualified):
            found[label] = named.pop()
    return found


def sighting_label(label: str, colour: str) -> str:
    """The probe's label for a person of ``colour`` (``""``: unknown): ``person~black``."""
    return f"{normalize(label)}{SIGHTING_SEPARATOR}{colour.strip()}"


def split_sighting_label(label: str) -> tuple[str, str] | None:
    """``(label, colour)`` of a per-colour sighting label, or None for a plain label."""
    if SIGHTING_SEPARATOR not in label:
        return None
    base, _, colour = label.partition(SIGHTING_SEPARATOR)
    return base, colour
