"""NeMo Stage 3 as one pure function: verified short questions in, longer and split ones out.

Seed 001 (Sec. 3.2.2 Stage 3, App. D.3–D.4) grows verified short montages into medium
(150–900 s) and long (> 900 s) ones with more negatives, and turns single-needle questions
with a target longer than six seconds into multi-needle ones. Here every output row is a
**lane** — short/multi, medium/single, medium/multi, long/single, long/multi — with a cap
per needle type (:class:`~needleforge.params.ExpandParams`). Lanes are filled one after
another; a source (a verified short question, :mod:`~needleforge.nemo.sources`) can be
used once per lane, so one short question may yield a medium and a long copy.

**Groups.** A short or medium montage is built around targets of one video, a long one
around targets of one program (negatives may then come from the program's other videos:
same shooting style). Medium and long montages carry up to ``medium_targets`` /
``long_targets`` targets. Targets may share a montage only when **compatible**: distinct
scenes, and neither target's scene holds a term the other excludes (its label or top tags).
A target's segments are distractors for every other question of the montage, so this is
the negative rule applied between targets; it also means no two targets of one montage
share a label or a top tag, else one question's answer would include the other's needle.
Sources are taken in a seeded random order and put into the first open compatible group
of their video/program; full groups are planned first (:func:`grow.plan_group`), then the
partly filled ones. A group whose targets together exclude too much is halved and retried.

**Questions and verdicts.** Each target of a planned montage gets a copy of its short
question with a new id (:func:`plan.question_id_for`) whose answer is that target's spans
(``target_id`` on the segments), and a verdict re-checked on the new distractors
(:mod:`~needleforge.nemo.recheck`).

**Shortfalls.** A group that cannot be planned (too few negatives, one short video in a
program) is skipped with a :class:`Shortfall` naming the questions and the figures, and
:class:`CellCount` reports per row and needle type how many questions were wanted, could
have been sourced and were made. Nothing is ever forced into a montage outside its bucket.
Every group draws from its own ``random.Random`` seeded by the seed, lane and source ids:
the same inputs and seed give identical plans.

**The negative check, ahead.** A long montage of a short program tries nearly every scene of
it as a negative, and each try of an object target costs an instance check. Before any lane
is planned, a probe that takes it is told which targets the likely groups of every lane will
ask about which scenes (:func:`~needleforge.nemo.lanes.likely_groups`), so a scene is searched
for all of them in one pass; a group the stored label scans already leave too short is
refused before anything is checked (:func:`~needleforge.nemo.grow.fill_bound`). Neither
changes a plan.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Sequence

from needleforge.nemo.checks.negative_probe import ExpectsTargets, NegativeProbe, ProbeCost
from needleforge.nemo.checks.negative_scan import TiledProbe
from needleforge.nemo.grow import (
    GroupSkip,
    Lane,
    PlanContext,
    candidate_negatives,
    may_fill,
    plan_group,
)
from needleforge.nemo.lanes import (
    GroupsExpected,
    fill_lane,
    lane_groups,
    lanes_for,
    likely_groups,
)
from needleforge.nemo.plan import question_id_for
from needleforge.nemo.pool import ScenePool, TermIndex
from needleforge.nemo.recheck import recheck
from needleforge.nemo.sources import Source, find_sources
from needleforge.nemo.stats import Needles
from needleforge.nemo.tables import index_tables
from needleforge.params import CellCaps, ExpandParams, NemoParams
from needleforge.records import (
    Bucket,
    Montage,
    NeedleType,
    ObjectTrack,
    Question,
    Scene,
    SceneTag,
    Verification,
    Video,
)
from needleforge.runtime.progress import OnCount, Steps


@dataclasses.dataclass(frozen=True, slots=True)
class Shortfall:
    """A montage that was not made: its lane, the source questions it would carry, why."""

    bucket: Bucket
    needles: Needles
    question_ids: tuple[str, ...]
    reason: str


@dataclasses.dataclass(frozen=True, slots=True)
class CellCount:
    """One row × needle type: questions wanted (-1 = all), sourceable, made, passed."""

    bucket: Bucket
    needles: Needles
    needle_type: NeedleType
    wanted: int
    eligible: int
    made: int
    passed: int

    @property
    def short_by(self) -> int:
        """Questions fewer than wanted (than sourceable, when wanted is -1) that were made."""
        goal = self.eligible if self.wanted < 0 else self.wanted
        return max(0, goal - self.made)


@dataclasses.dataclass(frozen=True, slots=True)
class ExpansionResult:
    """Records for ``Store.record_generation`` plus what fell short and the counts."""

    montages: tuple[Montage, ...]
    questions: tuple[Question, ...]
    verifications: tuple[Verification, ...]
    shortfalls: tuple[Shortfall, ...]
    cells: tuple[CellCount, ...] = ()
    probe_cost: ProbeCost | None = None  #: what the negative check spent (set by the pipeline)

    def releasable(self) -> tuple[Question, ...]:
        """The questions whose verdict passed."""
        passed = {v.question_id for v in self.verifications if v.passed}
        return tuple(q for q in self.questions if q.question_id in passed)


@dataclasses.dataclass
class _Output:
    montages: list[Montage] = dataclasses.field(default_factory=list)
    questions: list[Question] = dataclasses.field(default_factory=list)
    verifications: list[Verification] = dataclasses.field(default_factory=list)
    shortfalls: list[Shortfall] = dataclasses.field(default_factory=list)


def _record(
    group: list[Source], lane: Lane, *, ctx: PlanContext, out: _Output,
    expect: GroupsExpected | None = None,
) -> list[tuple[NeedleType, bool]]:
    """Plan ``group``; record its records or its shortfall. Returns (type, passed) made.

    A group of several targets that cannot be planned (their excluded terms together leave
    too few negatives) is halved and each half tried on its own (``expect`` is told of both
    halves first); a single target that still cannot be planned is recorded as a shortfall.
    """
    plan = plan_group(group, lane, ctx=ctx)
    if isinstance(plan, GroupSkip):
        if len(group) > 1:
            half = (len(group) + 1) // 2
            if expect is not None:
                expect([group[:half], group[half:]], lane)
            return (_record(group[:half], lane, ctx=ctx, out=out, expect=expect)
                    + _record(group[half:], lane, ctx=ctx, out=out, expect=expect))
        out.shortfalls.append(Shortfall(lane.bucket, lane.needles,
                                        tuple(s.key for s in group), plan.reason))
        return []
    out.montages.append(plan)
    made = []
    for source in group:
        q = source.question
        qid = question_id_for(plan.montage_id, needle_type=q.needle_type,
                              target_id=source.target_id, template_id=q.template_id)
        verdict = recheck(source, plan, question_id=qid, index=ctx.index)
        out.questions.append(dataclasses.replace(q, question_id=qid,
                                                 montage_id=plan.montage_id))
        out.verifications.append(verdict)
        made.append((q.needle_type, verdict.passed))
    return made


def _caps(params: ExpandParams, lane: Lane) -> CellCaps:
    if lane.bucket == "short":
        return params.short_multi
    bucket = params.medium if lane.bucket == "medium" else params.long
    return bucket.single if lane.needles == "single" else bucket.multi


def _expecter(probe: object, ctx: PlanContext) -> GroupsExpected | None:
    """Tells a probe that takes it (:class:`ExpectsTargets`: a :class:`TiledProbe` with the
    instance check) which object targets will ask about which scenes, so that each scene is
    searched for all of them in one pass (the same scans, cheaper); None for any other
    probe. A group too short to plan whatever is checked
    (:func:`~needleforge.nemo.grow.may_fill`) asks nothing, so it is not told; a group is
    told once a lane."""
    if not isinstance(probe, ExpectsTargets) or (isinstance(probe, TiledProbe)
                                                 and probe.instances is None):
        return None

    told: set[tuple[Lane, tuple[str, ...]]] = set()  # a group is told once a lane

    def expect(groups: Sequence[list[Source]], lane: Lane) -> None:
        for group in groups:
            key = (lane, tuple(s.key for s in group))
            objects = [s.target for s in group if s.target.target_object is not None]
            if key in told or not objects or not may_fill(group, lane, ctx=ctx):
                continue
            told.add(key)
            scenes = candidate_negatives(group, lane, ctx=ctx)
            for target in objects:
                probe.expect(target, scenes)

    return expect


def expand(
    *,
    videos: Iterable[Video],
    scenes: Iterable[Scene],
    tags: Iterable[SceneTag],
    objects: Iterable[ObjectTrack],
    montages: Iterable[Montage],
    questions: Iterable[Question],
    verifications: Iterable[Verification],
    params: ExpandParams,
    nemo: NemoParams,
    probe: NegativeProbe | None = None,
    on_group: OnCount | None = None,
) -> ExpansionResult:
    """Verified short questions → short multi-needle, medium and long montages and questions.

    ``nemo`` gives the negative rule of stage 2 (``scene_top_tags``, ``min_negative_s``),
    so expanded negatives are chosen exactly like short ones. Scenes of videos not among
    ``videos`` are ignored, and so are questions about them. ``probe`` (stage 2's negative
    check, :func:`~needleforge.nemo.checks.build.build_probe`) refuses any negative in which
    an object target's label is seen, as stage 2 does for short montages.
    ``on_group(done, total)`` counts the groups of every lane as they are planned or passed
    over (:func:`~needleforge.nemo.lanes.lane_groups`); a lane whose caps fill early counts
    its remaining groups at once. Raises:
        NemoError: a tag or object of an unknown scene, or a scene listed twice.
    """
    videos = list(videos)
    tables = index_tables(scenes, tags=tags, objects=objects,
                          video_ids=[v.video_id for v in videos])
    sources = find_sources(tables, montages=montages, questions=questions,
                           verifications=verifications, nemo=nemo)
    watched = set().union(*(s.excluded | s.claims for s in sources))
    ctx = PlanContext(pool=ScenePool(tables, videos=videos),
                      index=TermIndex(tables, watched=watched), seed=params.seed,
                      min_negative_s=nemo.min_negative_s, min_piece_s=params.min_piece_s,
                      max_pieces=params.max_pieces, probe=probe)
    out = _Output()
    cells: list[CellCount] = []
    expect = _expecter(probe, ctx)
    if expect is not None:  # the groups of every lane that are likely to ask, first
        for lane in lanes_for(params):
            expect(likely_groups(sources, lane, caps=_caps(params, lane), ctx=ctx,
                                 params=params, viable=functools.partial(may_fill, lane=lane,
                                                                         ctx=ctx)), lane)
    lanes = lanes_for(params)
    sizes = [len(lane_groups(sources, lane, caps=_caps(params, lane), ctx=ctx, params=params))
             for lane in lanes] if on_group is not None else [0] * len(lanes)
    count = Steps(sum(sizes), on_group)
    lane_end = 0
    for lane, size in zip(lanes, sizes, strict=True):
        caps = _caps(params, lane)
        counts = fill_lane(sources, lane, caps=caps, ctx=ctx, params=params,
                           plan=lambda group, ln: _record(group, ln, ctx=ctx, out=out,
                                                          expect=expect),
                           expect=expect, on_group=count)
        lane_end += size
        if count.done != lane_end:  # the lane's caps filled before its last group
            count.to(lane_end)
        for needle_type in ("object", "scene"):
            eligible, made, passed = counts[needle_type]
            cells.append(CellCount(lane.bucket, lane.needles, needle_type,
                                   getattr(caps, needle_type), eligible, made, passed))
    return ExpansionResult(tuple(out.montages), tuple(out.questions),
                           tuple(out.verifications), tuple(out.shortfalls), tuple(cells))
