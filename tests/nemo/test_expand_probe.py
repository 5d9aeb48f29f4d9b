"""Stage 3 applies stage 2's negative check to every negative of its object montages.

Medium and long montages take new negatives (other scenes of the videos, of the program);
an object target's label seen in one of them would make the answer miss a true appearance,
so with a probe those scenes are passed over, as stage 2 does for short montages.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

import expand_cases as ec
import pytest

from needleforge.nemo.checks.negative_probe import Refusal
from needleforge.nemo.expand import ExpansionResult
from needleforge.nemo.grow import Lane, PlanContext
from needleforge.nemo.lanes import fill_lane, lanes_for, likely_groups
from needleforge.nemo.pool import ScenePool, TermIndex
from needleforge.nemo.sources import Source, find_sources
from needleforge.nemo.tables import index_tables
from needleforge.nemo.targets import Target
from needleforge.params import BucketCaps, CellCaps, ExpandParams
from needleforge.records import Box, NeedleType, Scene, Sighting

CAP = CellCaps(object=3, scene=3)
PARAMS = ExpandParams(short_multi=CellCaps(object=0, scene=0),
                      medium=BucketCaps(single=CAP, multi=CAP),
                      long=BucketCaps(single=CAP, multi=CAP))


class _SeesEverything:
    """A probe that sees every label in the listed scenes and nothing elsewhere."""

    def __init__(self, scene_ids: set[str]) -> None:
        self.scene_ids = scene_ids
        self.asked: list[tuple[str, str]] = []

    def evidence(self, scene: Scene, target: Target, *, named: Collection[str] = (),
                 attire: Mapping[str, str] | None = None) -> Refusal | None:
        assert target.target_object is not None
        label = target.target_object.tag
        self.asked.append((scene.scene_id, label))
        if scene.scene_id not in self.scene_ids:
            return None
        return Refusal("label", Sighting(scene.scene_id, label, 0.9, scene.start_s,
                                         Box(0.1, 0.1, 0.1, 0.1)))


def _object_negatives(result: ExpansionResult) -> set[str]:
    """Negative scenes of the medium and long montages that hold object questions."""
    object_montages = {q.montage_id for q in result.questions if q.needle_type == "object"}
    return {s.scene_id for m in result.montages
            if m.montage_id in object_montages and m.bucket != "short"
            for s in m.segments if s.role == "negative"}


@pytest.fixture(scope="module")
def stage() -> tuple[ec.Corpus, ec.Short, ExpansionResult]:
    data = ec.corpus({"p1": 3}, scenes=50)
    short = ec.short_stage(data)
    return data, short, ec.run(data, short, PARAMS)


def test_negatives_where_an_object_label_is_seen_are_passed_over(
    stage: tuple[ec.Corpus, ec.Short, ExpansionResult],
) -> None:
    data, short, unchecked = stage
    taken = sorted(_object_negatives(unchecked))
    assert len(taken) >= 6  # the check below has something to refuse
    seen_in = set(taken[::2])
    probe = _SeesEverything(seen_in)
    checked = ec.expand(**data.kwargs(), **short.kwargs(), params=PARAMS,
                        nemo=ec.PAPER_NEMO, probe=probe)
    assert probe.asked
    assert not _object_negatives(checked) & seen_in
    buckets = {m.montage_id: m.bucket for m in checked.montages}
    assert any(q.needle_type == "object" and buckets[q.montage_id] != "short"
               for q in checked.questions)  # object montages were still made
    ec.check_invariants(checked, data, short, params=PARAMS, nemo=ec.PAPER_NEMO)


def test_a_probe_that_sees_nothing_changes_no_plan_and_is_asked_only_object_labels(
    stage: tuple[ec.Corpus, ec.Short, ExpansionResult],
) -> None:
    data, short, unchecked = stage
    probe = _SeesEverything(set())
    checked = ec.expand(**data.kwargs(), **short.kwargs(), params=PARAMS,
                        nemo=ec.PAPER_NEMO, probe=probe)
    assert checked.montages == unchecked.montages
    assert checked.questions == unchecked.questions
    assert probe.asked
    assert {label for _, label in probe.asked} <= {t.tag for t in data.objects}


class _Expecting(_SeesEverything):
    """:class:`_SeesEverything` that is told which object targets will ask about which
    scenes (what a :class:`TiledProbe` batches its instance check by), and records every ask
    it was not told of."""

    def __init__(self, scene_ids: set[str]) -> None:
        super().__init__(scene_ids)
        self.expected: set[tuple[str, str]] = set()
        self.told = 0
        self.surprises: list[tuple[str, str]] = []

    def expect(self, target: Target, scenes: Iterable[Scene]) -> int:
        assert target.target_object is not None
        pairs = {(s.scene_id, target.target_object.object_id) for s in scenes}
        self.expected |= pairs
        self.told += len(pairs)
        return len(pairs)

    def evidence(self, scene: Scene, target: Target, *, named: Collection[str] = (),
                 attire: Mapping[str, str] | None = None) -> Refusal | None:
        assert target.target_object is not None
        pair = (scene.scene_id, target.target_object.object_id)
        if pair not in self.expected:
            self.surprises.append(pair)
        return super().evidence(scene, target, named=named)


@pytest.mark.parametrize("refused_share", [0, 2, 3])
def test_the_probe_is_told_every_target_and_scene_before_it_is_asked(
    stage: tuple[ec.Corpus, ec.Short, ExpansionResult], refused_share: int,
) -> None:
    """Every (scene, object target) pair expand asks about was announced first (the likely
    groups of every lane before any is planned; any other group, or half of a group that
    fell short, just before it is planned); being told changes no plan."""
    data, short, unchecked = stage
    taken = sorted(_object_negatives(unchecked))
    seen_in = set(taken[::refused_share]) if refused_share else set()
    told = _Expecting(seen_in)
    plain = _SeesEverything(seen_in)
    checked = ec.expand(**data.kwargs(), **short.kwargs(), params=PARAMS,
                        nemo=ec.PAPER_NEMO, probe=told)
    again = ec.expand(**data.kwargs(), **short.kwargs(), params=PARAMS,
                      nemo=ec.PAPER_NEMO, probe=plain)
    assert told.asked and told.surprises == []
    assert told.asked == plain.asked
    assert checked.montages == again.montages and checked.questions == again.questions
    if refused_share:
        assert checked.shortfalls  # groups fell short, so later ones were planned too


def test_likely_groups_are_the_groups_planned_when_every_one_is_made(
    stage: tuple[ec.Corpus, ec.Short, ExpansionResult],
) -> None:
    """The forecast of a lane is exactly the groups the lane plans when each one is made;
    a group that is not viable is halved as the planner halves a failed group."""
    data, short, _ = stage
    tables = index_tables(data.scenes, tags=data.tags, objects=data.objects)
    sources = find_sources(tables, montages=short.montages, questions=short.questions,
                              verifications=short.verifications, nemo=ec.PAPER_NEMO)
    watched = set().union(*(s.excluded | s.claims for s in sources))
    ctx = PlanContext(pool=ScenePool(tables, videos=data.videos),
                      index=TermIndex(tables, watched=watched), seed=0, min_negative_s=2.0,
                      min_piece_s=1.0, max_pieces=None)
    for lane in lanes_for(PARAMS)[1:]:
        caps = CAP
        planned: list[list[str]] = []

        def plan(group: list[Source], ln: Lane, planned: list[list[str]] = planned
                 ) -> list[tuple[NeedleType, bool]]:
            planned.append([s.key for s in group])
            return [(s.needle_type, True) for s in group]

        fill_lane(sources, lane, caps=caps, ctx=ctx, params=PARAMS, plan=plan)
        likely = likely_groups(sources, lane, caps=caps, ctx=ctx, params=PARAMS,
                               viable=lambda group: True)
        assert [[s.key for s in g] for g in likely] == planned and planned
        singles = likely_groups(sources, lane, caps=caps, ctx=ctx, params=PARAMS,
                                viable=lambda group: len(group) == 1)
        assert all(len(g) == 1 for g in singles)
        assert sum(s.needle_type == "object" for g in singles for s in g) <= caps.object


class _KnowsLabels(_Expecting):
    """:class:`_Expecting` whose label scans of every scene are made already, so it can say
    what they refuse without being asked (:class:`KnowsLabels`)."""

    def label_refusal(self, scene: Scene, target: Target) -> Refusal | None:
        if scene.scene_id not in self.scene_ids:
            return None
        assert target.target_object is not None
        return Refusal("label", Sighting(scene.scene_id, target.target_object.tag, 0.9,
                                         scene.start_s, Box(0.1, 0.1, 0.1, 0.1)))


def test_a_group_its_label_scans_leave_too_short_is_refused_before_any_check() -> None:
    """When the candidates the stored label scans leave cannot make a long montage, the group
    fails before the probe is asked about a single scene: the same plans and the same
    shortfalls (their reasons give the bound), far fewer checks."""
    data = ec.corpus({"p1": 2}, scenes=30)
    short = ec.short_stage(data)
    long_only = ExpandParams(short_multi=CellCaps(object=0, scene=0),
                             medium=BucketCaps(single=CellCaps(object=0, scene=0),
                                               multi=CellCaps(object=0, scene=0)),
                             long=BucketCaps(single=CAP, multi=CAP))
    seen_in = {s.scene_id for s in data.scenes[::4]}  # a quarter of every program refused
    asks_all = _Expecting(seen_in)
    bounded = _KnowsLabels(seen_in)
    results = [ec.expand(**data.kwargs(), **short.kwargs(), params=long_only,
                         nemo=ec.PAPER_NEMO, probe=probe) for probe in (asks_all, bounded)]
    assert results[0].montages == results[1].montages
    assert results[0].questions == results[1].questions
    failed = [{s.question_ids for s in r.shortfalls} for r in results]
    assert failed[0] == failed[1] and failed[0]  # some long groups fall short
    bound = [s.reason for s in results[1].shortfalls if "give at most" in s.reason]
    assert bound, "no group was refused on its label scans alone"
    assert len(bounded.asked) < len(asks_all.asked)
    assert bounded.surprises == asks_all.surprises == []
