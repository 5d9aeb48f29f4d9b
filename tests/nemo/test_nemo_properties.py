"""Invariants of generation on random tables (hypothesis).

For any tables and seed: every montage is short and inside the configured length, its
segments tile it and stay inside their scenes, every segment starts on its scene's
whole-second keyframe grid, the answer is the target segment's place in the montage, no
negative holds what the question excludes, and the same seed gives the same result.
"""

from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nemo_cases import make_tag, make_track, make_video, params, tile

from needleforge.backends.embedded.writer import EmbeddedDescriber, EmbeddedVerifier
from needleforge.nemo import (
    GenerationResult,
    Target,
    excluded_terms,
    generate,
    index_tables,
)
from needleforge.params import NemoParams
from needleforge.records import ObjectTrack, Scene, SceneTag
from needleforge.records.phrases import holds

LABELS = ("cat", "dog", "car", "cup", "tree", "street", "sofa", "sky")
_TOL = 1e-6


@st.composite
def tables(draw: st.DrawFn) -> tuple[list[Scene], list[SceneTag], list[ObjectTrack]]:
    durations = draw(st.lists(st.floats(0.3, 40.0), min_size=2, max_size=25))
    start = draw(st.floats(0.0, 5.0))
    scenes = tile(durations, start_s=start)
    tags: list[SceneTag] = []
    objects: list[ObjectTrack] = []
    for scene in scenes:
        for label in draw(st.lists(st.sampled_from(LABELS), max_size=3, unique=True)):
            tags.append(make_tag(scene, label, draw(st.floats(0.0, 1.0))))
        for index in range(draw(st.integers(0, 2))):
            a, b = sorted((draw(st.floats(0.0, 1.0)), draw(st.floats(0.0, 1.0))))
            t0 = scene.start_s + a * scene.duration_s
            t1 = scene.start_s + b * scene.duration_s
            objects.append(make_track(
                scene, index, draw(st.sampled_from(LABELS)), start=t0, end=t1,
                visible=(t1 - t0) * draw(st.floats(0.0, 1.0)), area=draw(st.floats(0.01, 0.4)),
                colour=draw(st.sampled_from(("white", "black", ""))),
            ))
    return scenes, tags, objects


@st.composite
def nemo_params(draw: st.DrawFn) -> NemoParams:
    low = draw(st.floats(5.0, 60.0))
    return params(seed=draw(st.integers(0, 2**31)), short_min_s=low,
                  short_max_s=draw(st.floats(low, 149.0)),
                  min_negatives=draw(st.integers(1, 3)), min_negative_s=draw(st.floats(0.5, 3)))


def _generate(data: tuple[list[Scene], list[SceneTag], list[ObjectTrack]], p: NemoParams
              ) -> GenerationResult:
    scenes, tags, objects = data
    return generate(videos=[make_video()], scenes=scenes, tags=tags, objects=objects, params=p,
                    describer=EmbeddedDescriber(seed=p.seed), verifier=EmbeddedVerifier())


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=tables(), p=nemo_params())
def test_generated_montages_keep_every_invariant(
    data: tuple[list[Scene], list[SceneTag], list[ObjectTrack]], p: NemoParams
) -> None:
    result = _generate(data, p)
    scenes = {s.scene_id: s for s in data[0]}
    tables_ = index_tables(data[0], tags=data[1], objects=data[2])
    assert len(result.questions) == len(result.montages) == len(result.verifications)
    for montage, question in zip(result.montages, result.questions, strict=True):
        assert montage.bucket == "short" and montage.duration_s < 150.0
        assert p.short_min_s - _TOL <= montage.duration_s <= p.short_max_s + _TOL
        clock = 0.0
        for segment in montage.segments:
            scene = scenes[segment.scene_id]
            assert abs(segment.montage_start_s - clock) <= _TOL
            clock = segment.montage_end_s
            offset = segment.src_start_s - scene.start_s
            assert offset >= -_TOL and abs(offset - round(offset)) <= _TOL
            assert segment.src_end_s <= scene.end_s + _TOL
        targets = [s for s in montage.segments if s.role == "target"]
        negatives = [s for s in montage.segments if s.role == "negative"]
        assert len(targets) == 1 and len(negatives) >= p.min_negatives
        assert montage.target_spans() == [(targets[0].montage_start_s,
                                           targets[0].montage_end_s)]
        start, end = montage.target_spans()[0]
        assert 0.0 <= start < end <= montage.duration_s + _TOL
        target_obj = next((o for o in data[2] if o.object_id == question.target_object_id), None)
        if target_obj is not None:     # the target segment covers the whole track
            assert targets[0].src_start_s <= target_obj.start_s + _TOL
            assert targets[0].src_end_s >= min(target_obj.end_s, scenes[
                target_obj.scene_id].end_s) - _TOL
        target = Target(question.needle_type, scenes[question.target_scene_id], target_obj)
        excluded = excluded_terms(target, tables_, text=f"{question.description}\n{question.text}")
        for segment in negatives:
            terms = tables_.view(scenes[segment.scene_id]).terms
            assert not any(holds(terms, term) for term in excluded)
            assert scenes[segment.scene_id].video_id == target.video_id
            assert segment.scene_id != question.target_scene_id
    assert _generate(data, p) == result


@settings(max_examples=30, deadline=None)
@given(data=tables(), p=nemo_params())
def test_targets_meet_the_thresholds(
    data: tuple[list[Scene], list[SceneTag], list[ObjectTrack]], p: NemoParams
) -> None:
    result = _generate(data, p)
    scenes = {s.scene_id: s for s in data[0]}
    objects = {o.object_id: o for o in data[2]}
    for question in result.questions:
        assert scenes[question.target_scene_id].duration_s > p.min_scene_s
        if question.target_object_id is not None:
            obj = objects[question.target_object_id]
            assert obj.visible_s >= p.min_visible_s - _TOL
            assert p.min_area_frac - _TOL <= obj.mean_area_frac <= p.max_area_frac + _TOL
            assert obj.tag not in p.abstract_labels
    assert all(math.isfinite(m.duration_s) for m in result.montages)
