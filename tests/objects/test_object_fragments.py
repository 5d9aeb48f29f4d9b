"""Fragments of one object merged before counting: one van is one track, not three trucks."""

from __future__ import annotations

import pytest
from object_cases import det, params, timeline

from needleforge.objects.fragments import MergeRules, family_of, merge_fragments
from needleforge.objects.tracker import track_objects
from needleforge.params import ObjectParams

FAMILIES = (("bus", "car", "truck"),)


def _merge(*tracks: tuple, gap_s: float = 3.0, max_dist: float = 0.2, **rules: object
           ) -> list[tuple]:
    options: dict = {"families": FAMILIES, "gap_s": gap_s, "max_dist": max_dist,
                     "min_iou": 0.5, **rules}
    return [m.hits for m in merge_fragments(list(tracks), rules=MergeRules(**options))]


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
        MergeRules(families=FAMILIES, gap_s=-1, max_dist=0.2)
    with pytest.raises(ValueError, match=r"label_iou = 1\.5"):
        MergeRules(label_iou=1.5)
    with pytest.raises(ValueError, match="no hits"):
        merge_fragments([()], rules=MergeRules(families=FAMILIES, gap_s=1, max_dist=0.2))


def test_a_frame_filling_box_is_no_evidence() -> None:
    times = [0.0, 1.0, 2.0]
    huge = [det(t, "surfboard", 0.0, 0.0, w=0.98, h=0.97) for t in times]
    cat = [det(t, "cat", 0.3, 0.3) for t in times]
    tracks = _track(timeline(times, *huge, *cat))
    assert [t.label for t in tracks] == ["cat"]
    kept = _track(timeline(times, *huge, *cat), max_box_area_frac=1.0)
    assert sorted(t.label for t in kept) == ["cat", "surfboard"]


def test_label_families_and_evidence_params_are_checked() -> None:
    from needleforge.params import ParamsError, parse_params

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


GROUPS = (("bird", "teddy bear"), ("cat", "dog"))


def test_two_confusable_labels_on_one_box_are_one_object() -> None:
    """A cockatoo boxed as "teddy bear" and as "bird" on the same frames is one animal."""
    teddy = tuple(det(t, "teddy bear", 0.3, 0.3, score=0.8) for t in (0.0, 1.0, 2.0, 3.0))
    bird = tuple(det(t, "bird", 0.31, 0.3, score=0.7) for t in (1.0, 2.0))
    [merged] = _merge(teddy, bird, confusable=GROUPS)
    assert {d.label for d in merged} == {"teddy bear"}  # 3.2 against 1.4
    rules = MergeRules(families=FAMILIES, confusable=GROUPS, gap_s=3.0, max_dist=0.2)
    [whole] = merge_fragments([teddy, bird], rules=rules)
    assert [(e.label, e.keyframes) for e in whole.labels] == [("teddy bear", 4), ("bird", 2)]
    # Without the confusable group they stay two tracks, as before.
    assert len(_merge(teddy, bird)) == 2


def test_confusable_labels_on_merely_close_boxes_stay_apart() -> None:
    cat = tuple(det(t, "cat", 0.30, 0.3) for t in (0.0, 1.0, 2.0))
    dog = tuple(det(t, "dog", 0.36, 0.3) for t in (0.0, 1.0, 2.0))  # IoU 0.54 < 0.7
    assert len(_merge(cat, dog, confusable=GROUPS)) == 2
    # A person and the bicycle under them share a box but are no confusable pair.
    rider = tuple(det(t, "person", 0.3, 0.3) for t in (0.0, 1.0))
    bike = tuple(det(t, "bicycle", 0.3, 0.31) for t in (0.0, 1.0))
    assert len(_merge(rider, bike, confusable=GROUPS)) == 2


def test_the_label_with_more_evidence_wins() -> None:
    """Evidence is keyframes x score: two sure hits beat three unsure ones."""
    car = tuple(det(t, "car", 0.3, 0.3, score=0.9) for t in (0.0, 1.0))
    truck = tuple(det(t, "truck", 0.3, 0.3, score=0.5) for t in (2.0, 3.0, 4.0))
    [merged] = _merge(car, truck)
    assert {d.label for d in merged} == {"car"}  # 1.8 against 1.5


