"""NeMo Stage 2 as one pure function: representation tables in, plans and questions out.

For every target (:mod:`~needleforge.nemo.targets`), in a stable order:

1. let the describer write the needle (or skip it, e.g. an abstract object). It is told
   which terms are common in the video (held by more than ``common_term_share`` of its
   scenes), since they tell no scene apart;
2. choose negatives from the same video that hold nothing the written question names
   (:mod:`~needleforge.nemo.negatives`) and plan a short montage
   (:mod:`~needleforge.nemo.plan`). Writing comes first because negatives are chosen by
   what the question says; a target that then gets no montage cost one describer call.
   With a ``probe``
   (:mod:`~needleforge.nemo.checks.negative_scan`), each negative a montage would take is first
   checked for every detector label the question names (an object target's own label, the "people"
   and "tie" of a scene description) and for the target object itself; a scene where one is seen is
   passed over (and listed in ``rejected_negatives``), so the answer never omits an appearance the
   tables missed and the verifier does not have to refuse a question whose negatives the tables got
   wrong. A scene needle whose montage the check left short is written again without the
   term it refused most negatives for (:data:`MAX_REDESCRIBES`): "a mostly light-grey
   scene where the text reads 'Robot'" among other grey desk shots becomes "a scene where
   the text reads 'Robot'";
3. let the verifier judge the written needle against the montage's own negatives. A scene
   needle refused for a term no second look confirmed is written again without it
   (:data:`MAX_REWRITES`); a needle refused because negatives show what it names is planned
   again without those negatives (:data:`MAX_REPLANS`), when enough others are left: the
   verifier looks at frames the tables and the probe did not (a race car in a film the
   detector saw only once, a cyclist it cannot follow), and a refused negative says nothing
   against the target's question.

With ``workers`` (2 by default), the probe's scans of every scene a montage may draw and
the looking verifier's detections on each planned montage's frames run ahead on worker
threads (:mod:`~needleforge.nemo.ahead`), and targets are planned up to
:data:`PLAN_AHEAD` ahead of their verdicts; each result is taken where the steps above ask
for it, so the result is the one of the serial order (``workers=0``), on both cores
(measured in ``docs/performance.md``).

Every question gets a verdict; only passed ones are releasable (:meth:`GenerationResult.
releasable`). Targets that got no question are listed in ``skipped`` with the reason. Each
target draws from its own ``random.Random`` seeded by the stage seed and its id, so adding
or removing a video does not change the other targets' plans. Nothing here writes the store:
the CLI/flow passes the result to ``Store.record_generation``.

:func:`~needleforge.nemo.backend_choice.build_backends` turns the ``nemo`` params section into
the describer and verifier, through the one backend
:class:`~needleforge.backends.registry.Registry`.
"""

from __future__ import annotations

import collections
import dataclasses
import random
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Literal, TypeAlias, TypeVar

from needleforge.backends.base import Keyframe
from needleforge.backends.writing import (
    Describer,
    SceneView,
    Skip,
    TargetView,
    Verdict,
    Verifier,
    VerifyRequest,
)
from needleforge.errors import NemoError
from needleforge.nemo.acceptor import RejectedNegative, negative_acceptor
from needleforge.nemo.ahead import LooksAhead, Workers, default_workers
from needleforge.nemo.checks.negative_probe import NegativeProbe
from needleforge.nemo.checks.negative_scan import TiledProbe
from needleforge.nemo.checks.same_setup import SetupMatcher
from needleforge.nemo.negatives import (
    crowded_terms,
    drawable_scenes,
    excluded_terms,
    select_negatives,
)
from needleforge.nemo.plan import PlanSkip, plan_short_montage, question_id_for
from needleforge.nemo.tables import SceneTables, index_tables
from needleforge.nemo.targets import Target, select_targets
from needleforge.nemo.video_keyframes import companion_frames
from needleforge.params import NemoParams
from needleforge.records import (
    Montage,
    NeedleType,
    ObjectTrack,
    Question,
    Scene,
    SceneTag,
    Verification,
    Video,
)
from needleforge.records.attire import described_attire
from needleforge.records.phrases import normalize
from needleforge.runtime.progress import OnCount, Steps
from needleforge.scenes.walking import MOTION_GAP_S, WALK_TAG

