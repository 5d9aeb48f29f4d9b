"""One expanded montage: a group of verified targets, more negatives, on the render grid.

A **lane** is one output row: a bucket (short/medium/long) and single- or multi-needle.
:func:`plan_group` turns a group of compatible sources (see :mod:`~needleforge.nemo.expand`)
into a montage of that lane, or says why it cannot:

1. **Target segments.** Single-needle: each target's verified span as it was. Multi-needle:
   each span cut on its scene's whole-second grid (:mod:`~needleforge.nemo.multi`).
2. **Negatives.** Short lane: the short montage's own negatives (the montage keeps its
   length). Medium/long: a length is drawn uniformly from the lane's range, then negatives
   are taken — first the group's short-montage negatives (they passed verification), then
   the other scenes of the targets' videos, then (long only) of the other videos of the same
   program, each list in a seeded random order — skipping any scene that is a target,
   already used, shorter than ``min_negative_s``, longer than the room left, or that holds
   an excluded term of **any** target of the group, or (with a negative probe) in which the
   label of any object target of the group, or that object itself, is seen. Taking stops
   once the length is reached, the montage is in its bucket and there are enough negatives
   to keep target segments apart.
3. **Order.** Negatives are shuffled, then target segments go into distinct random gaps,
   drawn by time (:func:`multi.interleave`: never two target segments adjacent, starts
   spread evenly over the montage).

Failure (too few negatives, a program with one short video) returns a :class:`GroupSkip`
with the figures, never a montage outside its bucket. Montage ids hash the lane, the seed,
the targets and every segment, so equal inputs give equal plans.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
from collections.abc import Iterator, Sequence

from needleforge.nemo.checks.negative_scan import KnowsLabels, NegativeProbe
from needleforge.nemo.multi import ScenePiece, draw_piece_count, interleave, split_span, tile
from needleforge.nemo.plan import content_digest
from needleforge.nemo.pool import ScenePool, TermIndex, lazy_shuffle
from needleforge.nemo.sources import Source
from needleforge.nemo.stats import Needles
from needleforge.records import Bucket, Montage, Scene, Segment, bucket_for

_EPS = 1e-9


@dataclasses.dataclass(frozen=True, slots=True)
class Lane:
    """One row of the benchmark to fill: bucket, needle count, length range, group size."""

    bucket: Bucket
    needles: Needles
    min_s: float
    max_s: float
    targets: int

    def __post_init__(self) -> None:
        if self.targets < 1 or self.max_s < self.min_s:
            raise ValueError(f"lane {self.bucket}/{self.needles}: targets = {self.targets} "
                             f"must be >= 1 and max_s = {self.max_s} >= min_s = {self.min_s}")


@dataclasses.dataclass(frozen=True, slots=True)
class GroupSkip:
    """Why a group of sources got no montage in a lane."""

    reason: str


@dataclasses.dataclass(frozen=True, slots=True)
class PlanContext:
    """What every group of one expansion run plans against."""

    pool: ScenePool
    index: TermIndex
    seed: int
    min_negative_s: float
    min_piece_s: float
    max_pieces: int | None
    #: Stage 2's negative check, applied to every negative an object group would take.
    probe: NegativeProbe | None = None


def blocked(
    scene_id: str, *, excluded: frozenset[str], claims: Sequence[frozenset[str]],
    index: TermIndex,
) -> bool:
    """True when the scene may not be a distractor: it holds an excluded term, or every
    term a scene description names (it would fit that description too). The terms must be
    watched by ``index`` (checked once by the caller: this runs in the innermost loop)."""
    held = index.held(scene_id)
    return not held.isdisjoint(excluded) or any(c <= held for c in claims)


def compatible(a: Source, b: Source, *, index: TermIndex) -> bool:
    """True when targets ``a`` and ``b`` may share a montage: distinct scenes, and each
    target's scene is a valid distractor for the other's question.

    Raises:
        ValueError: when either source's terms are not watched by ``index``.
    """
    index.require_watched(a.excluded | a.claims | b.excluded | b.claims)
    return (a.scene.scene_id != b.scene.scene_id
            and not blocked(a.scene.scene_id, excluded=b.excluded,
                            claims=(b.claims,) if b.claims else (), index=index)
            and not blocked(b.scene.scene_id, excluded=a.excluded,
                            claims=(a.claims,) if a.claims else (), index=index))


def expanded_montage_id(
    lane: Lane, sources: Sequence[Source], segments: Sequence[Segment], *, seed: int
) -> str:
    """``m`` + 16 hex digits of the sha256 of the lane, seed, targets and every segment."""
    return "m" + content_digest({
        "stage": "expand", "bucket": lane.bucket, "needles": lane.needles, "seed": seed,
        "targets": sorted([s.needle_type, s.target_id] for s in sources),
        "segments": [[s.scene_id, round(s.src_start_s, 6), round(s.src_end_s, 6), s.role,
                      s.needle_index, s.target_id] for s in segments],
    })


def _target_pieces(
    sources: Sequence[Source], lane: Lane, *, ctx: PlanContext, room: int | None,
    rng: random.Random,
) -> list[ScenePiece] | GroupSkip:
    pieces: list[ScenePiece] = []
    for i, source in enumerate(sources):
        if lane.needles == "single":
            pieces.append(ScenePiece(source.scene, *source.span, "target", source.target_id))
            continue
        left = None if room is None else room - (len(sources) - 1 - i) * 2 - len(pieces)
        n = draw_piece_count(source.span, min_piece_s=ctx.min_piece_s,
                             max_pieces=ctx.max_pieces, room=left, rng=rng)
        if n < 2:
            return GroupSkip(f"target {source.target_id} ({source.duration_s:.2f} s) cannot "
                             f"be cut into 2+ pieces of >= {ctx.min_piece_s} s kept apart by "
                             f"the montage's negatives")
        pieces.extend(ScenePiece(source.scene, *span, "target", source.target_id) for span in
                      split_span(source.span, n_pieces=n, min_piece_s=ctx.min_piece_s,
                                 rng=rng))
    return pieces


def _candidates(
    sources: Sequence[Source], lane: Lane, *, pool: ScenePool, rng: random.Random
) -> Iterator[Scene]:
    """Negative candidates in the order they are tried (rules in the module docstring)."""
    videos = sorted({s.scene.video_id for s in sources})
    own = itertools.chain.from_iterable(s.negatives for s in sources)
    same_video = lazy_shuffle([sc for v in videos for sc in pool.video_scenes(v)], rng=rng)
    if lane.bucket != "long":
        return itertools.chain(own, same_video)
    program = pool.program_of[videos[0]]
    return itertools.chain(own, same_video, lazy_shuffle(pool.program_scenes(program), rng=rng))


def candidate_negatives(sources: Sequence[Source], lane: Lane, *, ctx: PlanContext
                        ) -> list[Scene]:
    """Every scene :func:`plan_group` may ask the negative check about for ``sources`` in
    ``lane`` (in no useful order): the candidates it would try, less the targets' scenes,
    those too short and those the group's terms block. None in a short lane (its negatives
    are the short montage's, checked in stage 2)."""
    if lane.bucket == "short":
        return []
    excluded = frozenset().union(*(s.excluded for s in sources))
    claims = [s.claims for s in sources if s.claims]
    ctx.index.require_watched(excluded.union(*claims))
    used = {s.scene.scene_id for s in sources}
    found: dict[str, Scene] = {}
    for scene in _candidates(sources, lane, pool=ctx.pool, rng=random.Random(0)):
        if (scene.scene_id not in used and scene.scene_id not in found
                and scene.duration_s + _EPS >= ctx.min_negative_s
                and not blocked(scene.scene_id, excluded=excluded, claims=claims,
                                index=ctx.index)):
            found[scene.scene_id] = scene
    return list(found.values())


