"""Fragments of one object merged before counting: one van is one track, not three trucks."""

from __future__ import annotations

import pytest
from object_cases import det, params, timeline

from needleforge.objects.fragments import family_of, merge_fragments
from needleforge.objects.tracker import track_objects

FAMILIES = (("bus", "car", "truck"),)


def _merge(*tracks: tuple, gap_s: float = 3.0, max_dist: float = 0.2) -> list[tuple]:
    return merge_fragments(list(tracks), families=FAMILIES, gap_s=gap_s, max_dist=max_dist,
                           min_iou=0.5)


def _track(frames, **overrides):  # type: ignore[no-untyped-def]
    options = {"merge_gap_s": 3.0, "label_families": FAMILIES, **overrides}
    return track_objects(frames, scene_id="v0000000000000001-s0000", scene_start_s=0.0,
                         scene_end_s=10.0, params=params(**options))


def test_a_van_split_by_missed_frames_and_labels_is_one_track() -> None:
    """Car at 0-1 s, missed at 2-3 s, truck at 4-6 s, moving right: one object, 'truck'."""
    times = [float(t) for t in range(8)]
    car = [det(t, "car", 0.1 + 0.05 * t, 0.4) for t in (0.0, 1.0)]
    truck = [det(t, "truck", 0.1 + 0.05 * t, 0.4) for t in (4.0, 5.0, 6.0)]
    tracks = _track(timeline(times, *car, *truck))
    assert [(t.label, len(t.detections)) for t in tracks] == [("truck", 5)]
    assert {d.label for d in tracks[0].detections} == {"truck"}
    unmerged = _track(timeline(times, *car, *truck), merge_gap_s=0.0, label_families=())
    assert [t.label for t in unmerged] == ["car", "truck"]


def test_one_box_under_two_labels_on_the_same_frames_is_one_object() -> None:
    car = tuple(det(t, "car", 0.3, 0.3, score=0.7) for t in (0.0, 1.0, 2.0))
    truck = tuple(det(t, "truck", 0.31, 0.3, score=0.6) for t in (0.0, 1.0, 2.0))
    [merged] = _merge(car, truck)
    assert [d.label for d in merged] == ["car"] * 3
    assert [d.score for d in merged] == [0.7] * 3  # the better hit of each keyframe stays


def test_labels_that_alternate_frame_to_frame_are_one_object() -> None:
    car = tuple(det(t, "car", 0.3, 0.3) for t in (0.0, 2.0, 4.0))
    truck = tuple(det(t, "truck", 0.32, 0.3) for t in (1.0, 3.0))
    [merged] = _merge(car, truck)
    assert [d.t_s for d in merged] == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert {d.label for d in merged} == {"car"}  # 3 hits against 2


def test_separate_objects_stay_apart() -> None:
    left = tuple(det(t, "car", 0.05, 0.4) for t in (0.0, 1.0, 2.0))
    right = tuple(det(t, "truck", 0.7, 0.4) for t in (0.0, 1.0, 2.0))
    assert len(_merge(left, right)) == 2  # overlapping in time, far apart
    later_far = tuple(det(t, "car", 0.7, 0.1) for t in (3.0, 4.0))
    assert len(_merge(left, later_far)) == 2  # follows in time, not in place
    too_late = tuple(det(t, "car", 0.05, 0.4) for t in (6.0, 7.0))
    assert len(_merge(left, too_late)) == 2  # a gap of 4 s > 3 s
    dog = tuple(det(t, "dog", 0.05, 0.4) for t in (3.0, 4.0))
    assert len(_merge(left, dog)) == 2  # not one family
    # Two cups of one label at one time are two cups, however close: the tracker kept them
    # apart, and non-maximum suppression left both boxes.
    cup_a = tuple(det(t, "cup", 0.4, 0.4) for t in (0.0, 1.0))
    cup_b = tuple(det(t, "cup", 0.45, 0.42) for t in (0.0, 1.0))
    assert len(_merge(cup_a, cup_b)) == 2


def test_family_keys_and_bad_settings() -> None:
    assert family_of("Truck", FAMILIES) == family_of("car", FAMILIES) == "bus|car|truck"
    assert family_of("dog", FAMILIES) == "dog"
    with pytest.raises(ValueError, match="gap_s = -1"):
        merge_fragments([], families=FAMILIES, gap_s=-1, max_dist=0.2, min_iou=0.5)
    with pytest.raises(ValueError, match="no hits"):
        merge_fragments([()], families=FAMILIES, gap_s=1, max_dist=0.2, min_iou=0.5)


def test_a_frame_filling_box_is_no_evidence() -> None:
    times = [0.0, 1.0, 2.0]
    huge = [det(t, "surfboard", 0.0, 0.0, w=0.98, h=0.97) for t in times]
    cat = [det(t, "cat", 0.3, 0.3) for t in times]
    tracks = _track(timeline(times, *huge, *cat))
    assert [t.label for t in tracks] == ["cat"]
    kept = _track(timeline(times, *huge, *cat), max_box_area_frac=1.0)
    assert sorted(t.label for t in kept) == ["cat", "surfboard"]


def test_label_families_and_evidence_params_are_checked() -> None:
    from needleforge.config import ParamsError, parse_params

    assert parse_params({"objects": {"label_families": [["Car", " truck "]]}}).objects \
        .label_families == (("car", "truck"),)
    with pytest.raises(ParamsError, match="at least two non-empty labels"):
        parse_params({"objects": {"label_families": [["car"]]}})
    with pytest.raises(ParamsError, match="'car' is in label_families\\[0\\] and "
                                          "label_families\\[1\\]"):
        parse_params({"objects": {"label_families": [["car", "truck"], ["bus", "car"]]}})
    for key, value in (("max_box_area_frac", 0.0), ("min_label_keyframes", 0),
                       ("min_tag_keyframes", 0), ("merge_iou", 1.5), ("merge_gap_s", -1)):
        with pytest.raises(ParamsError, match=f"objects.{key}"):
            parse_params({"objects": {key: value}})