#: Decodes a scene's keyframes (with their times) for backends that look at pixels; None =
#: tables only. It is called for the target and every negative of each montage, so a scene
#: used by several montages is asked for more than once: cache inside it when decoding is
#: costly (:class:`~needleforge.nemo.video_keyframes.VideoKeyframes` does).
KeyframeSource: TypeAlias = Callable[[Scene], Sequence[Keyframe]]
#: Fewer scenes than this to scan ahead, and a verifier that does not look ahead: not worth
#: the workers' own models (a few seconds to load); everything runs in order instead.
MIN_SCANS_AHEAD = 4
#: Targets planned ahead of the verdicts when looking ahead: enough to keep the workers fed
#: with the verifier's frames, few enough that waiting requests hold little memory.
PLAN_AHEAD = 32
#: How many times a scene needle the verifier refused for a term it could not confirm is
#: written again without that term (:func:`_verified`).
MAX_REWRITES = 2
#: How many times a needle the verifier refused for what its negatives show is planned again
#: without them (:func:`_verified`).
MAX_REPLANS = 1
#: How many times a scene needle whose montage the negative check left short is written again
#: without the term it refused most candidates for (:func:`_plan_one`).
MAX_REDESCRIBES = 2
_T = TypeVar("_T")


@dataclasses.dataclass(frozen=True, slots=True)
class SkipRecord:
    """A target that got no question, the step that dropped it, and why."""

    target_id: str
    needle_type: NeedleType
    stage: Literal["plan", "describe"]
    reason: str


@dataclasses.dataclass(frozen=True, slots=True)
class GenerationResult:
    """Records for ``Store.record_generation`` plus the skipped targets and the negatives
    the probe passed over (not stored: they explain plans and skips, and cost figures)."""

    montages: tuple[Montage, ...]
    questions: tuple[Question, ...]
    verifications: tuple[Verification, ...]
    skipped: tuple[SkipRecord, ...]
    rejected_negatives: tuple[RejectedNegative, ...] = ()

    def releasable(self) -> tuple[Question, ...]:
        """The questions whose every verdict passed (at least one verdict required)."""
        verdicts: dict[str, list[bool]] = {}
        for v in self.verifications:
            verdicts.setdefault(v.question_id, []).append(v.passed)
        return tuple(q for q in self.questions
                     if verdicts.get(q.question_id) and all(verdicts[q.question_id]))


@dataclasses.dataclass(frozen=True, slots=True)
class _Made:
    montage: Montage
    question: Question
    verification: Verification


@dataclasses.dataclass(frozen=True, slots=True)
class _Planned:
    """A montage and its question for ``target``, waiting for the verifier's verdict on
    ``request``; ``without``: negatives a verifier refused before, which it may not take."""

    montage: Montage
    question: Question
    request: VerifyRequest
    target: Target
    excluded: frozenset[str] = frozenset()
    without: frozenset[str] = frozenset()


@dataclasses.dataclass(frozen=True, slots=True)
class _Planner:
    """Plans a target's montage (:func:`_plan_one`) with the stage's tables and backends."""

    tables: SceneTables
    params: NemoParams
    backends: _Backends
    rejected: list[RejectedNegative]

    def returns_of(self, scene_ids: frozenset[str], target: Target) -> frozenset[str]:
        """The scenes of ``target``'s video that show the camera set-up of one of
        ``scene_ids`` (returning shots, :mod:`~needleforge.nemo.checks.same_setup`): what the
        verifier saw in one, the others likely show too. None without frames to compare."""
        if self.backends.keyframes is None or not scene_ids:
            return frozenset()
        setup = self.backends.setup or SetupMatcher()
        scenes = self.tables.scenes_by_video[target.video_id]
        refused = [s for s in scenes if s.scene_id in scene_ids]
        return frozenset(
            s.scene_id for s in scenes if s.scene_id not in scene_ids
            and s.scene_id != target.scene.scene_id
            and any(setup.same(r, self.backends.frames(r), s, self.backends.frames(s))
                    for r in refused))

    def plan(self, target: Target, *, without: frozenset[str] = frozenset(),
             also_common: frozenset[str] = frozenset()) -> _Planned | SkipRecord:
        return _plan_one(target, self.tables, params=self.params, backends=self.backends,
                         rejected=self.rejected, without=without, also_common=also_common)


@dataclasses.dataclass(frozen=True, slots=True)
class _Backends:
    describer: Describer
    verifier: Verifier
    keyframes: KeyframeSource | None
    probe: NegativeProbe | None = None
    setup: SetupMatcher | None = None

    def frames(self, scene: Scene) -> tuple[Keyframe, ...]:
        """The scene's keyframes, or none when no source was given."""
        return tuple(self.keyframes(scene)) if self.keyframes is not None else ()


