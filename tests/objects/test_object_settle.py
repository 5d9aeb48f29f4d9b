"""settle_tracks and build_objects with a scripted crop tagger: the tagger's second look."""

from __future__ import annotations

import numpy as np
import pytest
from object_cases import det, params, timeline

from needleforge.objects import build_objects
from needleforge.objects.settle import crop, settle_tracks, spread
from needleforge.objects.tracker import RawTrack, track_objects
from needleforge.params import ObjectParams
from needleforge.records import Box, TagScore

H, W = 90, 160
TIMES = [0.0, 1.0, 2.0, 3.0, 4.0]
IMAGE = np.full((H, W, 3), 128, dtype=np.uint8)


class Tagger:
    """Answers by the crop's mean red value (each test paints its objects), logging calls."""

    def __init__(self, answers: dict[int, list[TagScore]]) -> None:
        self.answers = answers
        self.calls: list[tuple[tuple[int, ...], float]] = []

    def __call__(self, image: np.ndarray, t_s: float) -> list[TagScore]:
        self.calls.append((image.shape, t_s))
        return self.answers.get(int(np.median(image[..., 0])), [])


def _painted(*boxes: tuple[Box, int]) -> np.ndarray:
    image = IMAGE.copy()
    for box, red in boxes:
        image[round(box.y * H):round((box.y + box.h) * H),
              round(box.x * W):round((box.x + box.w) * W), 0] = red
    return image


def _scene(*specs: tuple[str, float, int], times: list[float] = TIMES,
           w: float = 0.3) -> tuple[list[tuple[float, np.ndarray]], list]:
    """Still objects ``(label, x, red)`` seen on every keyframe, painted ``red``."""
    dets = [det(t, label, x, 0.3, w=w, h=w) for t in times for label, x, _ in specs]
    image = _painted(*((Box(x=x, y=0.3, w=w, h=w), red) for _, x, red in specs))
    return [(t, image) for t in times], timeline(times, *dets)


def _build(keyframes: list, frames: list, tagger: Tagger | None, **overrides: object) -> list:
    return build_objects(keyframes, frames, scene_id="v0000000000000001-s0000",
                         scene_start_s=0.0, scene_end_s=5.0, params=params(**overrides),
                         backend="b", model_version="1", crop_tagger=tagger)


def test_a_contradicted_track_is_dropped_and_the_rest_reindexed() -> None:
    keyframes, frames = _scene(("person", 0.05, 10), ("cake", 0.6, 200))
    tagger = Tagger({200: [TagScore("power drill", 0.8)]})
    [person] = _build(keyframes, frames, tagger)
    assert (person.tag, person.index, person.object_id) == ("person", 0,
                                                            "v0000000000000001-s0000-o000")
    # Only the cake was cropped (the tagger cannot judge a person), on 3 spread keyframes.
    assert [t for _, t in tagger.calls] == [0.0, 2.0, 4.0]
    kept = _build(keyframes, frames, tagger, crop_check=False)
    assert sorted(o.tag for o in kept) == ["cake", "person"]
    assert len(tagger.calls) == 3  # crop_check off: not asked again


def test_a_van_is_written_van_and_a_cockatoo_bird() -> None:
    keyframes, frames = _scene(("car", 0.05, 60), ("teddy bear", 0.6, 90))
    tagger = Tagger({60: [TagScore("minivan", 0.6), TagScore("car", 0.7)],
                     90: [TagScore("sulphur-crested cockatoo", 0.5), TagScore("bird", 0.6)]})
    groups = ObjectParams().confusable_labels
    assert [o.tag for o in _build(keyframes, frames, tagger, crop_keyframes=2,
                                  confusable_labels=groups)] == ["bird", "van"]
    assert [o.referring_expression for o in _build(keyframes, frames, tagger,
                                                   confusable_labels=groups)] == [
        "the bird", "the van"]
    # Without "teddy bear" and "bird" confusable, the contradicted word is dropped instead.
    assert [o.tag for o in _build(keyframes, frames, tagger)] == ["van"]


