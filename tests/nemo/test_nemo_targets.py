"""Target selection: the paper's thresholds, their near misses, and determinism."""

from __future__ import annotations

import random

import pytest
from nemo_cases import VID, corpus, make_scene, make_tag, make_track, params, tile

from needleforge.errors import NemoError
from needleforge.nemo import index_tables, object_span, select_targets
from needleforge.records import ObjectTrack, Scene, SceneTag


def _targets(scenes: list[Scene], tags: list[SceneTag], objects: list[ObjectTrack],
             **overrides: object) -> list[tuple[str, str]]:
    tables = index_tables(scenes, tags=tags, objects=objects)
    return [(t.needle_type, t.target_id)
            for t in select_targets(tables, params=params(**overrides))]


def test_known_targets_are_chosen() -> None:
    c = corpus()
    got = _targets(c.scenes, c.tags, c.objects)
    s = [sc.scene_id for sc in c.scenes]
    assert got[:3] == [("object", f"{s[0]}-o000"), ("scene", s[0]), ("scene", s[1])]
    assert ("object", f"{s[4]}-o000") in got
    # s1's cup covers 3 % of the frame; s2 lasts 4.9 s; s6 0.5 s; s7 exactly 5.0 s.
    ids = {target_id for _, target_id in got}
    assert not ids & {f"{s[1]}-o000", s[2], f"{s[2]}-o000", s[6], s[7]}


@pytest.mark.parametrize(("duration", "visible", "area", "chosen"), [
    (5.1, 4.0, 0.05, True),     # every threshold exactly met
    (5.1, 4.0, 0.25, True),
    (4.9, 4.5, 0.10, False),    # scene too short
    (5.0, 4.5, 0.10, False),    # "longer than five seconds" is strict
    (8.0, 3.9, 0.10, False),    # not visible long enough
    (8.0, 6.0, 0.049, False),   # too small
    (8.0, 6.0, 0.251, False),   # too large
])
def test_object_thresholds_and_near_misses(
    duration: float, visible: float, area: float, chosen: bool
) -> None:
    scene = make_scene(0, 10.0, 10.0 + duration)
    track = make_track(scene, 0, "cat", visible=visible, area=area)
    got = _targets([scene], [], [track])
    assert got == ([("object", track.object_id)] if chosen else [])


def test_most_prominent_concrete_object_wins() -> None:
    scene = make_scene(0, 0.0, 9.0)
    sky = make_track(scene, 0, "sky", area=0.24)           # biggest, but abstract
    small = make_track(scene, 1, "cup", area=0.06)
    big = make_track(scene, 2, "Teddy  Bear", area=0.2, visible=8.0)
    assert _targets([scene], [], [sky, small, big]) == [("object", big.object_id)]
    assert _targets([scene], [], [sky], abstract_labels=[]) == [("object", sky.object_id)]


def test_scene_targets_need_enough_tags() -> None:
    scene = make_scene(0, 0.0, 9.0)
    one = [make_tag(scene, "kitchen"), make_tag(scene, "Kitchen ", 0.2)]  # one distinct tag
    assert _targets([scene], one, []) == []
    two = [*one, make_tag(scene, "table")]
    assert _targets([scene], two, []) == [("scene", scene.scene_id)]
    assert _targets([scene], two, [], min_scene_tags=3) == []


def test_cap_is_a_seeded_sample_independent_of_input_order() -> None:
    c = corpus()
    everything = _targets(c.scenes, c.tags, c.objects)
    capped = _targets(c.scenes, c.tags, c.objects, max_targets=4, seed=3)
    assert len(capped) == 4 and set(capped) <= set(everything)
    assert capped == [t for t in everything if t in capped]    # original order kept
    scenes, tags, objects = list(c.scenes), list(c.tags), list(c.objects)
    for part in (scenes, tags, objects):
        random.Random(1).shuffle(part)
    assert _targets(scenes, tags, objects, max_targets=4, seed=3) == capped
    assert _targets(scenes, tags, objects) == everything
    others = {tuple(_targets(c.scenes, c.tags, c.objects, max_targets=4, seed=s))
              for s in range(6)}
    assert len(others) > 1


@pytest.mark.parametrize(("track_start", "track_end", "span"), [
    (12.9, 16.0, (12.4, 16.0)),   # down to the 2 s keyframe after the scene start
    (12.4, 16.0, (12.4, 16.0)),   # already on the grid
    (10.4, 30.0, (10.4, 20.4)),   # end clipped to the scene end
    (13.3999999, 15.0, (13.4, 15.0)),  # float noise below a grid point snaps onto it
])
def test_object_span_snaps_start_down_to_the_whole_second_grid(
    track_start: float, track_end: float, span: tuple[float, float]
) -> None:
    scene = make_scene(0, 10.4, 20.4)
    track = make_track(scene, 0, "cat", start=track_start, end=min(track_end, 20.4))
    start, end = object_span(scene, track)
    assert start == pytest.approx(span[0]) and end == pytest.approx(min(span[1], 20.4))
    assert (start - scene.start_s) == pytest.approx(round(start - scene.start_s))


def test_bad_tables_are_refused_with_the_id() -> None:
    scenes = tile([6.0, 6.0])
    stray = make_tag(make_scene(7, 0.0, 1.0, video_id="vother"), "cat")
    with pytest.raises(NemoError, match="unknown scene 'vother-s0007'"):
        index_tables(scenes, tags=[stray], objects=[])
    with pytest.raises(NemoError, match=f"{VID}-s0000 appears twice"):
        index_tables([*scenes, scenes[0]], tags=[], objects=[])
    tables = index_tables(scenes, tags=[], objects=[], video_ids=["vsomething-else"])
    assert tables.video_ids() == ()
