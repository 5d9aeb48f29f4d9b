"""The expanded questions' verdicts: same answers as stage 2's rule and the embedded verifier.

:class:`TermIndex` replaces stage 2's per-tag regex test (``negatives.clashes``) by set
operations; the first test checks both agree on random tables with plurals and compound
tags. The recheck must fail a montage with a planted clash, and must never pass a question
the embedded evidence verifier would fail on the same montage.
"""

from __future__ import annotations

import dataclasses
import random

import expand_cases as ec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nemo_cases import corpus, make_tag, make_track, tile

from needleforge.nemo.negatives import clashes
from needleforge.nemo.plan import plan_short_montage, question_id_for
from needleforge.nemo.pool import TermIndex
from needleforge.nemo.recheck import RECHECK_VERIFIER, distractor_scenes, recheck
from needleforge.nemo.sources import Source, find_sources
from needleforge.nemo.tables import index_tables
from needleforge.nemo.targets import Target
from needleforge.params import ExpandParams, NemoParams
from needleforge.records import Montage, Question, Scene, Segment, Verification

TERMS = ("cat", "cats", "tabby cat", "cat food", "category", "dog", "hot dog", "brick wall",
         "wall", "bus", "buses", "person", "people", "glass", "glasses", "t-shirt", "shirt")


@settings(max_examples=60, deadline=None)
@given(tag_sets=st.lists(st.lists(st.sampled_from(TERMS), max_size=4), min_size=1,
                         max_size=8),
       labels=st.lists(st.sampled_from(TERMS), max_size=4),
       excluded=st.sets(st.sampled_from(TERMS), min_size=1, max_size=3))
def test_term_index_agrees_with_stage_two_clashes(
    tag_sets: list[list[str]], labels: list[str], excluded: set[str]
) -> None:
    scenes = tile([5.0] * len(tag_sets))
    tags = [make_tag(s, t) for s, names in zip(scenes, tag_sets, strict=True) for t in names]
    objects = [make_track(scenes[i % len(scenes)], i, label) for i, label in enumerate(labels)]
    tables = index_tables(scenes, tags=tags, objects=objects)
    watched = frozenset(excluded)
    index = TermIndex(tables, watched=watched)
    for scene in scenes:
        assert index.clashes(scene.scene_id, watched) == \
            bool(clashes(scene, tables, excluded=watched))
        assert index.scene_terms(scene.scene_id) == tables.view(scene).terms


def test_term_index_refuses_unwatched_terms() -> None:
    data = corpus()
    index = TermIndex(index_tables(data.scenes, tags=data.tags, objects=data.objects),
                      watched={"cat"})
    with pytest.raises(ValueError, match="not watched"):
        index.clashes(data.scene(3).scene_id, frozenset({"dog"}))


def _cat_source(extra_tags: list[tuple[int, str]]
                ) -> tuple[Source, TermIndex, list[Scene]]:
    """The cat object question of ``nemo_cases.corpus`` as a verified source."""
    data = corpus()
    tags = data.tags + [make_tag(data.scene(i), name) for i, name in extra_tags]
    tables = index_tables(data.scenes, tags=tags, objects=data.objects)
    cat = data.objects[0]
    target = Target("object", data.scene(0), cat)
    plan = plan_short_montage(target, [data.scene(3), data.scene(4)],
                              params=NemoParams(short_min_s=10.0),
                              rng=random.Random(0))
    assert isinstance(plan, Montage)
    qid = question_id_for(plan.montage_id, needle_type="object", target_id=cat.object_id,
                          template_id="t")
    question = Question(qid, plan.montage_id, "object", data.scene(0).scene_id, cat.object_id,
                        "the cat", "When is the cat on screen?", "t", "test", "1")
    [source] = find_sources(tables, montages=[plan], questions=[question],
                            verifications=[Verification(qid, "v", "1", True, "ok")],
                            nemo=NemoParams())
    return source, TermIndex(tables, watched=source.excluded), data.scenes