def generate(
    *,
    videos: Iterable[Video],
    scenes: Iterable[Scene],
    tags: Iterable[SceneTag],
    objects: Iterable[ObjectTrack],
    params: NemoParams,
    describer: Describer,
    verifier: Verifier,
    keyframes: KeyframeSource | None = None,
    probe: NegativeProbe | None = None,
    workers: int | None = None,
    on_step: OnCount | None = None,
) -> GenerationResult:
    """Targets → short montage plans → written needles → verdicts, for the given videos.

    Scenes of videos not in ``videos`` are ignored. ``probe`` (see
    :func:`~needleforge.nemo.checks.build.build_probe`) checks object targets' negatives.
    ``workers`` threads (default :func:`~needleforge.nemo.ahead.default_workers`) scan and
    look ahead (module docstring); 0 does everything in order on this thread. Either way
    the result is the same. ``on_step(done, total)`` is called as each target is planned
    and as it gets its verdict (two steps a target: with look-ahead the verdicts trail the
    plans by up to :data:`PLAN_AHEAD` targets, and both cost detector time).

    Raises:
        NemoError: a tag or object of an unknown scene, a scene listed twice, or a describer
            that returned a needle of the wrong type.
        MediaError: the probe or the keyframe source cannot decode a scene's video.
    """
    tables = index_tables(scenes, tags=tags, objects=objects,
                          video_ids=[v.video_id for v in videos])
    setup = SetupMatcher() if keyframes is not None and params.check.setup else None
    backends = _Backends(describer, verifier, keyframes, probe, setup)
    targets = select_targets(tables, params=params)
    rejected: list[RejectedNegative] = []
    count = default_workers() if workers is None else workers
    ahead = _to_scan_ahead(targets, tables, params=params, probe=probe)
    steps = Steps(2 * len(targets), on_step)
    planner = _Planner(tables, params, backends, rejected)
    if count < 1 or (len(ahead) < MIN_SCANS_AHEAD and not isinstance(verifier, LooksAhead)):
        outcomes = [_counted(_verified(_counted(planner.plan(target), steps), planner), steps)
                    for target in targets]
    else:
        with Workers(count) as pool:
            outcomes = _generate_ahead(targets, planner, workers=pool, scan=ahead, steps=steps)
    made = [o for o in outcomes if isinstance(o, _Made)]
    return GenerationResult(
        montages=tuple(m.montage for m in made),
        questions=tuple(m.question for m in made),
        verifications=tuple(m.verification for m in made),
        skipped=tuple(o for o in outcomes if isinstance(o, SkipRecord)),
        rejected_negatives=tuple(rejected),
    )


def _counted(step: _T, steps: Steps) -> _T:
    """``step`` (a plan or a verdict), counted as one step."""
    steps()
    return step


def _to_scan_ahead(targets: Sequence[Target], tables: SceneTables, *, params: NemoParams,
                   probe: NegativeProbe | None) -> list[Scene]:
    """The scenes a :class:`TiledProbe` could scan ahead (drawable, not scanned yet)."""
    if not isinstance(probe, TiledProbe):
        return []
    return [s for s in drawable_scenes(targets, tables, params=params) if not probe.has_scan(s)]


def _generate_ahead(
    targets: Sequence[Target], planner: _Planner, *, workers: Workers,
    scan: Sequence[Scene], steps: Steps,
) -> list[_Made | SkipRecord]:
    """:func:`generate` with the scans and the looking done ahead on ``workers``: ``scan``
    (every scene a montage may draw) is queued for the probe first; each planned montage's
    frames are queued for the verifier as soon as it is planned; verdicts follow in target
    order, at most :data:`PLAN_AHEAD` targets behind the planning. Describer, keyframe
    source, probe and verifier are asked in the serial order."""
    backends = planner.backends
    if isinstance(backends.probe, TiledProbe):
        backends.probe.look_ahead(scan, workers)
    looker = backends.verifier if isinstance(backends.verifier, LooksAhead) else None
    try:
        planned: deque[_Planned | SkipRecord] = deque()
        outcomes: list[_Made | SkipRecord] = []
        for target in targets:
            step = _counted(planner.plan(target), steps)
            if looker is not None and isinstance(step, _Planned):
                looker.look_ahead(step.request, workers.submit)
            planned.append(step)
            if len(planned) > PLAN_AHEAD:  # bounds the keyframes held by waiting requests
                outcomes.append(_counted(_verified(planned.popleft(), planner), steps))
        return outcomes + [_counted(_verified(step, planner), steps) for step in planned]
    finally:
        if isinstance(backends.probe, TiledProbe):
            backends.probe.drop_ahead()
        if looker is not None:
            looker.drop_ahead()


