"""Verified short questions, gathered with everything expansion needs to grow them.

A question is a **source** for expansion (seed 001, Sec. 3.2.2 Stage 3) when

* it has at least one verdict and every verdict passed (what stage 2 releases),
* its montage is short and answers it with exactly one target segment (single-needle), and
* its target scene (and object) are in the tables of the videos given to the stage.

Other questions — earlier expansions read back from the store, failed ones, questions on
videos left out — are simply not sources. When several sources share one target (reruns
with other seeds), only the one with the smallest question id is kept, so a target never
answers two questions of the same expansion row.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable, Mapping

from needleforge.nemo.negatives import excluded_terms
from needleforge.nemo.tables import SceneTables
from needleforge.nemo.targets import Target
from needleforge.params import NemoParams
from needleforge.records import Montage, NeedleType, Question, Scene, Verification
from needleforge.records.phrases import holds, named_terms


@dataclasses.dataclass(frozen=True, slots=True)
class Source:
    """One verified single-needle short question and its montage, ready to be expanded.

    ``span`` is the target segment in source seconds (on the keyframe grid); ``negatives``
    are the short montage's negative scenes in montage order; ``excluded`` what no other
    scene of an expanded montage may hold (:func:`negatives.excluded_terms`); ``claims``
    the target's terms that the description names (scene needles; empty for objects).
    """

    question: Question
    target: Target
    span: tuple[float, float]
    negatives: tuple[Scene, ...]
    excluded: frozenset[str]
    claims: frozenset[str]
    verified_by: tuple[str, ...]

    @property
    def key(self) -> str:
        """The source question's id (unique, stable)."""
        return self.question.question_id

    @property
    def needle_type(self) -> NeedleType:
        """Object or scene needle."""
        return self.question.needle_type

    @property
    def target_id(self) -> str:
        """Object id (object needles) or scene id (scene needles)."""
        return self.target.target_id

    @property
    def scene(self) -> Scene:
        """The target scene."""
        return self.target.scene

    @property
    def duration_s(self) -> float:
        """Length of the target span."""
        return self.span[1] - self.span[0]


def _passed(verifications: Iterable[Verification]) -> dict[str, tuple[str, ...]]:
    """Question id → verifiers, for questions whose every verdict passed."""
    verdicts: dict[str, list[Verification]] = defaultdict(list)
    for v in verifications:
        verdicts[v.question_id].append(v)
    return {qid: tuple(sorted({v.verifier for v in vs}))
            for qid, vs in verdicts.items() if all(v.passed for v in vs)}


def _target(question: Question, tables: SceneTables) -> Target | None:
    scene = tables.scenes_by_id.get(question.target_scene_id)
    if scene is None:
        return None
    if question.target_object_id is None:
        return Target("scene", scene)
    for obj in tables.objects_by_scene.get(scene.scene_id, ()):
        if obj.object_id == question.target_object_id:
            return Target("object", scene, obj)
    return None


def _source(
    question: Question, montage: Montage, target: Target, tables: SceneTables, *,
    nemo: NemoParams, verified_by: tuple[str, ...],
) -> Source | None:
    own = [s for s in montage.segments if s.role == "target"]
    if len(own) != 1 or own[0].scene_id != target.scene.scene_id:
        return None
    negatives = tuple(tables.scenes_by_id[s.scene_id] for s in montage.segments
                      if s.role == "negative" and s.scene_id in tables.scenes_by_id)
    claims: frozenset[str] = frozenset()
    if target.target_object is None:
        terms = tables.view(target.scene).terms
        claims = frozenset(c for c in named_terms(question.description, terms)
                           if holds(terms, c))
    return Source(question, target, (own[0].src_start_s, own[0].src_end_s), negatives,
                  excluded_terms(target, tables,
                                 text=f"{question.description}\n{question.text}"),
                  claims, verified_by)


def find_sources(
    tables: SceneTables, *, montages: Iterable[Montage], questions: Iterable[Question],
    verifications: Iterable[Verification], nemo: NemoParams,
) -> list[Source]:
    """Every expandable source (rules in the module docstring), sorted by question id."""
    by_id: Mapping[str, Montage] = {m.montage_id: m for m in montages}
    passed = _passed(verifications)
    found: dict[tuple[NeedleType, str], Source] = {}
    for question in sorted(questions, key=lambda q: q.question_id):
        montage = by_id.get(question.montage_id)
        if question.question_id not in passed or montage is None or montage.bucket != "short":
            continue
        target = _target(question, tables)
        if target is None:
            continue
        source = _source(question, montage, target, tables, nemo=nemo,
                         verified_by=passed[question.question_id])
        if source is not None:
            found.setdefault((source.needle_type, source.target_id), source)
    return sorted(found.values(), key=lambda s: s.key)