def _montage(source: Source, negatives: list[Scene]) -> Montage:
    segments: list[Segment] = []
    clock = 0.0
    pieces = [(source.scene, *source.span), *((s, s.start_s, s.end_s) for s in negatives)]
    for i, (scene, start, end) in enumerate(pieces):
        target = i == 0
        segments.append(Segment(i, scene.video_id, scene.scene_id, start, end, clock,
                                "target" if target else "negative", 0 if target else None,
                                source.target_id if target else None))
        clock += end - start
    return Montage("mtest", "short", tuple(segments), 0)


def test_recheck_passes_disjoint_negatives_and_names_a_planted_clash() -> None:
    source, index, scenes = _cat_source([(5, "tabby cats")])
    good = recheck(source, _montage(source, [scenes[3], scenes[4]]), question_id="qx",
                   index=index)
    assert good.passed and good.verifier == RECHECK_VERIFIER
    assert "none of 2 distractors holds 'cat'" in good.reason and "v stands" in good.reason
    bad = recheck(source, _montage(source, [scenes[3], scenes[5]]), question_id="qx",
                  index=index)
    assert not bad.passed
    assert f"{scenes[5].scene_id} holds 'cat'" in bad.reason


def test_distractors_are_everything_but_the_questions_own_pieces() -> None:
    source, _, scenes = _cat_source([])
    montage = _montage(source, [scenes[3], scenes[4]])
    assert distractor_scenes(montage, target_id=source.target_id) == \
        (scenes[3].scene_id, scenes[4].scene_id)
    assert len(distractor_scenes(montage, target_id="other")) == 3


def test_recheck_never_passes_what_the_embedded_verifier_fails() -> None:
    writing = pytest.importorskip("needleforge.backends.writing")
    embedded = pytest.importorskip("needleforge.backends.embedded.writer")
    nemo_pkg = pytest.importorskip("needleforge.nemo")
    data = ec.corpus({"p1": 2}, scenes=40, seed=3)
    generated = nemo_pkg.generate(**data.kwargs(), params=NemoParams(),
                                  describer=embedded.EmbeddedDescriber(),
                                  verifier=embedded.EmbeddedVerifier())
    short = ec.Short(list(generated.montages), list(generated.questions),
                     list(generated.verifications))
    assert any(v.passed for v in short.verifications)
    result = ec.run(data, short, ExpandParams(long_targets=3, medium_targets=2))
    assert result.questions
    tables = index_tables(data.scenes, tags=data.tags, objects=data.objects)
    montages = {m.montage_id: m for m in result.montages}
    verifier = embedded.EmbeddedVerifier()
    for question, verdict in zip(result.questions, result.verifications, strict=True):
        target = ec._target_of(question, tables)
        base = tables.view(target.scene)
        view = writing.TargetView(base.scene, base.tags, base.objects, target.target_object)
        distractors = distractor_scenes(montages[question.montage_id],
                                        target_id=target.target_id)
        negatives = tuple(tables.view(tables.scenes_by_id[sid]) for sid in distractors)
        embedded_verdict = verifier.verify(writing.VerifyRequest(
            question.needle_type, question.description, question.text, view, negatives))
        assert verdict.passed, verdict.reason
        assert embedded_verdict.passed, embedded_verdict.reason


def test_expanded_question_ids_follow_the_stage_two_rule() -> None:
    data = ec.corpus({"p": 1}, scenes=40)
    result = ec.run(data, ec.short_stage(data), ExpandParams())
    montages = {m.montage_id: m for m in result.montages}
    for q in result.questions:
        assert q.montage_id in montages
        assert q.question_id == question_id_for(
            q.montage_id, needle_type=q.needle_type,
            target_id=q.target_object_id or q.target_scene_id, template_id=q.template_id)
    assert dataclasses.asdict(result.cells[0])["needles"] == "multi"
