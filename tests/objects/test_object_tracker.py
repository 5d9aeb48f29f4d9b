"""Tracker: one-to-one IoU association, gap bridging, min_hits, visible_s, invariants."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from object_cases import det, params, timeline

from needleforge.objects import RawTrack, track_objects
from needleforge.records import Detection


def _track(frames: list[tuple[float, list[Detection]]], **overrides: object) -> list[RawTrack]:
    end = frames[-1][0] + 1.0 if frames else 10.0
    return track_objects(frames, scene_id="s", scene_start_s=0.0, scene_end_s=end,
                         params=params(**overrides))


@pytest.mark.parametrize("b_y", [0.45, 0.3], ids=["offset-rows", "same-row"])
def test_crossing_objects_keep_their_identities(b_y: float) -> None:
    # A walks right, B walks left; they overlap around t=3.5 (fully when on the same row).
    times = [float(k) for k in range(8)]
    a = [det(t, "person", 0.05 + 0.1 * k, 0.3, h=0.3) for k, t in enumerate(times)]
    b = [det(t, "person", 0.75 - 0.1 * k, b_y, h=0.3) for k, t in enumerate(times)]
    frames = timeline(times, *a, *b)
    rng = random.Random(7)
    for _, dets in frames:
        rng.shuffle(dets)  # association must not depend on detection order
    tracks = _track(frames)
    assert {t.detections for t in tracks} == {tuple(a), tuple(b)}


def test_one_to_one_within_a_frame() -> None:
    first = det(0.0, "cup", 0.4, 0.4)
    near, nearby = det(1.0, "cup", 0.41, 0.4), det(1.0, "cup", 0.45, 0.42)
    tracks = _track(timeline([0.0, 1.0], first, nearby, near))
    assert [t.detections for t in tracks] == [(first, near), (nearby,)]


def test_gap_of_one_keyframe_is_bridged_and_visible_s_excludes_it() -> None:
    times = [0.0, 1.0, 2.0, 3.0, 4.0]
    hits = [det(t, "dog", 0.3, 0.3) for t in (0.0, 1.0, 3.0, 4.0)]  # missed at t=2
    [track] = _track(timeline(times, *hits), max_gap_s=1.0)
    assert track.detections == tuple(hits)
    assert (track.start_s, track.end_s) == (0.0, 4.0)
    assert track.visible_s == pytest.approx(2.0)  # [0,1] and [3,4]; [1,2], [2,3] are gaps


def test_gap_longer_than_max_gap_starts_a_new_track() -> None:
    times = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    hits = [det(t, "dog", 0.3, 0.3) for t in (0.0, 1.0, 4.0, 5.0)]  # missed at t=2 and t=3
    tracks = _track(timeline(times, *hits), max_gap_s=1.0)
    assert [(t.start_s, t.end_s) for t in tracks] == [(0.0, 1.0), (4.0, 5.0)]
    [bridged] = _track(timeline(times, *hits), max_gap_s=2.0)
    assert bridged.visible_s == pytest.approx(2.0)


def test_visible_s_on_an_uneven_timeline() -> None:
    times = [0.0, 0.5, 1.0, 1.5, 2.0, 2.25]
    hits = [det(t, "cat", 0.5, 0.5) for t in (0.0, 0.5, 1.0, 2.0, 2.25)]
    [track] = _track(timeline(times, *hits), max_gap_s=0.5)
    assert track.visible_s == pytest.approx(0.5 + 0.5 + 0.25)
    assert track.end_s - track.start_s == pytest.approx(2.25)


def test_min_hits_drops_short_tracks_and_single_hits_have_zero_visible_s() -> None:
    times = [0.0, 1.0, 2.0]
    long = [det(t, "car", 0.1, 0.1) for t in times]
    blip = det(1.0, "car", 0.7, 0.7)
    assert [t.detections for t in _track(timeline(times, *long, blip), min_hits=2)] == [
        tuple(long)]
    tracks = _track(timeline(times, *long, blip), min_hits=1)
    assert [t.visible_s for t in tracks] == [2.0, 0.0]


def test_labels_never_mix_and_low_scores_are_ignored() -> None:
    times = [0.0, 1.0]
    cat = [det(t, "cat", 0.2, 0.2) for t in times]
    dog = [det(t, "dog", 0.2, 0.2) for t in times]
    faint = det(1.0, "bird", 0.6, 0.6, score=0.2)
    tracks = _track(timeline(times, *cat, *dog, faint), min_detection_score=0.5)
    assert [(t.label, t.detections) for t in tracks] == [("cat", tuple(cat)),
                                                         ("dog", tuple(dog))]


def test_centroid_fallback_follows_a_shrinking_box() -> None:
    big = det(0.0, "ball", 0.3, 0.3, w=0.4, h=0.4)
    small = det(1.0, "ball", 0.45, 0.45, w=0.1, h=0.1)  # same centre, IoU 0.0625
    assert len(_track(timeline([0.0, 1.0], big, small))) == 1
    assert len(_track(timeline([0.0, 1.0], big, small), max_centroid_dist=0.0,
                      iou_threshold=0.5)) == 2


def test_tracks_sorted_by_start_then_label_then_place() -> None:
    times = [0.0, 1.0]
    dets = [det(1.0, "apple", 0.0, 0.0), det(0.0, "zebra", 0.5, 0.5),
            det(0.0, "bear", 0.6, 0.1), det(0.0, "bear", 0.1, 0.6)]
    tracks = _track(timeline(times, *dets))
    assert [(t.label, t.detections[0].box.x) for t in tracks] == [
        ("bear", 0.6), ("bear", 0.1), ("zebra", 0.5), ("apple", 0.0)]


@pytest.mark.parametrize(
    ("frames", "start", "end", "message"),
    [
        ([(1.0, []), (1.0, [])], 0.0, 5.0, "keyframe times must increase"),
        ([(6.0, [])], 0.0, 5.0, "outside"),
        ([(1.0, [det(2.0, "cat", 0.1, 0.1)])], 0.0, 5.0, "sits on keyframe t_s = 1.0"),
        ([], 3.0, 3.0, "scene_end_s = 3.0 must be >"),
        ([], -1.0, 3.0, "scene_start_s = -1.0"),
    ],
)
def test_bad_input_is_named(frames: list[tuple[float, list[Detection]]], start: float,
                            end: float, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        track_objects(frames, scene_id="s", scene_start_s=start, scene_end_s=end,
                      params=params())


def test_raw_track_checks_itself() -> None:
    with pytest.raises(ValueError, match="mixes labels"):
        RawTrack(label="cat", detections=(det(0.0, "dog", 0.1, 0.1),), visible_s=0.0)
    with pytest.raises(ValueError, match=re.escape("visible_s = 1.0 outside")):
        RawTrack(label="cat", detections=(det(0.0, "cat", 0.1, 0.1),), visible_s=1.0)


_box = st.tuples(st.floats(0.0, 0.8), st.floats(0.0, 0.8), st.floats(0.05, 0.2),
                 st.floats(0.05, 0.2))
_detection_specs = st.lists(st.tuples(st.sampled_from(["cat", "dog"]), _box,
                                      st.floats(0.0, 1.0)), max_size=4)


@settings(max_examples=150, deadline=None)
@given(
    steps=st.lists(st.sampled_from([0.25, 0.5, 1.0, 2.0]), min_size=1, max_size=10),
    specs=st.lists(_detection_specs, min_size=10, max_size=10),
    iou=st.floats(0.05, 1.0), dist=st.floats(0.0, 0.5), gap=st.floats(0.0, 3.0),
    min_hits=st.integers(1, 3), min_score=st.floats(0.0, 1.0),
)
def test_tracking_invariants(steps: list[float], specs: list[list[tuple[str, tuple[float, ...],
                             float]]], iou: float, dist: float, gap: float, min_hits: int,
                             min_score: float) -> None:
    times = [sum(steps[:k]) for k in range(len(steps))]
    frames = [(t, [det(t, label, x, y, w=w, h=h, score=score)
                   for label, (x, y, w, h), score in spec])
              for t, spec in zip(times, specs, strict=False)]
    tracks = track_objects(
        frames, scene_id="s", scene_start_s=0.0, scene_end_s=times[-1] + 1.0,
        params=params(iou_threshold=iou, max_centroid_dist=dist, max_gap_s=gap,
                      min_hits=min_hits, min_detection_score=min_score))
    used = [id(d) for t in tracks for d in t.detections]
    assert len(used) == len(set(used))  # no detection in two tracks
    inputs = {id(d) for _, dets in frames for d in dets if d.score >= min_score}
    assert set(used) <= inputs
    for track in tracks:
        assert len(track.detections) >= min_hits
        assert all(track.start_s <= b.t_s <= track.end_s for b in track.boxes)
        assert 0.0 <= track.visible_s <= track.end_s - track.start_s + 1e-9
    keys = [(t.start_s, t.label, t.boxes[0].box.y, t.boxes[0].box.x) for t in tracks]
    assert keys == sorted(keys)
