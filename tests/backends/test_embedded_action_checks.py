""""Someone walking", written and verified: the measure's tag becomes the scene's action (in
place of its people), the looking verifier reads the walk again on frames the writer did not
use, and a negative where someone may be walking refuses it. Real frames: pedestrians on a
campus lawn against a man talking in a car, a talk and a face close-up."""

from __future__ import annotations

from needleforge.backends.base import Keyframe
from needleforge.backends.embedded.verifier import LookingVerifier
from needleforge.backends.embedded.writer import EmbeddedDescriber
from needleforge.backends.writing import SceneView, TargetView, VerifyRequest, WrittenNeedle
from needleforge.records import Box, ObjectAttributes, ObjectTrack, Scene, SceneTag, TimedBox
from needleforge.records.base import object_id_for
from needleforge.scenes.walking import MEASURE_NAME, MEASURE_VERSION, WALK_TAG
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
