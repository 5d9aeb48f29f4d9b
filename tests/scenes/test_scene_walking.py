"""Someone walking, measured: stored person tracks that cross a still shot, and person boxes
matched on pairs of real frames — the pedestrians on a campus lawn walk; the man talking in a
car, the talk and its intro do not; a face close-up moves the whole picture and cannot be
read."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pytest

from needleforge.backends.base import Keyframe
from needleforge.backends.embedded.eyes import Eyes
from needleforge.errors import StudioError
from needleforge.media.decode import VideoReader
from needleforge.records import Box, Detection, ObjectAttributes, ObjectTrack, TimedBox
from needleforge.records.base import object_id_for, scene_id_for
from needleforge.scenes.walking import (
    MAX_SPEED,
    MIN_SPEED,
    NEGATIVE_SPEED,
    WALK_TAG,
    PairLook,
    camera_shift,
    camera_still,
    companion_pairs,
    gait,
    looks_on_pairs,
    may_walk,
    nobody_walks,
    pair_looks,
    walking_tags,
    walks,
)
from needleforge.studio.real_assets import locate, sample_frames, select_sources

SCENE = scene_id_for("v" + "ab" * 8, 0)


def _frames(name: str, *, most: int = 6) -> list[npt.NDArray[np.uint8]]:
    """Frames of real clip ``name``, 25 decoded frames (a second at 25 fps) apart."""
    try:
        return sample_frames(name, most=most)
    except StudioError as err:
        pytest.skip(f"real clip {name!r} not installed: {err}")


@pytest.fixture(scope="module")
def eyes() -> Eyes:
    return Eyes(num_threads=2, cache=256, min_score=0.4)


def _looks(eyes: Eyes, name: str, *, min_speed: float) -> list[PairLook]:
    frames = _frames(name)
    detect = eyes.detections(name)
    return pair_looks([float(i) for i in range(len(frames))], frames,
                      detect=lambda t, image: detect(Keyframe(t, image)), min_speed=min_speed)


def test_the_pedestrians_walk_and_may_not_be_a_negative(eyes: Eyes) -> None:
    looks = _looks(eyes, "pedestrians", min_speed=MIN_SPEED)
    assert walks(looks), [look.describe() for look in looks]
    assert not nobody_walks(_looks(eyes, "pedestrians", min_speed=NEGATIVE_SPEED))


@pytest.mark.parametrize("name", ["carphone", "talk", "intro", "city"])
def test_people_sitting_or_standing_and_empty_streets_may_be_negatives(eyes: Eyes,
                                                                       name: str) -> None:
    looks = _looks(eyes, name, min_speed=NEGATIVE_SPEED)
    assert nobody_walks(looks), [look.describe() for look in looks]
    assert not walks(_looks(eyes, name, min_speed=MIN_SPEED))


def test_a_face_close_up_moves_the_picture_and_cannot_be_read(eyes: Eyes) -> None:
    """The face fills the frame, so phase correlation follows it: a negative that cannot be
    read is refused (it might show someone walking), never taken for a walk."""
    looks = _looks(eyes, "face", min_speed=NEGATIVE_SPEED)
    assert any(look.kind == "unreadable" for look in looks) and not nobody_walks(looks)
    assert not walks(_looks(eyes, "face", min_speed=MIN_SPEED))


def _spread_with_companions(name: str, *, step_s: float
                            ) -> tuple[list[tuple[float, npt.NDArray[np.uint8]]],
                                       list[tuple[float, npt.NDArray[np.uint8]]]]:
    """Frames of real clip ``name`` ``step_s`` apart (as a verifier is shown a shot: four
    over a 12 s shot are 3 s apart), and each one's companion half a second later."""
    try:
        path = locate(select_sources([name])[0].clip.source)
        with VideoReader(path) as reader:
            fps, duration = reader.facts.fps, reader.facts.duration_s
        every = round(fps / 2)
        half_seconds = sample_frames(name, every=every, most=int(duration * 2))
    except StudioError as err:
        pytest.skip(f"real clip {name!r} not installed: {err}")
    step = round(step_s * 2)
    firsts = range(0, len(half_seconds) - 1, step)
    return ([(i * every / fps, half_seconds[i]) for i in firsts],
            [((i + 1) * every / fps, half_seconds[i + 1]) for i in firsts])