def _plan_one(
    target: Target, tables: SceneTables, *, params: NemoParams, backends: _Backends,
    rejected: list[RejectedNegative], without: frozenset[str] = frozenset(),
    also_common: frozenset[str] = frozenset(),
) -> _Planned | SkipRecord:
    """Write ``target``'s needle, plan its montage and build the verifier's request (the
    keyframes of its negatives decoded now, in the serial order), or why it was skipped.
    ``without``: scene ids the montage may not take; ``also_common``: terms the describer
    must leave out (it was refused for them before).

    A scene needle whose plan the negative check left short is written again without the
    term the check refused most candidates for, up to :data:`MAX_REDESCRIBES` times: the
    tables said the negatives lack it, the pixels said otherwise (measured on held-out
    footage: "someone walking" beside a marathon's ambulance, where every other shot has a
    player or a rider on the move)."""
    dropped: list[str] = []
    first = len(rejected)
    while True:
        blame: collections.Counter[str] = collections.Counter()
        seen: list[RejectedNegative] = []
        step = _plan_once(target, tables, params=params, backends=backends,
                          rejected=seen, without=without,
                          also_common=also_common | frozenset(dropped), blame=blame)
        # A needle written again meets the same candidates: each refusal is noted once.
        rejected.extend(r for r in dict.fromkeys(seen) if r not in rejected[first:])
        if not (isinstance(step, SkipRecord) and step.stage == "plan"
                and target.needle_type == "scene" and len(dropped) < MAX_REDESCRIBES):
            break
        term = next((t for t, _ in sorted(blame.items(), key=lambda kv: (-kv[1], kv[0]))
                     if t not in dropped and t not in also_common), None)
        if term is None:
            break
        dropped.append(term)
    if dropped and isinstance(step, SkipRecord):
        return dataclasses.replace(step, reason=f"{step.reason} (written again without "
                                                f"{', '.join(map(repr, dropped))})")
    return step


def _plan_once(
    target: Target, tables: SceneTables, *, params: NemoParams, backends: _Backends,
    rejected: list[RejectedNegative], without: frozenset[str], also_common: frozenset[str],
    blame: collections.Counter[str],
) -> _Planned | SkipRecord:
    """One writing and plan of :func:`_plan_one`; ``blame`` counts the check's refusals."""
    rng = random.Random(f"nemo-plan:{params.seed}:{target.needle_type}:{target.target_id}")
    base = tables.view(target.scene)
    common = tables.common_terms(target.video_id, share=params.common_term_share)
    view = TargetView(base.scene, base.tags, base.objects, target.target_object,
                      backends.frames(target.scene),
                      common_terms=common | crowded_terms(target, tables, params=params)
                      | also_common)
    written = backends.describer.write(view, needle_type=target.needle_type)
    if isinstance(written, Skip):
        return SkipRecord(target.target_id, target.needle_type, "describe",
                          f"{backends.describer.name}: {written.reason}")
    if written.needle_type != target.needle_type:
        raise NemoError(f"describer {backends.describer.name} wrote a {written.needle_type} "
                        f"needle for {target.needle_type} target {target.target_id}")
    if WALK_TAG in written.description.lower():  # matched across frames close together
        view = dataclasses.replace(view, companion_frames=companion_frames(
            backends.keyframes, view.scene, view.keyframes, gap_s=MOTION_GAP_S))
    text = f"{written.description}\n{written.question}"
    excluded = excluded_terms(target, tables, text=text)
    attire = described_attire(text, excluded) if params.check.attire else {}
    negatives = [scene for scene in select_negatives(
        target, tables, params=params, rng=rng, excluded=excluded, attire=attire)
        if scene.scene_id not in without]
    plan = plan_short_montage(target, negatives, params=params, rng=rng,
                              accept=negative_acceptor(
                                  target, rejected, tables, frames=backends.frames
                                  if backends.keyframes is not None else None,
                                  probe=backends.probe, setup=backends.setup,
                                  excluded=excluded, attire=attire, blame=blame))
    if isinstance(plan, PlanSkip):
        return SkipRecord(target.target_id, target.needle_type, "plan",
                          f"{plan.reason}; negatives may hold none of {sorted(excluded)}")
    question = Question(
        question_id=question_id_for(plan.montage_id, needle_type=target.needle_type,
                                    target_id=target.target_id,
                                    template_id=written.template_id),
        montage_id=plan.montage_id, needle_type=target.needle_type,
        target_scene_id=target.scene.scene_id,
        target_object_id=target.target_object.object_id if target.target_object else None,
        description=written.description, text=written.question,
        template_id=written.template_id, backend=backends.describer.name,
        model_version=backends.describer.version,
    )
    return _Planned(plan, question, VerifyRequest(
        target.needle_type, written.description, written.question, view,
        _negative_views(plan, tables, backends=backends)), target, excluded, without)


