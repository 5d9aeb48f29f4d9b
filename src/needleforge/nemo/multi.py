"""Multi-needle pieces: a target cut on the keyframe grid and spread among the negatives.

NeMo (seed 001, App. D.4) turns a single-needle question whose target lasts more than six
seconds into a multi-needle one: the target is cut into clips of more than two seconds that
are inserted at random places in the montage, and the answer is every clip's span.

Rules kept here (the planner in :mod:`~needleforge.nemo.grow` relies on them):

* **Grid.** The render cache has a keyframe every whole second from each scene's start and
  the target span already starts on that grid (:func:`targets.object_span`), so every cut is
  ``start + k`` for a whole ``k``: all pieces but the last last a whole number of seconds,
  the last one takes the remainder and ends exactly where the target ends. Together the
  pieces are the target span, with no gap and no overlap.
* **Length.** Every piece lasts at least ``min_piece_s`` (whole pieces at least
  ``ceil(min_piece_s)``); the spare seconds are spread by a uniformly drawn composition.
* **Placement.** Pieces go into distinct gaps between negatives (before the first, between
  two, after the last), so no two target segments are ever adjacent: two adjacent pieces
  would play as one clip and merge into one answer span. That needs ``pieces <= negatives
  + 1``. The order of pieces among themselves is shuffled too (the paper inserts them at
  random).
* **Flat in time** (:func:`time_gaps`). A gap is drawn by *time*, not by index: a uniform
  moment of the negatives' running time is drawn and the nearest gap taken. Drawing the
  index uniformly puts the target first (at 0 s) once in ``n + 1`` montages whatever their
  lengths, and a model that always answers "the start" scores on that alone; drawn by time,
  the target's start is spread evenly over the montage, the position prior the bias audit
  measures.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import random
from collections.abc import Callable, Sequence
from typing import TypeVar

from needleforge.records import Role, Scene, Segment
from needleforge.records.questions import Span

_T = TypeVar("_T")
#: Slack for float seconds compared against whole-second thresholds.
_EPS = 1e-9


@dataclasses.dataclass(frozen=True, slots=True)
class ScenePiece:
    """Source seconds ``[start_s, end_s)`` of ``scene`` bound for a montage: a negative scene
    or (a piece of) target ``target_id``. Seconds, not a
    :class:`~needleforge.records.span.FrameSpan`: the stored segments and the ids hashed from
    them are these floats, from the same float sums since the first plans, and exact times
    differ in the last bit (``(0.587589 + 1) + 3`` is ``4.5875889999999995``)."""

    scene: Scene
    start_s: float
    end_s: float
    role: Role
    target_id: str | None = None

    @property
    def duration_s(self) -> float:
        """Length of the piece in seconds."""
        return self.end_s - self.start_s


def tile(pieces: Sequence[ScenePiece]) -> tuple[Segment, ...]:
    """The pieces as montage segments back to back, target pieces numbered per target in
    order (``needle_index`` 0, 1, …). Starts are rounded to 1 ns so sums print cleanly (15.0,
    not 14.999999999999998) while staying far inside the montage's 1 µs tiling tolerance."""
    segments: list[Segment] = []
    clock = 0.0
    counters: dict[str | None, int] = {}
    for position, piece in enumerate(pieces):
        index = None
        if piece.role == "target":
            index = counters.get(piece.target_id, 0)
            counters[piece.target_id] = index + 1
        segment = Segment(position=position, video_id=piece.scene.video_id,
                          scene_id=piece.scene.scene_id, src_start_s=piece.start_s,
                          src_end_s=piece.end_s, montage_start_s=round(clock, 9),
                          role=piece.role, needle_index=index, target_id=piece.target_id)
        segments.append(segment)
        clock = segment.montage_end_s
    return tuple(segments)


def _whole_piece_s(min_piece_s: float) -> int:
    """Length floor of a piece that must last a whole number of seconds."""
    return max(1, math.ceil(min_piece_s - _EPS))


def piece_limit(duration_s: float, *, min_piece_s: float) -> int:
    """The most pieces a target of ``duration_s`` splits into under the rules (1 = none).

    Raises:
        ValueError: when ``min_piece_s`` is not positive.
    """
    if min_piece_s <= 0:
        raise ValueError(f"min_piece_s = {min_piece_s} must be > 0")
    spare_s = duration_s - min_piece_s
    step = _whole_piece_s(min_piece_s)
    if spare_s + _EPS < step:
        return 1
    return math.floor(spare_s / step + _EPS) + 1


