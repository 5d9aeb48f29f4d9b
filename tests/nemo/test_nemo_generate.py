"""The stage function end to end: verdicts for all, skips with reasons, store round trip."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from nemo_cases import corpus, make_scene, make_tag, make_track, make_video, params, tile

from needleforge.backends.base import Keyframe
from needleforge.backends.embedded.writer import EmbeddedDescriber, EmbeddedVerifier
from needleforge.backends.writing import Skip, TargetView, WrittenNeedle
from needleforge.errors import NemoError
from needleforge.nemo import GenerationResult, generate
from needleforge.records import NeedleType, Scene
from needleforge.store import Store


def _run(**overrides: object) -> GenerationResult:
    p = params(**overrides)
    return generate(**corpus().kwargs(), params=p, describer=EmbeddedDescriber(seed=p.seed),
                    verifier=EmbeddedVerifier())


def test_every_question_has_its_own_montage_and_a_verdict() -> None:
    result = generate(**corpus().kwargs(), params=params(), describer=EmbeddedDescriber(),
                      verifier=EmbeddedVerifier())
    assert len(result.questions) == len(result.montages) == len(result.verifications) == 11
    montage_ids = [m.montage_id for m in result.montages]
    assert len(set(montage_ids)) == len(montage_ids)
    assert [q.montage_id for q in result.questions] == montage_ids
    assert [v.question_id for v in result.verifications] == [
        q.question_id for q in result.questions]
    assert all(v.passed for v in result.verifications)
    assert result.releasable() == result.questions
    assert {v.verifier for v in result.verifications} == {"embedded-evidence"}
    object_q = result.questions[0]
    assert (object_q.needle_type, object_q.description) == ("object", "the cat")
    montage = result.montages[0]
    [target] = [s for s in montage.segments if s.role == "target"]
    assert montage.target_spans() == [(target.montage_start_s, target.montage_end_s)]
    assert (target.src_start_s, target.src_end_s) == pytest.approx((2.4, 8.3))


def test_same_seed_same_result_other_seed_other_plans() -> None:
    first, again, other = _run(seed=4), _run(seed=4), _run(seed=5)
    assert first == again
    assert first.montages != other.montages


def test_too_few_negatives_and_describer_skips_are_recorded() -> None:
    scenes = tile([8.0, 6.0, 6.0])
    tags = [make_tag(scenes[0], "cat"), make_tag(scenes[0], "sofa"),
            make_tag(scenes[1], "street"), make_tag(scenes[2], "tree")]
    objects = [make_track(scenes[0], 0, "cat")]
    cat_id = objects[0].object_id

    def run(short_min_s: float) -> GenerationResult:
        return generate(videos=[make_video()], scenes=scenes, tags=tags, objects=objects,
                        params=params(abstract_labels=[], short_min_s=short_min_s),
                        describer=EmbeddedDescriber(abstract_labels=["cat"], fine_tags=True),
                        verifier=EmbeddedVerifier())

    short = run(25.0)
    assert short.questions == () and short.montages == () and short.verifications == ()
    # The question is written before its negatives are chosen (by what it names).
    assert {(s.target_id, s.stage) for s in short.skipped} == {
        (cat_id, "describe"), (scenes[0].scene_id, "plan")}
    [scene_skip] = [s for s in short.skipped if s.stage == "plan"]
    assert scene_skip.reason.startswith(
        "too few negatives: 2 of 2 eligible fit, giving 20.00 s; need >= 25.0 s")
    assert scene_skip.reason.endswith("negatives may hold none of ['sofa']")
    enough = run(12.0)
    [skip] = enough.skipped
    assert (skip.target_id, skip.needle_type, skip.stage) == (cat_id, "object", "describe")
    assert skip.reason == f"embedded-templates: object {cat_id}: label 'cat' is too abstract " \
                          f"to ground"
    assert [q.needle_type for q in enough.questions] == ["scene"]


class _VagueDescriber:
    """Describes every scene as 'a scene with a person' — true, but not unique."""

    name = "vague"
    version = "0"

    def write(self, view: TargetView, *, needle_type: NeedleType) -> WrittenNeedle | Skip:
        return WrittenNeedle(needle_type, "A scene with a person.",
                             "When is there a scene with a person?", "vague/person")


def test_a_question_naming_what_every_scene_shows_gets_no_montage() -> None:
    """Negatives may hold nothing the question names: "a person" in every scene leaves none."""
    c = corpus()
    persons = [make_track(s, 5, "person", area=0.01) for s in c.scenes]
    result = generate(videos=[c.video], scenes=c.scenes, tags=c.tags,
                      objects=[*c.objects, *persons], params=params(),
                      describer=_VagueDescriber(), verifier=EmbeddedVerifier())
    assert result.questions == () and result.verifications == ()
    assert len(result.skipped) == 11
    for skip in result.skipped:
        assert skip.stage == "plan" and "0 of 0 eligible" in skip.reason, skip.reason
        assert "negatives may hold none of" in skip.reason and "'person'" in skip.reason


def test_keyframes_reach_the_backends() -> None:
    seen: list[str] = []

    def frames(scene: Scene) -> list[Keyframe]:
        seen.append(scene.scene_id)
        return [Keyframe(scene.start_s, np.zeros((4, 4, 3), dtype=np.uint8))]

    class Counting(EmbeddedDescriber):
        views: list[int] = []  # noqa: RUF012 (test-only record of what it saw)

        def write(self, view: TargetView, *, needle_type: NeedleType) -> WrittenNeedle | Skip:
            self.views.append(len(view.keyframes))
            return super().write(view, needle_type=needle_type)

    result = generate(**corpus().kwargs(), params=params(max_targets=1, check={"setup": False}),
                      describer=Counting(), verifier=EmbeddedVerifier(), keyframes=frames)
    n_negatives = sum(s.role == "negative" for s in result.montages[0].segments)
    assert Counting.views == [1] and len(seen) == 1 + n_negatives
    # The returning-shot check also looks at the target and each negative it lets in.
    seen.clear()
    again = generate(**corpus().kwargs(), params=params(max_targets=1),
                     describer=Counting(), verifier=EmbeddedVerifier(), keyframes=frames)
    assert again == result
    assert {s.scene_id for s in result.montages[0].segments} <= set(seen)


def test_other_videos_are_ignored_and_wrong_needles_refused() -> None:
    c = corpus()
    other = make_video("b" * 64)
    foreign = make_scene(0, 0.0, 30.0, video_id=other.video_id)
    result = generate(videos=[c.video], scenes=[*c.scenes, foreign],
                      tags=[*c.tags, make_tag(foreign, "cat"), make_tag(foreign, "dog")],
                      objects=c.objects, params=params(), describer=EmbeddedDescriber(),
                      verifier=EmbeddedVerifier())
    assert all(foreign.scene_id not in {s.scene_id for s in m.segments}
               for m in result.montages)

    class Wrong(EmbeddedDescriber):
        def write(self, view: TargetView, *, needle_type: NeedleType) -> WrittenNeedle | Skip:
            written = super().write(view, needle_type=needle_type)
            assert isinstance(written, WrittenNeedle)
            return dataclasses.replace(written, needle_type="scene")

    with pytest.raises(NemoError, match="wrote a scene needle for object target"):
        generate(**c.kwargs(), params=params(), describer=Wrong(),
                 verifier=EmbeddedVerifier())


def test_result_round_trips_through_the_store(tmp_path: Path) -> None:
    result = generate(**corpus().kwargs(), params=params(), describer=EmbeddedDescriber(),
                      verifier=EmbeddedVerifier())
    with Store(tmp_path / "nf.duckdb") as store:
        for _ in range(2):
            store.record_generation(result.montages, result.questions, result.verifications)
        assert store.montages() == sorted(result.montages, key=lambda m: m.montage_id)
        assert store.questions() == sorted(result.questions, key=lambda q: q.question_id)
        assert sorted(store.verifications(), key=lambda v: v.question_id) == sorted(
            result.verifications, key=lambda v: v.question_id)
