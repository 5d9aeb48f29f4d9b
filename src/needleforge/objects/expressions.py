"""Referring expressions: the shortest noun phrase that picks one object out of its scene.

For each track the phrase is built from its label plus the fewest attributes that no other
track of the **same label** in the scene shares, trying attribute sets by size and, within a
size, in the priority colour > position > size::

    (none)  "the cat"                 the only cat of the scene
    colour  "the white cat"
    position "the cat on the left"
    size    "the larger cat"
    colour+position "the white cat on the left", then colour+size, position+size, all three:
            "the larger white cat on the left"

Size words are relative to the tracks the other chosen attributes leave (the white cats on
the left): "larger"/"smaller" between two, "largest"/"smallest" among more, from
:attr:`ObjectAttributes.size_rank` (tracks sharing a rank, or in the middle of three or more,
cannot be told apart by size: "second-largest" is nothing a viewer can check). An attribute
that is empty (``""``) is never used. People never get a colour word before the noun: "the
person in black on the left" (:func:`~needleforge.records.phrases.with_colour`).

When no attribute set singles a track out, the phrase says so — "the white cat on the left
(one of two alike)" — and writers skip the object: an ordinal such as "the first of the two
white cats" cannot be resolved by a viewer of the montage.

**Uniqueness.** Within a scene, the phrases that tell their object apart are pairwise
different, and none reads like an untellable phrase before its mark. By construction, two
equal phrases would need the same label, the same attribute set with the same values and
the same relative size, which the selection rules exclude. The one way around that argument
is a label that itself contains attribute words (a "white cat" beside a white "cat"); such
collisions are detected and each colliding phrase is marked untellable like any other
look-alike ("the white cat (one of two alike)"). A phrase is never numbered with an internal
id: "(object 3)" tells a viewer nothing. Untellable phrases may repeat: "the person (one of
four alike)" is the phrase of each of four people no attribute separates, and no writer
uses it.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from typing import Literal, Protocol

from needleforge.records import ObjectAttributes
from needleforge.records.phrases import (
    UNTELLABLE_MARK,
    clean_label,
    number_word,
    position_phrase,
    with_colour,
)

Attribute = Literal["colour", "position", "size"]

#: Attribute sets in the order they are tried: fewest first, then colour > position > size.
_ATTRIBUTES: tuple[Attribute, ...] = ("colour", "position", "size")
ATTRIBUTE_SETS: tuple[tuple[Attribute, ...], ...] = tuple(
    combo for n in range(4) for combo in itertools.combinations(_ATTRIBUTES, n)
)

_ORDINALS = ("zeroth", "first", "second", "third", "fourth", "fifth", "sixth", "seventh",
             "eighth", "ninth", "tenth", "eleventh", "twelfth")


class Referent(Protocol):
    """What a referring expression needs to know about a track (``ObjectTrack`` has it)."""

    @property
    def tag(self) -> str: ...

    @property
    def attributes(self) -> ObjectAttributes: ...

    @property
    def start_s(self) -> float: ...


def ordinal_word(n: int) -> str:
    """``1`` → ``"first"`` up to twelfth, then ``"13th"``, ``"21st"``…"""
    if 0 <= n < len(_ORDINALS):
        return _ORDINALS[n]
    suffix = "th" if 11 <= n % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _value(track: Referent, attribute: Attribute) -> str | int:
    attrs = track.attributes
    if attribute == "colour":
        return attrs.colour.strip()
    if attribute == "position":
        return attrs.position.strip()
    return attrs.size_rank


def _size_word(rank: int, others: Sequence[int]) -> str | None:
    """How ``rank`` compares with ``others`` (the rest of the group); None when tied."""
    if rank in others:
        return None
    larger = sum(1 for r in others if r < rank)
    if not others:
        return None
    if len(others) == 1:
        return "larger" if larger == 0 else "smaller"
    if larger == 0:
        return "largest"
    if larger == len(others):
        return "smallest"
    return None


def _phrase(*, label: str, colour: str, position: str, size: str = "") -> str:
    words = ["the", size, with_colour(label, colour), position_phrase(position)]
    return " ".join(w for w in words if w)


def _attribute_phrase(i: int, same: Sequence[int], tracks: Sequence[Referent]) -> str | None:
    """The phrase for the first attribute set that singles track ``i`` out, if any."""
    me = tracks[i]
    for attribute_set in ATTRIBUTE_SETS:
        if any(_value(me, a) == "" for a in attribute_set):
            continue
        fixed = [a for a in attribute_set if a != "size"]
        group = [j for j in same if all(_value(tracks[j], a) == _value(me, a) for a in fixed)]
        size = ""
        if "size" in attribute_set:
            others = [tracks[j].attributes.size_rank for j in group if j != i]
            size = _size_word(me.attributes.size_rank, others) or ""
            if not size:
                continue
        elif len(group) > 1:
            continue
        return _phrase(label=clean_label(me.tag),
                       colour=str(_value(me, "colour")) if "colour" in fixed else "",
                       position=str(_value(me, "position")) if "position" in fixed else "",
                       size=size)
    return None


def _untellable_phrase(i: int, same: Sequence[int], tracks: Sequence[Referent]) -> str:
    """"the white cat on the left (one of two alike)": no attribute tells it apart, and an
    ordinal ("the second of the three") is nothing a viewer of a montage can resolve."""
    me = tracks[i]
    # An attribute it lacks separates nothing: a person in the centre whose clothes were not
    # measured is one of two alike beside a person in black in the centre, never "one of one".
    group = [j for j in same if all(_value(tracks[j], a) == _value(me, a) or not _value(me, a)
                                    for a in ("colour", "position"))]
    base = _phrase(label=clean_label(me.tag), colour=str(_value(me, "colour")),
                   position=str(_value(me, "position")))
    return f"{base}{UNTELLABLE_MARK}{number_word(len(group))} alike)"


def referring_expressions(tracks: Sequence[Referent]) -> list[str]:
    """One phrase per track of **one scene**, aligned with ``tracks``; the phrases that tell
    their track apart are unique, the others carry :data:`UNTELLABLE_MARK`.

    See the module docstring for the selection rules and the uniqueness guarantee. Labels
    are compared after collapsing whitespace and ignoring case. Raises ``ValueError`` when a
    track's tag is empty.
    """
    for index, track in enumerate(tracks):
        if not clean_label(track.tag):
            raise ValueError(f"track {index}: tag = {track.tag!r} must not be empty")
    by_label: dict[str, list[int]] = {}
    for index, track in enumerate(tracks):
        by_label.setdefault(clean_label(track.tag).lower(), []).append(index)
    phrases = []
    for index, track in enumerate(tracks):
        same = by_label[clean_label(track.tag).lower()]
        phrase = _attribute_phrase(index, same, tracks)
        phrases.append(phrase if phrase is not None else _untellable_phrase(index, same, tracks))
    # A phrase is ambiguous when another one reads the same before any untellable mark.
    counts = Counter(p.split(UNTELLABLE_MARK)[0] for p in phrases)
    return [p if counts[p] == 1 or UNTELLABLE_MARK in p
            else f"{p}{UNTELLABLE_MARK}{number_word(counts[p])} alike)" for p in phrases]
