"""Filling one lane: which sources it may use, how they are grouped, and the per-type caps.

Order of work in a lane (rules explained in :mod:`~needleforge.nemo.expand`):

1. **Eligible sources**: all sources of a needle type whose cap is not 0; multi-needle lanes
   only those whose target lasts more than ``min_multi_target_s`` (seed 001, App. D.4).
2. **Groups**: sources in a seeded random order join the first open, compatible group of
   their video (short, medium) or program (long) with room left; a group is full at the
   lane's target count. Full groups come first (in the order they filled), then partial ones.
3. **Caps**: groups are planned in that order; members of a type whose cap is reached are
   dropped from the group first. A group that cannot be planned releases its members'
   places, so a later group can still reach the cap.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from needleforge.nemo.grow import Lane, PlanContext, compatible
from needleforge.nemo.sources import Source
from needleforge.params import CellCaps, ExpandParams
from needleforge.records import NeedleType
from needleforge.records.questions import SHORT_MAX_S

#: Plans a group in a lane; returns (needle type, verdict passed) of every question made
#: (empty when the group was skipped).
GroupPlanner = Callable[[list[Source], Lane], list[tuple[NeedleType, bool]]]
#: Told which groups a lane is about to plan (their members within the caps).
GroupsExpected = Callable[[Sequence[list[Source]], Lane], None]
_TYPES: tuple[NeedleType, ...] = ("object", "scene")
_EPS = 1e-9


def lanes_for(params: ExpandParams) -> tuple[Lane, ...]:
    """The five output rows in the order they are filled (short multi first)."""
    medium = (params.medium_min_s, params.medium_max_s, params.medium_targets)
    long_ = (params.long_min_s, params.long_max_s, params.long_targets)
    return (
        Lane("short", "multi", 0.0, SHORT_MAX_S, 1),
        Lane("medium", "single", *medium), Lane("medium", "multi", *medium),
        Lane("long", "single", *long_), Lane("long", "multi", *long_),
    )


def eligible_sources(
    sources: Sequence[Source], lane: Lane, *, caps: CellCaps, params: ExpandParams
) -> list[Source]:
    """Sources the lane may use, in their given order."""
    return [s for s in sources
            if getattr(caps, s.needle_type) != 0
            and (lane.needles == "single" or s.duration_s > params.min_multi_target_s + _EPS)]


def group_sources(
    sources: Sequence[Source], lane: Lane, *, ctx: PlanContext
) -> list[list[Source]]:
    """Greedy compatible groups of at most ``lane.targets`` (full ones first)."""
    def key(source: Source) -> str:
        video = source.scene.video_id
        return ctx.pool.program_of[video] if lane.bucket == "long" else video

    full: list[list[Source]] = []
    partial: dict[str, list[list[Source]]] = {}
    opened: list[list[Source]] = []
    for source in sources:
        groups = partial.setdefault(key(source), [])
        home = next((g for g in groups
                     if all(compatible(source, m, index=ctx.index) for m in g)), None)
        if home is None:
            home = []
            groups.append(home)
            opened.append(home)
        home.append(source)
        if len(home) >= lane.targets:
            groups[:] = [g for g in groups if g is not home]
            full.append(home)
    return full + [g for g in opened if len(g) < lane.targets]


def lane_groups(sources: Sequence[Source], lane: Lane, *, caps: CellCaps, ctx: PlanContext,
                params: ExpandParams) -> list[list[Source]]:
    """The groups :func:`fill_lane` goes through in ``lane``, in order (it stops early once
    the caps are reached): the total of its progress count."""
    return _groups(eligible_sources(sources, lane, caps=caps, params=params), lane, ctx=ctx,
                   params=params)


def fill_lane(
    sources: Sequence[Source], lane: Lane, *, caps: CellCaps, ctx: PlanContext,
    params: ExpandParams, plan: GroupPlanner, expect: GroupsExpected | None = None,
    on_group: Callable[[], None] | None = None,
) -> dict[NeedleType, tuple[int, int, int]]:
    """Plan the lane's groups up to the caps; per needle type (eligible, made, passed).

    ``expect`` is told of each group just before it is planned (a negative check told ahead
    of the groups it will be asked for can batch its work: :func:`likely_groups`).
    ``on_group()`` is called after each group of :func:`lane_groups` is planned or passed
    over (a progress count).
    """
    pool = eligible_sources(sources, lane, caps=caps, params=params)
    made = dict.fromkeys(_TYPES, 0)
    passed = dict.fromkeys(_TYPES, 0)
    for group in _groups(pool, lane, ctx=ctx, params=params):
        kept = _kept(group, caps, made)
        if kept:
            if expect is not None:
                expect([kept], lane)
            for needle_type, ok in plan(kept, lane):
                made[needle_type] += 1
                passed[needle_type] += int(ok)
        if on_group is not None:
            on_group()
        if kept and _full(caps, made):
            break
    eligible = {t: sum(1 for s in pool if s.needle_type == t) for t in _TYPES}
    return {t: (eligible[t], made[t], passed[t]) for t in _TYPES}


def likely_groups(sources: Sequence[Source], lane: Lane, *, caps: CellCaps, ctx: PlanContext,
                  params: ExpandParams, viable: Callable[[list[Source]], bool]
                  ) -> list[list[Source]]:
    """The groups :func:`fill_lane` is likely to plan in ``lane`` (members within the caps),
    in the order planned: those up to the caps if every ``viable`` group is made, a group
    that is not viable being halved as the planner halves a group that fails
    (:func:`~needleforge.nemo.expand.expand`). A forecast, for batching work ahead."""
    groups = _groups(eligible_sources(sources, lane, caps=caps, params=params), lane, ctx=ctx,
                     params=params)
    made = dict.fromkeys(_TYPES, 0)
    likely: list[list[Source]] = []
    for group in groups:
        kept = _kept(group, caps, made)
        if not kept:
            continue
        for part in _viable_parts(kept, viable):
            likely.append(part)
            for source in part:
                made[source.needle_type] += 1
        if _full(caps, made):
            break
    return likely


def _viable_parts(group: list[Source], viable: Callable[[list[Source]], bool]
                  ) -> list[list[Source]]:
    if viable(group):
        return [group]
    if len(group) == 1:
        return []
    half = (len(group) + 1) // 2
    return _viable_parts(group[:half], viable) + _viable_parts(group[half:], viable)


def _groups(pool: Sequence[Source], lane: Lane, *, ctx: PlanContext, params: ExpandParams
            ) -> list[list[Source]]:
    """The lane's groups of eligible sources, in a seeded order, as they are planned."""
    order = list(pool)
    random.Random(f"nemo-expand-order:{params.seed}:{lane.bucket}:{lane.needles}").shuffle(order)
    return group_sources(order, lane, ctx=ctx)


def _kept(group: list[Source], caps: CellCaps, made: dict[NeedleType, int]) -> list[Source]:
    """The members of ``group`` whose type's cap still has room, given ``made``."""
    # Places left per type before this group (None = no cap).
    room: dict[NeedleType, int | None] = {
        t: None if getattr(caps, t) < 0 else getattr(caps, t) - made[t] for t in _TYPES}
    kept: list[Source] = []
    for source in group:
        left = room[source.needle_type]
        if left is None or left > 0:
            kept.append(source)
            room[source.needle_type] = None if left is None else left - 1
    return kept


def _full(caps: CellCaps, made: dict[NeedleType, int]) -> bool:
    return all(getattr(caps, t) >= 0 and made[t] >= getattr(caps, t) for t in _TYPES)