def _verified(step: _Planned | SkipRecord, planner: _Planner) -> _Made | SkipRecord:
    """The verifier's verdict on a planned montage's question (skips pass through).

    A scene needle refused for one term no second look confirmed ("a black-and-white scene
    with a refrigerator" where the tank is no refrigerator) is written again without it, up
    to :data:`MAX_REWRITES` times, on the same montage: the negatives already hold none of
    the terms the first text named, so a text naming fewer of them needs no new ones. A
    needle refused because negatives show what it names is planned again without them and
    their returning shots, up to :data:`MAX_REPLANS` times (the same seeded draw, those
    scenes passed over), and the new montage is verified in full; its verification says what
    was refused first. (Measured on real footage: the race film refused for a car the tables
    never saw came back as another shot of the same film, with the same car.)"""
    if isinstance(step, SkipRecord):
        return step
    verifier = planner.backends.verifier
    step, verdict = _rewrites(step, verifier.verify(step.request), planner)
    history = ""
    for _ in range(MAX_REPLANS):
        if verdict.passed or not verdict.refused_negatives:
            break
        refused = frozenset(verdict.refused_negatives)
        again = planner.plan(step.target, without=step.without | refused
                             | planner.returns_of(refused, step.target),
                             also_common=step.request.target.common_terms)
        if isinstance(again, SkipRecord):
            break
        history += (f"planned again without {', '.join(verdict.refused_negatives)} "
                    f"({verdict.reason}); ")
        step, verdict = _rewrites(again, verifier.verify(again.request), planner)
    verification = Verification(step.question.question_id, verifier.name, verifier.version,
                                verdict.passed, history + verdict.reason)
    return _Made(step.montage, step.question, verification)


def _rewrites(step: _Planned, verdict: Verdict, planner: _Planner) -> tuple[_Planned, Verdict]:
    """``step`` written again without each term the verifier could not confirm (at most
    :data:`MAX_REWRITES` times; scene needles only), and the last verdict."""
    for _ in range(MAX_REWRITES):
        if verdict.passed or not verdict.unconfirmed or step.question.needle_type != "scene":
            break
        again = _rewritten(step, verdict.unconfirmed, planner.backends.describer,
                           planner.tables)
        if again is None:
            break
        step, verdict = again, planner.backends.verifier.verify(again.request)
    return step, verdict


def _rewritten(step: _Planned, term: str, describer: Describer,
               tables: SceneTables) -> _Planned | None:
    """``step``'s scene needle written without ``term``; None when the describer has nothing
    else to say or names a term the montage's negatives were not chosen against."""
    target = step.request.target
    view = dataclasses.replace(target, common_terms=target.common_terms | {normalize(term)})
    written = describer.write(view, needle_type="scene")
    if isinstance(written, Skip):
        return None
    excluded = excluded_terms(Target("scene", target.scene), tables,
                              text=f"{written.description}\n{written.question}")
    if not excluded <= step.excluded or normalize(term) in excluded:
        return None
    question = dataclasses.replace(
        step.question, description=written.description, text=written.question,
        template_id=written.template_id, question_id=question_id_for(
            step.montage.montage_id, needle_type="scene", target_id=target.scene.scene_id,
            template_id=written.template_id))
    request = dataclasses.replace(step.request, description=written.description,
                                  question=written.question, target=view)
    return dataclasses.replace(step, question=question, request=request, excluded=excluded)


def _negative_views(
    montage: Montage, tables: SceneTables, *, backends: _Backends
) -> tuple[SceneView, ...]:
    """The negatives of ``montage`` in montage order, as the verifier sees them."""
    views = []
    for segment in montage.segments:
        if segment.role == "negative":
            base = tables.view(tables.scenes_by_id[segment.scene_id])
            views.append(dataclasses.replace(base, keyframes=backends.frames(base.scene)))
    return tuple(views)
