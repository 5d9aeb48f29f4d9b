"""Questions and options by rule (seed 000, Sec. 3.2 and App. A.3), in our own words.

- **Retrieval**: the truth plus three other labels (or names) drawn from the same candidate
  pool the needle came from.
- **Ordering**: the true order plus three *different* shuffles of the same needles.
- **Counting**: four distinct counts drawn **first** — a rounded normal around a centre,
  inside the counts that can be planted — and the truth **then** picked among them
  (:func:`draw_counts`), so wrong answers sit near the right one and, whatever four numbers
  are shown, each is the answer equally often: no option text ("1") and no rank ("the
  smallest") is a prior. Drawing the truth first and the distractors around it (the paper's
  recipe) makes "1" right whenever it is offered with 2, 3 and 4, since no distractor is < 1.

Exactly one option is correct and all four are distinct. The correct option's position in the
canonical order (``slot``) is chosen by the caller, balanced over a task's samples
(:func:`~needleforge.vnbench.plan.balanced_draw`); the other options are shuffled. The 4 tries
of circular evaluation are its rotations
(:meth:`~needleforge.vnbench.records.VNBenchSample.rotation`), so the correct option sits
under A, B, C and D once each — unlike the released VNBench data, which does not guarantee it.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence

from needleforge.vnbench.records import N_OPTIONS, Group, VNBenchError

ORDER_SEPARATOR = ", "
_MAX_DRAWS = 200

#: Question phrasings per (group, needle form). ``{label}`` is the counted thing.
WORDINGS: dict[tuple[Group, str], tuple[str, ...]] = {
    ("retrieval", "subtitle"): (
        'A caption saying "The secret word is …" is shown briefly somewhere in this video. '
        "What is the secret word?",
        "At one moment this video reveals a secret word in on-screen text. Which word is it?",
        "Somewhere in the footage a line of text announces the secret word. What does it say "
        "the secret word is?",
    ),
    ("retrieval", "image"): (
        "For one second, a still picture that does not belong to the footage is spliced into "
        "this video. What does that picture show?",
        "An unrelated image interrupts this video for a moment. What is it a picture of?",
        "One second of this video is a still image taken from elsewhere. What is in that image?",
    ),
    ("retrieval", "clip"): (
        "A short clip that does not belong to the rest of the video is spliced in. What "
        "happens in that clip?",
        "For a moment this video cuts to an unrelated clip. Which motion does that clip show?",
        "An inserted clip interrupts the footage. What does it show?",
    ),
    ("ordering", "subtitle"): (
        'Captions of the form "The secret word is …" appear one after another in this video. '
        "In what order are the secret words revealed?",
        "This video reveals four secret words in on-screen text at different moments. Which "
        "list gives them in the order they are shown?",
        "Several times a line of text announces a secret word. Put the secret words in the "
        "order they appear.",
    ),
    ("ordering", "image"): (
        "Four unrelated still pictures are spliced into this video, one at a time. In what "
        "order do they appear?",
        "The footage is interrupted four times by a still image from elsewhere. Which list "
        "gives the pictures in the order they are shown?",
        "Four inserted pictures show up in this video. Which list names them from first to last?",
    ),
    ("ordering", "clip"): (
        "Four short unrelated clips are spliced into this video. In what order do they appear?",
        "The video cuts away to four inserted clips. Which list gives their motions from first "
        "to last?",
        "Which list orders the inserted clips of this video as they are shown?",
    ),
    ("counting", "subtitle"): (
        'How many times does a caption of the form "The secret word is …" appear in this video?',
        "Captions announcing a secret word show up in this video. How many such captions are "
        "there?",
        "Count the moments at which this video shows text revealing a secret word. How many "
        "are there?",
    ),
    ("counting", "image_edit"): (
        "Copies of a picture of the {label} are pasted onto parts of the frame at several "
        "moments, sometimes more than one copy at once. How many copies appear in total?",
        "A small picture of the {label} is overlaid on this video, at times in several places "
        "of the frame. Counting every copy at every moment, how many are there?",
        "How many pasted copies of the {label} picture can be seen in this video altogether, "
        "counting each copy in each moment it appears?",
    ),
    ("counting", "image"): (
        "Still pictures of the {label} are spliced into this video. How many times does a "
        "picture of the {label} appear?",
        "How many times is the footage interrupted by a picture of the {label}?",
        "Count the inserted still pictures showing the {label}. How many are there?",
    ),
    ("counting", "clip"): (
        'Clips of "{label}" are spliced into this video. How many times does such a clip '
        "appear?",
        'How many times does the video cut away to a clip of "{label}"?',
        'Count the inserted clips showing "{label}". How many are there?',
    ),
}


def question_text(group: Group, *, form: str, rng: random.Random, label: str = "") -> str:
    """One of the phrasings for ``(group, form)``, chosen by ``rng``.

    Raises:
        VNBenchError: for a combination without phrasings.
    """
    phrasings = WORDINGS.get((group, form))
    if not phrasings:
        raise VNBenchError(f"no question wording for {group} of {form} needles")
    return rng.choice(phrasings).format(label=label)


def _shuffled(truth: str, *, negatives: Sequence[str], rng: random.Random,
              slot: int | None = None) -> tuple[list[str], int]:
    """The options with ``truth`` at ``slot`` (None: anywhere, by ``rng``), the rest shuffled."""
    options = [truth, *negatives]
    if len(options) != N_OPTIONS or len({o.strip().casefold() for o in options}) != N_OPTIONS:
        raise VNBenchError(f"options {options} are not {N_OPTIONS} distinct strings")
    if slot is None:
        rng.shuffle(options)
        return options, options.index(truth)
    if not 0 <= slot < N_OPTIONS:
        raise VNBenchError(f"slot = {slot} must be in 0..{N_OPTIONS - 1}")
    others = list(negatives)
    rng.shuffle(others)
    others.insert(slot, truth)
    return others, slot


def retrieval_options(truth: str, *, pool: Sequence[str], rng: random.Random,
                      slot: int | None = None) -> tuple[list[str], int]:
    """The truth and three other members of ``pool``; the truth at ``slot``, the rest shuffled.

    Raises:
        VNBenchError: when the pool holds fewer than three other distinct candidates.
    """
    key = truth.strip().casefold()
    by_key: dict[str, str] = {}
    for candidate in sorted(pool):  # one spelling per case-insensitive label, deterministic
        by_key.setdefault(candidate.strip().casefold(), candidate)
    others = sorted(v for k, v in by_key.items() if k != key)
    if len(others) < N_OPTIONS - 1:
        raise VNBenchError(f"the candidate pool has {len(others)} alternatives to {truth!r}; "
                           f"retrieval needs {N_OPTIONS - 1}")
    return _shuffled(truth, negatives=rng.sample(others, N_OPTIONS - 1), rng=rng, slot=slot)


def ordering_options(order: Sequence[str], *, rng: random.Random, slot: int | None = None
                     ) -> tuple[list[str], int]:
    """The true order and three distinct other shuffles of it, joined by ", "; the truth at
    ``slot``.

    Raises:
        VNBenchError: when the items are not distinct or too few to give 4 orders.
    """
    items = list(order)
    if len(set(items)) != len(items) or len(items) < 3:
        raise VNBenchError(f"ordering needs at least 3 distinct needles, got {items}")
    truth = ORDER_SEPARATOR.join(items)
    seen = {tuple(items)}
    negatives: list[str] = []
    while len(negatives) < N_OPTIONS - 1:
        candidate = rng.sample(items, len(items))
        if tuple(candidate) not in seen:
            seen.add(tuple(candidate))
            negatives.append(ORDER_SEPARATOR.join(candidate))
    return _shuffled(truth, negatives=negatives, rng=rng, slot=slot)


@dataclasses.dataclass(frozen=True, slots=True)
class CountDraw:
    """The four counting options (ascending) and the true count among them."""

    values: tuple[int, ...]
    truth: int

    def __post_init__(self) -> None:
        if len(set(self.values)) != N_OPTIONS or self.truth not in self.values \
                or min(self.values) < 1:
            raise VNBenchError(f"counting options {self.values} must be {N_OPTIONS} distinct "
                               f"positive counts holding the truth {self.truth}")


def option_range(low: int, high: int) -> tuple[int, int]:
    """The counts options are drawn from: ``[low, high]`` widened (never below 1) until it
    holds four values. Why: a range of fewer than four plantable counts must offer counts that
    are never right, a prior the bias audit then shows."""
    need = N_OPTIONS - (high - low + 1)
    if need <= 0:
        return low, high
    below = min((need + 1) // 2, low - 1)
    return low - below, high + need - below


def draw_counts(*, low: int, high: int, centre: int, rank: int, sigma: float,
                rng: random.Random) -> CountDraw:
    """Four distinct counts from a rounded normal (``sigma``) around ``centre``, inside
    :func:`option_range`, then the truth: the ``rank``-th smallest (0-based) when that count
    can be planted (``low..high``), else a uniform pick among those that can. Should the
    draws keep colliding (tiny ``sigma``), the unused counts nearest ``centre`` fill in.

    With ``rank`` drawn independently of the four counts, each shown count is the answer
    equally often, whatever the four are (see the module docstring).

    Raises:
        VNBenchError: ``low`` < 1, ``high`` < ``low``, ``sigma`` <= 0, ``centre`` outside
            ``[low, high]`` or ``rank`` outside 0..3.
    """
    if low < 1 or high < low or sigma <= 0 or not low <= centre <= high \
            or not 0 <= rank < N_OPTIONS:
        raise VNBenchError(f"counting draw needs 1 <= low <= centre <= high, sigma > 0 and "
                           f"rank in 0..{N_OPTIONS - 1} (got low {low}, centre {centre}, "
                           f"high {high}, sigma {sigma}, rank {rank})")
    first, last = option_range(low, high)
    values: list[int] = []
    for _ in range(_MAX_DRAWS):
        value = round(rng.gauss(centre, sigma))
        if first <= value <= last and value not in values:
            values.append(value)
            if len(values) == N_OPTIONS:
                break
    for value in sorted(range(first, last + 1), key=lambda v: (abs(v - centre), v)):
        if len(values) == N_OPTIONS:
            break
        if value not in values:
            values.append(value)
    values.sort()
    plantable = [v for v in values if low <= v <= high]
    truth = values[rank] if low <= values[rank] <= high else rng.choice(plantable)
    return CountDraw(values=tuple(values), truth=truth)


def counting_options(draw: CountDraw, *, rng: random.Random, slot: int | None = None
                     ) -> tuple[list[str], int]:
    """The counts of ``draw`` as option texts, the truth at ``slot``, the rest shuffled."""
    negatives = [str(v) for v in draw.values if v != draw.truth]
    return _shuffled(str(draw.truth), negatives=negatives, rng=rng, slot=slot)
