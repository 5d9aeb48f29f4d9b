"""People the detector does not box, seen by their pose on real camera footage: a talking
head and a face close-up are people; a Lego model, a coin, towers, a cockatoo and a fish
tank are not, though a frame or two of the last two light some keypoints."""

from __future__ import annotations

import numpy as np
import pytest

from needleforge.backends.base import Keyframe
from needleforge.backends.embedded.pose import EmbeddedPose
from needleforge.errors import StudioError
from needleforge.scenes import closeup
from needleforge.scenes.bodies import BODY_TAG, MIN_SHARE, body_share, shows_body
from needleforge.stages.represent_video import CLOSEUP_KEYFRAMES, _pose_tags
from needleforge.studio.real_assets import sample_frames


@pytest.fixture(scope="module")
def pose() -> EmbeddedPose:
    return EmbeddedPose()


def _keyframes(name: str) -> list[Keyframe]:
    try:
        images = sample_frames(name, every=25, most=8)
    except StudioError as err:
        pytest.skip(f"real clip {name!r} not installed: {err}")
    return [Keyframe(float(i), image) for i, image in enumerate(images)]


@pytest.mark.parametrize("name", ["talk", "intro", "face", "carphone"])
def test_close_ups_of_people_are_tagged(pose: EmbeddedPose, name: str) -> None:
    tags = _pose_tags("v-s0000", _keyframes(name), pose, people=False)
    [tag] = [t for t in tags if t.tag == BODY_TAG]
    assert (tag.tag, tag.backend) == (BODY_TAG, pose.name) and tag.score >= MIN_SHARE
    # the same keypoints: a face near the camera
    assert {t.tag for t in tags} == {BODY_TAG, closeup.CLOSE_UP, closeup.FACE_TAG}


def test_with_a_person_track_only_a_few_frames_are_looked_at_for_a_close_up(
        pose: EmbeddedPose) -> None:
    looked: list[int] = []

    class Counting:
        name, version = pose.name, pose.version

        def keypoints(self, image: np.ndarray) -> np.ndarray:
            looked.append(1)
            return pose.keypoints(image)

    tags = _pose_tags("v-s0000", _keyframes("carphone"), Counting(),  # type: ignore[arg-type]
                      people=True)
    assert len(looked) == CLOSEUP_KEYFRAMES
    assert BODY_TAG not in {t.tag for t in tags}  # the person track says it already
    assert closeup.CLOSE_UP in {t.tag for t in tags}


@pytest.mark.parametrize("name", ["lego", "coin", "city", "cockatoo", "fish", "tree"])
def test_scenes_without_people_are_not(pose: EmbeddedPose, name: str) -> None:
    tags = _pose_tags("v-s0000", _keyframes(name), pose, people=False)
    assert {t.tag for t in tags} <= {closeup.FACE_TAG}


def test_one_or_two_frames_prove_nothing() -> None:
    body, none = np.full(17, 0.9), np.zeros(17)
    assert shows_body(body) and not shows_body(none)
    assert body_share([]) is None and body_share([body]) is None
    assert body_share([body, body, none]) == pytest.approx(2 / 3)
    assert body_share([body, none, none, none]) is None
    assert body_share([body, body, none, none]) is None  # a half is not most


def test_the_tag_keeps_a_scene_out_of_people_questions_but_is_never_named() -> None:
    from needleforge.records.phrases import holds

    assert holds([BODY_TAG], "person")
    assert not holds(["person"], BODY_TAG)