def test_one_van_parked_in_a_still_shot_is_one_object() -> None:
    """OpenCV's vtest.avi: a parked white van boxed as "car" at 0.1-3.1 s and as "truck" at
    10.1-30.1, 47.1-48.1 and 73.1-79.1 s (people walk in front of it), a blue car beside it all
    along. One van and one car, not "a white truck and two cars" (nor three trucks)."""
    times = [0.1 + k for k in range(80)]
    spans = ((0, 4, "car"), (10, 31, "truck"), (47, 49, "truck"), (73, 80, "truck"))
    van = [det(times[k], label, 0.84, 0.07, w=0.11, h=0.1, score=0.55)
           for first, end, label in spans for k in range(first, end)]
    car = [det(t, "car", 0.95, 0.08, w=0.05, h=0.09, score=0.7) for t in times]
    frames = timeline(times, *van, *car)
    tracks = track_objects(frames, scene_id="v0000000000000001-s0000", scene_start_s=0.0,
                           scene_end_s=80.0, params=ObjectParams())
    assert sorted((t.label, t.start_s, t.end_s, len(t.detections)) for t in tracks) == [
        ("car", 0.1, 79.1, 80), ("truck", 0.1, 79.1, 34)]
    [parked] = [t for t in tracks if t.label == "truck"]
    assert [(e.label, e.keyframes) for e in parked.labels] == [("truck", 30), ("car", 4)]
    # With the still-shot rule off, the gaps of 7-25 s leave the van in four pieces.
    split = track_objects(frames, scene_id="v0000000000000001-s0000", scene_start_s=0.0,
                          scene_end_s=80.0, params=ObjectParams(merge_static_gap_s=0.0))
    assert len(split) == 5


def test_only_still_tracks_at_one_place_are_joined_across_a_long_gap() -> None:
    still = tuple(det(t, "car", 0.4, 0.4) for t in (0.0, 1.0, 2.0))
    again = tuple(det(t, "car", 0.41, 0.4) for t in (8.0, 9.0))
    assert len(_merge(still, again, static_gap_s=10.0)) == 1
    assert len(_merge(still, again, static_gap_s=5.0)) == 2  # gap 6 s > 5 s
    elsewhere = tuple(det(t, "car", 0.7, 0.4) for t in (8.0, 9.0))
    assert len(_merge(still, elsewhere, static_gap_s=10.0)) == 2
    # Cars driving through the same spot one after another are two cars.
    first = tuple(det(t, "car", 0.2 * t, 0.4) for t in (0.0, 1.0, 2.0))
    second = tuple(det(t, "car", 0.2 * (t - 8), 0.4) for t in (8.0, 9.0, 10.0))
    assert len(_merge(first, second, static_gap_s=10.0)) == 2
    # Lone hits do not show an object standing still: one-frame guesses stay apart.
    lone = (det(0.0, "car", 0.4, 0.4),)
    lone_later = (det(8.0, "car", 0.4, 0.4),)
    assert len(_merge(lone, lone_later, static_gap_s=10.0)) == 2
    # Confusable labels at one place in a still shot are one object too; others are not.
    bird = tuple(det(t, "bird", 0.4, 0.4) for t in (0.0, 1.0))
    teddy = tuple(det(t, "teddy bear", 0.4, 0.4) for t in (6.0, 7.0))
    assert len(_merge(bird, teddy, static_gap_s=10.0, confusable=GROUPS)) == 1
    cup = tuple(det(t, "cup", 0.4, 0.4) for t in (6.0, 7.0))
    assert len(_merge(bird, cup, static_gap_s=10.0, confusable=GROUPS)) == 2


def test_confusable_params_are_checked() -> None:
    from needleforge.params import ParamsError, parse_params

    assert parse_params({"objects": {"confusable_labels": [["Cat", "dog"], ["dog", "fox"]]}}) \
        .objects.confusable_labels == (("cat", "dog"), ("dog", "fox"))
    with pytest.raises(ParamsError, match="two different non-empty labels"):
        parse_params({"objects": {"confusable_labels": [["cat", " Cat"]]}})
    for key, value in (("merge_label_iou", 0.0), ("merge_static_iou", 1.5),
                       ("merge_static_gap_s", -1), ("crop_keyframes", 0)):
        with pytest.raises(ParamsError, match=f"objects.{key}"):
            parse_params({"objects": {key: value}})