def test_companion_frames_follow_a_crowd_of_walkers(eyes: Eyes) -> None:
    """Frames seconds apart let a walker cross the places of others; each frame with its
    companion half a second on matches every walker with themself."""
    frames, companions = _spread_with_companions("pedestrians", step_s=3.0)
    pairs = companion_pairs(frames, companions)
    assert [(a[0], b[0]) for a, b in pairs][:4] == [(0.0, 0.5), (3.0, 3.5), (6.0, 6.5),
                                                     (9.0, 9.5)]
    detect = eyes.detections("pedestrians-companions")
    looks = looks_on_pairs(pairs, detect=lambda t, image: detect(Keyframe(t, image)),
                           min_speed=MIN_SPEED, max_speed=MAX_SPEED)
    assert walks(looks), [look.describe() for look in looks]
    assert all(look.speed <= MAX_SPEED for look in looks)


@pytest.mark.parametrize("name", ["carphone", "talk"])
def test_companion_frames_of_people_sitting_show_no_walk(eyes: Eyes, name: str) -> None:
    frames, companions = _spread_with_companions(name, step_s=1.0)
    detect = eyes.detections(f"{name}-companions")
    looks = looks_on_pairs(companion_pairs(frames, companions),
                           detect=lambda t, image: detect(Keyframe(t, image)),
                           min_speed=MIN_SPEED, max_speed=MAX_SPEED)
    assert looks and not walks(looks), [look.describe() for look in looks]


def test_a_match_too_fast_for_a_walker_is_two_people() -> None:
    """One person at the left, then one at the right half a second later: a flicker of the
    detector, not a walk of 9 box heights a second (a negative still counts it as moving)."""
    _, images = _still(2)
    frames = {0.0: 0.1, 0.5: 0.6}

    def detect(t: float, image: npt.NDArray[np.uint8]) -> list[Detection]:
        return [Detection(t, "person", 0.9, Box(frames[t], 0.4, 0.05, 0.2))]

    pairs = [((0.0, images[0]), (0.5, images[1]))]
    target = looks_on_pairs(pairs, detect=detect, min_speed=MIN_SPEED, max_speed=MAX_SPEED)
    assert [look.kind for look in target] == ["unmatched"] and not walks(target)
    negative = looks_on_pairs(pairs, detect=detect, min_speed=MIN_SPEED)
    assert [look.kind for look in negative] == ["moving"] and not nobody_walks(negative)
    with pytest.raises(ValueError, match="forward in time"):
        looks_on_pairs([(pairs[0][1], pairs[0][0])], detect=detect,
                       min_speed=MIN_SPEED)
    assert companion_pairs([(0.0, images[0])], [(2.0, images[1])]) == []  # too far on


def _track(index: int, tag: str, centres: Sequence[tuple[float, float]], *,
           h: float = 0.2, w: float = 0.08, dt: float = 1.0) -> ObjectTrack:
    boxes = tuple(TimedBox(k * dt, Box(x - w / 2, y - h / 2, w, h))
                  for k, (x, y) in enumerate(centres))
    end = (len(centres) - 1) * dt
    return ObjectTrack(
        object_id=object_id_for(SCENE, index), scene_id=SCENE, index=index, tag=tag,
        start_s=0.0, end_s=end, visible_s=end, mean_area_frac=h * w, mean_score=0.9,
        boxes=boxes, attributes=ObjectAttributes(colour="black", position="centre",
                                                 size_rank=1),
        referring_expression=f"the {tag}", backend="test", model_version="1")


def _still(n: int = 4) -> tuple[list[float], list[npt.NDArray[np.uint8]]]:
    rng = np.random.default_rng(0)
    image = rng.integers(0, 255, (90, 160, 3), dtype=np.uint8)
    return [float(k) for k in range(n)], [image] * n


def test_a_track_crossing_a_still_shot_walks_and_a_jittering_one_does_not() -> None:
    times, images = _still()
    # 0.1 of the width a second on a 16:9 frame = 0.18 frame heights = 0.9 box heights/s
    walker = _track(0, "person", [(0.2 + 0.1 * k, 0.5) for k in range(4)])
    stander = _track(1, "person", [(0.5 + 0.01 * (-1) ** k, 0.5) for k in range(4)])
    assert gait(walker, aspect=16 / 9) is not None and gait(walker, aspect=16 / 9).walking
    assert not gait(stander, aspect=16 / 9).walking  # type: ignore[union-attr]
    assert walking_tags([walker, stander], times, images) == [(WALK_TAG, 0.8889)]
    assert walking_tags([stander], times, images) == []
    short = _track(2, "person", [(0.2, 0.5), (0.4, 0.5)])  # two boxes: too short to tell
    assert gait(short, aspect=16 / 9) is None and walking_tags([short], times, images) == []
    car = _track(3, "car", [(0.2 + 0.1 * k, 0.5) for k in range(4)])
    assert walking_tags([car], times, images) == []  # only people walk


