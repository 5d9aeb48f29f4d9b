"""Close-ups of a face, measured on real frames: the man in a car, the face close-up and the
talking head are close-ups; the lectern's medium shot is not, and may not be a negative either;
pedestrians, cyclists, the 1906 race and the Lego model are wide shots a close-up question may
take as negatives."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from needleforge.backends.base import Keyframe
from needleforge.backends.embedded import shot_checks
from needleforge.backends.embedded.pose import EmbeddedPose
from needleforge.backends.writing import SceneView
from needleforge.errors import StudioError
from needleforge.records import Scene
from needleforge.records.base import scene_id_for
from needleforge.scenes import closeup
from needleforge.studio.real_assets import sample_frames

VIDEO = "v" + "cd" * 8


@pytest.fixture(scope="module")
def pose() -> EmbeddedPose:
    return EmbeddedPose(num_threads=2)


def _frames(name: str) -> list[npt.NDArray[np.uint8]]:
    """Six frames of real clip ``name``, a second (25 decoded frames) apart."""
    try:
        return sample_frames(name, every=25, most=6)
    except StudioError as err:
        pytest.skip(f"real clip {name!r} not installed: {err}")


def _tags(pose: EmbeddedPose, name: str) -> dict[str, float]:
    frames = _frames(name)
    height, width = frames[0].shape[:2]
    return dict(closeup.scene_tags([pose.keypoints(f) for f in frames], aspect=height / width))


@pytest.mark.parametrize("name", ["carphone", "face", "talk", "intro"])
def test_faces_near_the_camera_are_close_ups(pose: EmbeddedPose, name: str) -> None:
    tags = _tags(pose, name)
    assert closeup.CLOSE_UP in tags and tags[closeup.FACE_TAG] >= closeup.MIN_SCALE


def test_a_medium_shot_of_speakers_is_no_close_up_and_no_negative(pose: EmbeddedPose) -> None:
    tags = _tags(pose, "statement")
    assert closeup.CLOSE_UP not in tags
    assert closeup.negative_refused(tags.get(closeup.FACE_TAG))


@pytest.mark.parametrize("name", ["pedestrians", "bikes", "race1906", "lego", "coin", "tree"])
def test_wide_shots_and_things_may_be_negatives(pose: EmbeddedPose, name: str) -> None:
    tags = _tags(pose, name)
    assert closeup.CLOSE_UP not in tags
    assert not closeup.negative_refused(tags.get(closeup.FACE_TAG))


def test_one_close_frame_is_no_close_up_scene() -> None:
    near = np.zeros((17, 3))
    near[:3] = [(0.40, 0.50, 0.9), (0.35, 0.40, 0.9), (0.35, 0.60, 0.9)]  # eyes 0.2 apart
    far = near.copy()
    far[1:3, 1] = (0.49, 0.51)
    assert closeup.is_close_up(near, aspect=0.75) and not closeup.is_close_up(far, aspect=0.75)
    assert closeup.close_up_share([near, far, far], aspect=0.75) is None
    assert closeup.close_up_share([near, near, far], aspect=0.75) == pytest.approx(2 / 3)
    unseen = near.copy()
    unseen[0, 2] = 0.1  # no nose: no face scale, whatever the eyes say
    assert closeup.face_scale(unseen, aspect=0.75) is None


def _view(name: str, index: int) -> SceneView:
    frames = _frames(name)
    scene = Scene(scene_id_for(VIDEO, index), VIDEO, index, 0.0, float(len(frames)),
                  len(frames) * 25)
    return SceneView(scene, (), (), tuple(Keyframe(float(i), f) for i, f in enumerate(frames)))


def test_the_verifier_measures_the_claim_again_and_refuses_near_faces_as_negatives(
        pose: EmbeddedPose) -> None:
    claims = [(closeup.CLOSE_UP, 1)]
    car = _view("carphone", 0)
    held = shot_checks.shot(closeup.CLOSE_UP, car.keyframes, points=pose.keypoints)
    assert held.confirmed and held.rule == "measure-closeup"
    wide = _view("pedestrians", 1)
    assert not shot_checks.shot(closeup.CLOSE_UP, wide.keyframes,
                                points=pose.keypoints).confirmed
    assert shot_checks.negative_shot(wide, claims, points=pose.keypoints) is None
    refusal = shot_checks.negative_shot(_view("statement", 2), claims, points=pose.keypoints)
    assert refusal is not None and "negative-closeup" in refusal
    # another claim leaves faces alone
    assert shot_checks.negative_shot(_view("statement", 3), [("car", 1)],
                                     points=pose.keypoints) is None
