"""Stage 3 applies stage 2's negative check to every negative of its object montages.

Medium and long montages take new negatives (other scenes of the videos, of the program);
an object target's label seen in one of them would make the answer miss a true appearance,
so with a probe those scenes are passed over, as stage 2 does for short montages.
"""

from __future__ import annotations

from collections.abc import Collection

import expand_cases as ec
import pytest

from needleforge.config import BucketCaps, CellCaps, ExpandParams
from needleforge.nemo.checks.negative_scan import Refusal, Sighting
from needleforge.nemo.expand import ExpansionResult
from needleforge.nemo.targets import Target
from needleforge.records import Box, Scene

CAP = CellCaps(object=3, scene=3)
PARAMS = ExpandParams(short_multi=CellCaps(object=0, scene=0),
                      medium=BucketCaps(single=CAP, multi=CAP),
                      long=BucketCaps(single=CAP, multi=CAP))


class _SeesEverything:
    """A probe that sees every label in the listed scenes and nothing elsewhere."""

    def __init__(self, scene_ids: set[str]) -> None:
        self.scene_ids = scene_ids
        self.asked: list[tuple[str, str]] = []

    def evidence(self, scene: Scene, target: Target, *,
                 named: Collection[str] = ()) -> Refusal | None:
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
                        nemo=ec.NemoParams(), probe=probe)
    assert probe.asked
    assert not _object_negatives(checked) & seen_in
    buckets = {m.montage_id: m.bucket for m in checked.montages}
    assert any(q.needle_type == "object" and buckets[q.montage_id] != "short"
               for q in checked.questions)  # object montages were still made
    ec.check_invariants(checked, data, short, params=PARAMS, nemo=ec.NemoParams())


def test_a_probe_that_sees_nothing_changes_no_plan_and_is_asked_only_object_labels(
    stage: tuple[ec.Corpus, ec.Short, ExpansionResult],
) -> None:
    data, short, unchecked = stage
    probe = _SeesEverything(set())
    checked = ec.expand(**data.kwargs(), **short.kwargs(), params=PARAMS,
                        nemo=ec.NemoParams(), probe=probe)
    assert checked.montages == unchecked.montages
    assert checked.questions == unchecked.questions
    assert probe.asked
    assert {label for _, label in probe.asked} <= {t.tag for t in data.objects}