def split_span(
    span: Span, *, n_pieces: int, min_piece_s: float, rng: random.Random
) -> tuple[Span, ...]:
    """``span`` cut into ``n_pieces`` contiguous pieces at whole seconds from its start.

    The first ``n_pieces - 1`` pieces last a whole number of seconds (at least
    ``ceil(min_piece_s)``), the last one at least ``min_piece_s`` and ends at ``span[1]``.

    Raises:
        ValueError: when ``n_pieces`` < 2 or more than :func:`piece_limit` allows.
    """
    start_s, end_s = span
    limit = piece_limit(end_s - start_s, min_piece_s=min_piece_s)
    if not 2 <= n_pieces <= limit:
        raise ValueError(f"n_pieces = {n_pieces} not in [2, {limit}] for a span of "
                         f"{end_s - start_s:.3f} s with min_piece_s = {min_piece_s}")
    step = _whole_piece_s(min_piece_s)
    spare = math.floor(end_s - start_s - min_piece_s + _EPS) - (n_pieces - 1) * step
    # Stars and bars: n_pieces - 1 bars among spare + n_pieces - 1 slots split the spare
    # whole seconds into n_pieces parts; the last part stays with the last piece.
    bars = sorted(rng.sample(range(spare + n_pieces - 1), n_pieces - 1))
    extras = [bar - prev - 1 for prev, bar in zip([-1, *bars[:-1]], bars, strict=True)]
    # Each cut is computed once and shared by the pieces on both sides of it, so pieces
    # meet exactly (no float gap between one piece's end and the next one's start).
    cuts = [start_s]
    offset = 0
    for extra in extras:
        offset += step + extra
        cuts.append(start_s + offset)
    cuts.append(end_s)
    return tuple(itertools.pairwise(cuts))


def draw_piece_count(
    span: Span, *, min_piece_s: float, max_pieces: int | None, room: int | None,
    rng: random.Random,
) -> int:
    """A uniformly drawn piece count in ``[2, limit]`` (0 when the span cannot be split).

    ``limit`` is the smallest of :func:`piece_limit`, ``max_pieces`` and ``room`` (how many
    target segments the negatives can keep apart); None means no such bound.
    """
    limit = piece_limit(span[1] - span[0], min_piece_s=min_piece_s)
    for bound in (max_pieces, room):
        if bound is not None:
            limit = min(limit, bound)
    return rng.randint(2, limit) if limit >= 2 else 0


def time_gaps(durations: Sequence[float], count: int, *, rng: random.Random) -> list[int]:
    """``count`` distinct gaps (0 = before the first of the pieces lasting ``durations``,
    ``len(durations)`` = after the last), in order, each drawn by time.

    A gap's chance is the share of the running time nearer to it than to any other gap (half
    of each neighbouring piece; the two ends get half of one), so a needle's start lands
    evenly over the montage. Taken gaps are drawn again without them. Pieces of no length
    fall back to every gap equally likely.

    Raises:
        ValueError: ``count`` outside ``[0, len(durations) + 1]`` or a negative duration.
    """
    if not 0 <= count <= len(durations) + 1:
        raise ValueError(f"{count} needles cannot be kept apart by {len(durations)} "
                         f"negatives (at most {len(durations) + 1})")
    if any(d < 0 or not math.isfinite(d) for d in durations):
        raise ValueError(f"durations must be finite and >= 0, got {list(durations)}")
    padded = [0.0, *durations, 0.0]
    weight = {g: (padded[g] + padded[g + 1]) / 2 for g in range(len(durations) + 1)}
    chosen: list[int] = []
    for _ in range(count):
        free = [g for g in weight if g not in chosen]
        shares = [weight[g] for g in free]
        chosen.append(rng.choices(free, weights=shares)[0] if sum(shares) > 0
                      else rng.choice(free))
    return sorted(chosen)


def interleave(
    negatives: Sequence[_T], needles: Sequence[_T], *, rng: random.Random,
    duration: Callable[[_T], float] | None = None,
) -> list[_T]:
    """``needles`` shuffled into distinct random gaps of ``negatives`` (never adjacent).

    The negatives keep their order; each gap (before, between, after them) takes at most
    one needle. With ``duration`` (a negative's length) gaps are drawn by time
    (:func:`time_gaps`), else every choice of gaps is equally likely.

    Raises:
        ValueError: when there are more needles than gaps (``len(negatives) + 1``).
    """
    if len(needles) > len(negatives) + 1:
        raise ValueError(f"{len(needles)} needles cannot be kept apart by "
                         f"{len(negatives)} negatives (at most {len(negatives) + 1})")
    order = list(needles)
    rng.shuffle(order)
    if duration is not None:
        gaps = time_gaps([duration(n) for n in negatives], len(order), rng=rng)
    else:
        gaps = sorted(rng.sample(range(len(negatives) + 1), len(order)))
    out: list[_T] = []
    pending = iter(order)
    chosen = iter(gaps)
    gap = next(chosen, None)
    for i in range(len(negatives) + 1):
        if gap == i:
            out.append(next(pending))
            gap = next(chosen, None)
        if i < len(negatives):
            out.append(negatives[i])
    return out
