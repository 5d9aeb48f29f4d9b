""""Someone walking", written and verified: the measure's tag becomes the scene's action (in
place of its people), the looking verifier reads the walk again on frames the writer did not
use, and a negative where someone may be walking refuses it. Real frames: pedestrians on a
campus lawn against a man talking in a car, a talk and a face close-up."""

from __future__ import annotations

import dataclasses

import pytest

from needleforge.backends.base import Keyframe
from needleforge.backends.embedded.verifier import LookingVerifier
from needleforge.backends.embedded.writer import EmbeddedDescriber
from needleforge.backends.writing import SceneView, TargetView, VerifyRequest, WrittenNeedle
from needleforge.errors import StudioError
from needleforge.records import Box, ObjectAttributes, ObjectTrack, Scene, SceneTag, TimedBox
from needleforge.records.base import object_id_for
from needleforge.scenes.walking import MEASURE_NAME, MEASURE_VERSION, WALK_TAG
from needleforge.studio.real_assets import sample_frames
from tests.backends.look_cases import back_to_back, real_frames

VIDEO = "v" + "ef" * 8
DESCRIPTION = "A scene with someone walking."


def _walk(scene_id: str) -> SceneTag:
    return SceneTag(scene_id, WALK_TAG, 0.9, MEASURE_NAME, MEASURE_VERSION)


def _person(scene: Scene, index: int) -> ObjectTrack:
    box = Box(0.4 + 0.05 * index, 0.3, 0.05, 0.2)
    return ObjectTrack(
        object_id=object_id_for(scene.scene_id, index), scene_id=scene.scene_id, index=index,
        tag="person", start_s=scene.start_s, end_s=scene.start_s + 4.0, visible_s=4.0,
        mean_area_frac=0.06, mean_score=0.9,
        boxes=tuple(TimedBox(scene.start_s + k, box) for k in range(5)),
        attributes=ObjectAttributes(colour="black", position="centre", size_rank=1),
        referring_expression="the person in black", backend="test", model_version="1")


def test_the_writer_asks_for_someone_walking_not_for_the_people() -> None:
    scene = back_to_back(VIDEO, 1, length_s=10.0)[0]
    people = (_person(scene, 0), _person(scene, 1))
    tags = (_walk(scene.scene_id),
            SceneTag(scene.scene_id, "person", 0.9, "test", "1"))
    written = EmbeddedDescriber().write(TargetView(scene, tags, people, None),
                                        needle_type="scene")
    assert isinstance(written, WrittenNeedle)
    assert written.description == DESCRIPTION


def _request(target: list, negatives: list[list]) -> VerifyRequest:
    scenes = back_to_back(VIDEO, 1 + len(negatives), length_s=10.0)

    def keyframes(index: int, images: list) -> tuple[Keyframe, ...]:
        # a second apart, half a second off the representation's keyframe clock
        return tuple(Keyframe(scenes[index].start_s + 0.6 + k, image)
                     for k, image in enumerate(images))

    view = TargetView(scenes[0], (_walk(scenes[0].scene_id),), (), None, keyframes(0, target))
    others = tuple(SceneView(scene, (), (), keyframes(i + 1, images))
                   for i, (scene, images) in enumerate(zip(scenes[1:], negatives, strict=True)))
    return VerifyRequest("scene", DESCRIPTION, "When is there a scene with someone walking?",
                         view, others)


def test_the_looking_verifier_sees_the_walk_again_and_refuses_unreadable_negatives() -> None:
    walkers, car, talk, face = (real_frames("pedestrians", most=6), real_frames("carphone", most=4),
                                real_frames("talk", most=4), real_frames("face", most=4))
    verifier = LookingVerifier()
    good = verifier.verify(_request(walkers, [car, talk]))
    assert good.passed, good.reason
    assert "measure-walking" in good.reason
    close_up = verifier.verify(_request(walkers, [car, face]))
    assert not close_up.passed and "negative-walking" in close_up.reason
    sitting = verifier.verify(_request(car, [talk]))  # the tables' word, not the frames'
    assert not sitting.passed and "measure-walking" in sitting.reason


def _spread(name: str) -> tuple[list, list]:
    """Frames of a real 10 fps clip 3 s apart (four over a 12 s shot, as the verifier is
    shown it) and each one's companion half a second later."""
    try:
        half_seconds = sample_frames(name, every=5, most=20)
    except StudioError as err:
        pytest.skip(f"real clip {name!r} not installed: {err}")
    return ([half_seconds[i] for i in (0, 6, 12, 18)],
            [half_seconds[i] for i in (1, 7, 13, 19)])


def test_the_verifier_matches_a_crowd_of_walkers_on_companion_frames() -> None:
    """The campus walkers' target as the pipeline hands it over: frames 3 s apart and each
    one's companion. The walk is measured on the companion pairs (on the frames alone it was
    missed); a target whose companions show people sitting is still refused."""
    frames, companions = _spread("pedestrians")
    scenes = back_to_back(VIDEO, 2, length_s=14.0)
    keys = tuple(Keyframe(0.6 + 3 * k, image) for k, image in enumerate(frames))
    later = tuple(Keyframe(1.1 + 3 * k, image) for k, image in enumerate(companions))
    talk = tuple(Keyframe(scenes[1].start_s + 0.6 + k, image)
                 for k, image in enumerate(real_frames("talk", most=4)))
    view = TargetView(scenes[0], (_walk(scenes[0].scene_id),), (), None, keys,
                      companion_frames=later)
    request = VerifyRequest("scene", DESCRIPTION, "When is there a scene with someone walking?",
                            view, (SceneView(scenes[1], (), (), talk),))
    verdict = LookingVerifier().verify(request)
    assert verdict.passed, verdict.reason
    assert "each frame and its companion" in verdict.reason
    # the same frames alone: walkers 3 s on are matched with others, "still" at 0.07-0.19
    alone = LookingVerifier().verify(dataclasses.replace(
        request, target=dataclasses.replace(view, companion_frames=())))
    assert not alone.passed and "consecutive frames" in alone.reason
    car = real_frames("carphone", most=4)
    sitting = dataclasses.replace(
        request, target=dataclasses.replace(
            view, keyframes=tuple(Keyframe(0.6 + 3 * k, im) for k, im in enumerate(car[:2])),
            companion_frames=tuple(Keyframe(1.1 + 3 * k, im) for k, im in enumerate(car[2:]))))
    refused = LookingVerifier().verify(sitting)
    assert not refused.passed and "measure-walking" in refused.reason