def _fill(
    sources: Sequence[Source], lane: Lane, *, base_s: float, needed: int, ctx: PlanContext,
    rng: random.Random,
) -> tuple[list[Scene], float, int]:
    """Negatives until the drawn length, the bucket and ``needed`` count are all met.

    Returns the chosen scenes, the montage length with them, and how many eligible scenes
    were seen.
    """
    goal_s = rng.uniform(lane.min_s, lane.max_s)
    excluded = frozenset().union(*(s.excluded for s in sources))
    claims = [s.claims for s in sources if s.claims]
    ctx.index.require_watched(excluded.union(*claims))
    used = {s.scene.scene_id for s in sources}
    objects = [s.target for s in sources if s.target.target_object is not None]
    chosen: list[Scene] = []
    total_s, eligible = base_s, 0
    for scene in _candidates(sources, lane, pool=ctx.pool, rng=rng):
        if (total_s + _EPS >= goal_s and bucket_for(total_s) == lane.bucket
                and len(chosen) >= needed):
            break
        if (scene.scene_id in used or scene.duration_s + _EPS < ctx.min_negative_s
                or blocked(scene.scene_id, excluded=excluded, claims=claims, index=ctx.index)):
            continue
        used.add(scene.scene_id)
        eligible += 1
        if total_s + scene.duration_s > lane.max_s + _EPS:
            continue
        if ctx.probe is not None and any(ctx.probe.evidence(scene, t) for t in objects):
            continue  # an object target (or its label) is seen here: the answer would miss it
        chosen.append(scene)
        total_s += scene.duration_s
    return chosen, total_s, eligible