def test_a_rider_is_not_walking_and_a_moving_camera_says_nothing() -> None:
    times, images = _still()
    rider = _track(0, "person", [(0.2 + 0.1 * k, 0.5) for k in range(4)])
    bicycle = _track(1, "bicycle", [(0.2 + 0.1 * k, 0.55) for k in range(4)], h=0.15, w=0.12)
    assert walking_tags([rider, bicycle], times, images) == []
    panned = [np.roll(images[0], 12 * k, axis=1) for k in range(4)]  # 12 px a second
    assert not camera_still(times, panned) and camera_still(times, images)
    assert camera_shift(images[0], panned[1]) == pytest.approx(12 / 90, abs=0.01)
    assert walking_tags([_track(0, "person", [(0.2 + 0.1 * k, 0.5) for k in range(4)])],
                        times, panned) == []


def test_pairs_of_boxes_matched_on_synthetic_detections() -> None:
    times, images = _still(3)
    boxes = {0.0: [Box(0.10, 0.4, 0.05, 0.2), Box(0.70, 0.4, 0.05, 0.2)],
             1.0: [Box(0.16, 0.4, 0.05, 0.2), Box(0.70, 0.4, 0.05, 0.2)],
             2.0: [Box(0.70, 0.4, 0.05, 0.2)]}  # the walker left the frame

    def detect(t: float, image: npt.NDArray[np.uint8]) -> list[Detection]:
        return [Detection(t, "person", 0.9, box) for box in boxes[t]]

    looks = pair_looks(times, images, detect=detect, min_speed=MIN_SPEED)
    # 0.06 of the width over 1 s = 0.107 frame heights = 0.53 box heights a second
    assert [look.kind for look in looks] == ["moving", "still"]
    assert looks[0].speed == pytest.approx(0.06 * 160 / 90 / 0.2, abs=0.01)
    assert walks(looks) and not nobody_walks(looks)
    assert walks([]) is False and nobody_walks([]) is True


def test_bad_frames_are_refused() -> None:
    good = np.zeros((90, 160, 3), np.uint8)
    with pytest.raises(ValueError, match="uint8"):
        camera_shift(good.astype(np.float32), good)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="uint8"):
        camera_shift(np.zeros((0, 160, 3), np.uint8), good)
    with pytest.raises(ValueError, match="differ in size"):
        camera_shift(good, np.zeros((180, 160, 3), np.uint8))


def test_the_planner_keeps_out_negatives_where_someone_may_walk() -> None:
    times, images = _still()
    panned = [np.roll(images[0], 12 * k, axis=1) for k in range(4)]
    stander = _track(0, "person", [(0.5 + 0.01 * (-1) ** k, 0.5) for k in range(4)])
    slow = _track(1, "person", [(0.2 + 0.03 * k, 0.5) for k in range(4)])  # 0.27 heights/s
    car = _track(2, "car", [(0.2 + 0.1 * k, 0.5) for k in range(4)])
    assert not may_walk([stander, car], times, images)
    assert may_walk([slow], times, images)  # under a walk, over a negative's margin
    assert may_walk([stander], times, panned)  # people over a moving camera
    assert not may_walk([car], times, panned)  # a pan with nobody in it is fine


def test_a_cyclist_seen_by_the_verifier_rides_and_does_not_walk() -> None:
    """On a street shot a cyclist's person box sits over a bicycle box and moves fast: that
    negative shows no one walking (and no one the check cannot follow)."""
    times, images = _still(2)
    frames = {0.0: (0.10, 0.11), 1.0: (0.40, 0.41)}

    def detect(t: float, image: npt.NDArray[np.uint8]) -> list[Detection]:
        person_x, bike_x = frames[t]
        return [Detection(t, "person", 0.9, Box(person_x, 0.3, 0.08, 0.3)),
                Detection(t, "bicycle", 0.8, Box(bike_x - 0.02, 0.45, 0.12, 0.2))]

    assert [look.kind for look in pair_looks(times, images, detect=detect,
                                             min_speed=NEGATIVE_SPEED)] == ["empty"]
