"""The mostly-one-colour scene question, written and verified: the measure's tag becomes a
described scene, the looking verifier measures it again on frames the writer did not use, and
a negative a viewer could take for that colour refuses it. Frames: the Lego model on its
orange backdrop against the coin on a white table, the towers at night and the cat on its
yellow-lit bed."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from needleforge.backends.base import Keyframe
from needleforge.backends.embedded.verifier import LookingVerifier
from needleforge.backends.embedded.writer import EmbeddedDescriber, verify_scene
from needleforge.backends.writing import SceneView, TargetView, VerifyRequest, WrittenNeedle
from needleforge.errors import StudioError
from needleforge.records import Scene, SceneTag
from needleforge.records.base import scene_id_for
from needleforge.scenes.colour_cast import MEASURE_NAME, MEASURE_VERSION
from needleforge.studio.real_assets import sample_frames

VIDEO = "v" + "cd" * 8
ORANGE = "mostly orange"


def _frames(name: str, *, most: int) -> list[npt.NDArray[np.uint8]]:
    try:
        return sample_frames(name, most=most)
    except StudioError as err:
        pytest.skip(f"real clip {name!r} not installed: {err}")


def _scenes(n: int) -> list[Scene]:
    return [Scene(scene_id=scene_id_for(VIDEO, i), video_id=VIDEO, index=i, start_s=6.0 * i,
                  end_s=6.0 * (i + 1), n_frames=150) for i in range(n)]


def _cast(scene_id: str) -> SceneTag:
    return SceneTag(scene_id, ORANGE, 0.79, MEASURE_NAME, MEASURE_VERSION)


def test_the_writer_asks_for_the_mostly_orange_scene() -> None:
    scene = _scenes(1)[0]
    written = EmbeddedDescriber().write(TargetView(scene, (_cast(scene.scene_id),), (), None),
                                        needle_type="scene")
    assert isinstance(written, WrittenNeedle)
    assert written.description == "A mostly orange scene."


def _request(target_images: list, negative_images: list[list]) -> VerifyRequest:
    scenes = _scenes(1 + len(negative_images))

    def keyframes(index: int, images: list) -> tuple[Keyframe, ...]:
        return tuple(Keyframe(scenes[index].start_s + 0.5 + 0.7 * k, image)
                     for k, image in enumerate(images))

    target = TargetView(scenes[0], (_cast(scenes[0].scene_id),), (), None,
                        keyframes(0, target_images))
    negatives = tuple(SceneView(scene, (), (), keyframes(i + 1, images))
                      for i, (scene, images) in enumerate(zip(scenes[1:], negative_images,
                                                              strict=True)))
    return VerifyRequest("scene", "A mostly orange scene.",
                         "When is there a mostly orange scene?", target, negatives)


def test_the_looking_verifier_measures_the_colour_again() -> None:
    lego, coin, city = (_frames("lego", most=4), _frames("coin", most=4),
                        _frames("city", most=4))
    verifier = LookingVerifier()
    good = verifier.verify(_request(lego, [coin[:2], city[:2]]))
    assert good.passed, good.reason
    assert "measure-colour-cast" in good.reason
    cat = _frames("clockcat", most=6)[-1:]
    on_the_bed = verifier.verify(_request(lego, [coin[:2], cat]))
    assert not on_the_bed.passed and "negative-colour-cast" in on_the_bed.reason
    wrong = verifier.verify(_request(coin, [city[:2]]))  # the tables' word, not the frames'
    assert not wrong.passed and "measure-colour-cast" in wrong.reason


def test_the_table_verifier_refuses_a_negative_tagged_with_the_same_cast() -> None:
    request = _request([], [[]])
    negative = request.negatives[0]
    tagged = SceneView(negative.scene, (_cast(negative.scene.scene_id),), (), ())
    verdict = verify_scene(VerifyRequest("scene", request.description, request.question,
                                         request.target, (tagged,)))
    assert not verdict.passed and ORANGE in verdict.reason