def _shortfall(
    sources: Sequence[Source], lane: Lane, *, total_s: float, count: int, needed: int,
    eligible: int, pool: ScenePool, bound: bool = False,
) -> GroupSkip:
    """Why a group's montage is too short; ``bound``: ``count`` and ``total_s`` are the most
    the candidates left by the stored label scans could give (:func:`_hopeless`)."""
    video = sources[0].scene.video_id
    program = pool.program_of[video]
    n_videos = len(pool.videos_of[program])
    scope = (f"program {program!r} ({n_videos} video{'s' if n_videos != 1 else ''})"
             if lane.bucket == "long" else f"video {video}")
    apart = f" and >= {needed} negatives to keep its target segments apart" if needed else ""
    single = (" — the program has a single video, so only its own scenes could be used"
              if lane.bucket == "long" and n_videos == 1 else "")
    return GroupSkip(
        f"too few negatives for a {lane.bucket} montage of {len(sources)} target"
        f"{'s' if len(sources) != 1 else ''}: {eligible} eligible scenes in {scope} give "
        f"{'at most ' if bound else ''}{count} that fit, {total_s:.2f} s; "
        f"need {lane.min_s}–{lane.max_s} s{apart}{single}"
    )


def _layout(
    sources: Sequence[Source], lane: Lane, *, ctx: PlanContext, rng: random.Random
) -> tuple[list[Scene], list[ScenePiece]] | GroupSkip:
    """The negatives and target segments of the montage, before ordering."""
    if lane.bucket == "short":
        # The negatives are fixed, so the piece count is drawn to fit between them.
        negatives = list(sources[0].negatives)
        pieces = _target_pieces(sources, lane, ctx=ctx, room=len(negatives) + 1, rng=rng)
        return pieces if isinstance(pieces, GroupSkip) else (negatives, pieces)
    pieces = _target_pieces(sources, lane, ctx=ctx, room=None, rng=rng)
    if isinstance(pieces, GroupSkip):
        return pieces
    needed = len(pieces) - 1
    base_s = sum(s.duration_s for s in sources)
    hopeless = _hopeless(sources, lane, base_s=base_s, needed=needed, ctx=ctx)
    if hopeless is not None:
        return hopeless
    chosen, total_s, eligible = _fill(sources, lane, base_s=base_s, needed=needed, ctx=ctx,
                                      rng=rng)
    in_range = lane.min_s - _EPS <= total_s <= lane.max_s + _EPS
    if not in_range or bucket_for(total_s) != lane.bucket or len(chosen) < needed:
        return _shortfall(sources, lane, total_s=total_s, count=len(chosen), needed=needed,
                          eligible=eligible, pool=ctx.pool)
    return chosen, pieces