def test_a_track_that_switched_between_car_and_truck_is_a_vehicle() -> None:
    dets = [det(t, "car" if t < 2 else "truck", 0.3, 0.3, w=0.3, h=0.3) for t in TIMES]
    frames = timeline(TIMES, *dets)
    keyframes = [(t, IMAGE) for t in TIMES]
    merged = {"label_families": (("bus", "car", "truck"),), "merge_gap_s": 3.0}
    [vehicle] = _build(keyframes, frames, None, **merged)
    assert vehicle.tag == "vehicle"
    assert {b.t_s for b in vehicle.boxes} == set(TIMES)
    [van] = _build(keyframes, frames, Tagger({128: [TagScore("moving van", 0.7)]}), **merged)
    assert van.tag == "van"


def test_crops_too_small_to_judge_leave_the_word() -> None:
    keyframes, frames = _scene(("cake", 0.4, 200), w=0.05)  # 8x4 pixels
    tagger = Tagger({200: [TagScore("power drill", 0.9)]})
    [cake] = _build(keyframes, frames, tagger)
    assert cake.tag == "cake" and tagger.calls == []


def test_settle_tracks_without_tracks_or_with_bad_settings() -> None:
    assert settle_tracks([], lambda t: IMAGE, tagger=None, crop_keyframes=3) == []
    with pytest.raises(ValueError, match="crop_keyframes = 0"):
        settle_tracks([], lambda t: IMAGE, tagger=None, crop_keyframes=0)
    # A track made by hand (no label evidence recorded) is judged by its own hits.
    hand = RawTrack(label="cake", detections=(det(0.0, "cake", 0.1, 0.1, w=0.5, h=0.5),),
                    visible_s=0.0)
    tagger = Tagger({128: [TagScore("crate", 0.9)]})
    assert settle_tracks([hand], lambda t: IMAGE, tagger=tagger, crop_keyframes=3) == []


def test_crop_and_spread() -> None:
    box = Box(x=0.25, y=0.25, w=0.5, h=0.5)
    assert crop(IMAGE, box, grow=0.0).shape == (46, 80, 3)  # rounded outwards
    assert crop(IMAGE, Box(x=0.9, y=0.9, w=0.1, h=0.1), grow=1.0).shape == (14, 24, 3)
    assert crop(IMAGE, Box(x=0.5, y=0.5, w=0.02, h=0.02)) is None
    assert crop(np.zeros((0, 0, 3), dtype=np.uint8), box) is None  # an empty frame
    with pytest.raises(ValueError, match="not HxWx3"):
        crop(np.zeros((4, 4), dtype=np.uint8), box)
    with pytest.raises(ValueError, match=r"grow = -0\.1"):
        crop(IMAGE, box, grow=-0.1)
    assert spread(2, 3) == [0, 1]
    assert spread(10, 3) == [1, 5, 8]
    assert spread(0, 3) == []


def test_tracks_come_back_in_tracker_order_after_relabelling() -> None:
    times = [0.0, 1.0]
    frames = timeline(times, *(det(t, "car", 0.1, 0.1, w=0.4, h=0.4) for t in times),
                      *(det(t, "bird", 0.6, 0.5, w=0.3, h=0.4) for t in times))
    tracks = track_objects(frames, scene_id="s", scene_start_s=0.0, scene_end_s=2.0,
                           params=params())
    assert [t.label for t in tracks] == ["bird", "car"]
    image = _painted((Box(x=0.1, y=0.1, w=0.4, h=0.4), 40))
    tagger = Tagger({40: [TagScore("moving van", 0.9)]})
    settled = settle_tracks(tracks, lambda t: image, tagger=tagger, crop_keyframes=2)
    assert [t.label for t in settled] == ["bird", "van"]
    assert {d.label for d in settled[1].detections} == {"van"}