def _hopeless(sources: Sequence[Source], lane: Lane, *, base_s: float, needed: int,
              ctx: PlanContext) -> GroupSkip | None:
    """The shortfall of a group that cannot be planned whatever the negative check finds
    beyond what its label scans already show (:func:`fill_bound`), or None."""
    bound = fill_bound(sources, lane, base_s=base_s, ctx=ctx)
    if bound is None:
        return None
    eligible, fits, most_s = bound
    if most_s >= lane.min_s - _EPS and fits >= needed:
        return None
    return _shortfall(sources, lane, total_s=most_s, count=fits, needed=needed,
                      eligible=eligible, pool=ctx.pool, bound=True)


def may_fill(sources: Sequence[Source], lane: Lane, *, ctx: PlanContext) -> bool:
    """Whether ``sources`` may yet make a montage long enough for ``lane`` as far as the
    probe's stored label scans tell (:func:`fill_bound`); always in a short lane."""
    if lane.bucket == "short":
        return True
    bound = fill_bound(sources, lane, base_s=sum(s.duration_s for s in sources), ctx=ctx)
    return bound is None or bound[2] >= lane.min_s - _EPS


def fill_bound(sources: Sequence[Source], lane: Lane, *, base_s: float, ctx: PlanContext
               ) -> tuple[int, int, float] | None:
    """The most negatives, and the longest montage, that :func:`_fill` could give
    ``sources`` in ``lane`` given what the probe's label scans already show: (eligible
    candidates, candidates that fit and are not refused, ``base_s`` plus their seconds).
    None when nothing is to be gained (no object target, or a probe that cannot tell
    without looking: :class:`~needleforge.nemo.checks.negative_scan.KnowsLabels`).

    Why: a group fails only after :func:`_fill` has tried every candidate, and each try of
    an object group costs an instance check (a long montage of a 20-minute program tries
    every scene of it). If the candidates the stored label scans leave, all taken, still
    make the montage too short or leave too few negatives, :func:`_fill` would fail too: the
    check can only refuse more. Such a group is refused before anything is looked at, so
    plans are unchanged; the reason gives the bound ("at most").
    """
    probe: object = ctx.probe  # (mypy narrows one protocol to another only from object)
    objects = [s.target for s in sources if s.target.target_object is not None]
    if not objects or not isinstance(probe, KnowsLabels):
        return None
    candidates = candidate_negatives(sources, lane, ctx=ctx)
    fits = [scene for scene in candidates
            if base_s + scene.duration_s <= lane.max_s + _EPS
            and not any(probe.label_refusal(scene, t) for t in objects)]
    return len(candidates), len(fits), base_s + sum(scene.duration_s for scene in fits)


def plan_group(
    sources: Sequence[Source], lane: Lane, *, ctx: PlanContext
) -> Montage | GroupSkip:
    """The montage of ``lane`` carrying every source of the group, or why not.

    Sources must be compatible (distinct scenes, none holding another's excluded terms);
    the rng is seeded from the seed, the lane and the sources' ids.

    Raises:
        ValueError: an empty group, a short lane with more than one source, or sources the
            context's index does not watch.
    """
    if not sources or (lane.bucket == "short" and len(sources) != 1):
        raise ValueError(f"lane {lane.bucket}: cannot plan a group of {len(sources)} sources")
    rng = random.Random(f"nemo-expand:{ctx.seed}:{lane.bucket}:{lane.needles}:"
                        + "+".join(s.key for s in sources))
    layout = _layout(sources, lane, ctx=ctx, rng=rng)
    if isinstance(layout, GroupSkip):
        return layout
    scenes, pieces = layout
    negatives = [ScenePiece(scene, scene.start_s, scene.end_s, "negative") for scene in scenes]
    rng.shuffle(negatives)
    segments = tile(interleave(negatives, pieces, rng=rng, duration=lambda p: p.duration_s))
    duration_s = segments[-1].montage_end_s
    if bucket_for(duration_s) != lane.bucket:
        return GroupSkip(f"montage of {duration_s:.2f} s falls in bucket "
                         f"{bucket_for(duration_s)!r}, not {lane.bucket!r}")
    return Montage(montage_id=expanded_montage_id(lane, sources, segments, seed=ctx.seed),
                   bucket=lane.bucket, segments=segments, seed=ctx.seed)
