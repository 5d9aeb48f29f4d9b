"""Negatives: same video, long enough, and holding nothing the question is about."""

from __future__ import annotations

import random

from nemo_cases import corpus, make_scene, make_tag, make_track, params, tile

from needleforge.nemo import Target, excluded_terms, index_tables, select_negatives


def test_object_negatives_hold_no_tag_or_object_of_the_label() -> None:
    scenes = tile([8.0, 6.0, 6.0, 6.0, 6.0, 0.8, 6.0, 6.0])
    s = scenes
    other_video = make_scene(0, 0.0, 9.0, video_id="vother")
    tags = [make_tag(s[0], "cat"), make_tag(s[1], "cat"), make_tag(s[2], "tabby cat"),
            make_tag(s[3], "category"), make_tag(s[4], "street"), make_tag(s[5], "street"),
            make_tag(s[7], "Cats")]
    objects = [make_track(s[0], 0, "cat"), make_track(s[6], 0, "cat", colour="black")]
    tables = index_tables([*scenes, other_video], tags=tags, objects=objects)
    target = Target("object", s[0], objects[0])
    got = select_negatives(target, tables, params=params(), rng=random.Random(0))
    # s1 tag, s2 "tabby cat", s6 a tracked cat, s7 plural tag: out; s5 is 0.8 s; s3's
    # "category" is not the word "cat"; the other video never counts.
    assert sorted(n.scene_id for n in got) == [s[3].scene_id, s[4].scene_id]


def test_scene_negatives_exclude_what_the_question_names() -> None:
    c = corpus()
    tables = index_tables(c.scenes, tags=c.tags, objects=c.objects)
    target = Target("scene", c.scene(0))
    text = "A scene with a white cat, in a setting tagged sofa and living room."
    assert excluded_terms(target, tables, text=text) == {"cat", "sofa", "living room"}
    # Colour words are attributes, not terms; a tag the question does not name is no
    # reason to refuse a negative.
    assert excluded_terms(target, tables, text="the white cat") == {"cat"}
    assert excluded_terms(target, tables, text="") == frozenset()
    lamp = make_scene(12, c.scenes[-1].end_s, c.scenes[-1].end_s + 6.0)
    tables = index_tables([*c.scenes, lamp], tags=[*c.tags, make_tag(lamp, "lamp")],
                          objects=c.objects)
    got = {n.scene_id for n in select_negatives(
        target, tables, params=params(), rng=random.Random(0),
        excluded=excluded_terms(target, tables, text=text))}
    assert lamp.scene_id in got                      # 4th tag of the target: allowed
    assert c.scene(0).scene_id not in got and c.scene(6).scene_id not in got
    for scene_id in got:
        view = tables.view(tables.scenes_by_id[scene_id])
        assert not view.terms & {"cat", "sofa", "living room"}


def test_negatives_are_all_eligible_in_a_seeded_order() -> None:
    c = corpus()
    tables = index_tables(c.scenes, tags=c.tags, objects=c.objects)
    target = Target("object", c.scene(0), c.objects[0])
    first = select_negatives(target, tables, params=params(), rng=random.Random(5))
    again = select_negatives(target, tables, params=params(), rng=random.Random(5))
    other = select_negatives(target, tables, params=params(), rng=random.Random(6))
    assert first == again and sorted(first, key=str) == sorted(other, key=str)
    assert first != other
    assert len(first) == 10                           # 12 scenes - target - 0.5 s flash
    longer = select_negatives(target, tables, params=params(min_negative_s=7.0),
                              rng=random.Random(5))
    assert all(n.duration_s >= 7.0 - 1e-9 for n in longer) and len(longer) == 6


def test_terms_most_scenes_hold_are_common_in_their_video() -> None:
    scenes = tile([6.0, 6.0, 6.0, 6.0])
    tags = [make_tag(s, "person") for s in scenes[:3]] + [make_tag(scenes[0], "cup")]
    objects = [make_track(scenes[3], 0, "person")]
    tables = index_tables(scenes, tags=tags, objects=objects)
    video = scenes[0].video_id
    assert tables.term_counts[video] == {"person": 4, "cup": 1}
    assert tables.common_terms(video, share=0.5) == {"person"}
    assert tables.common_terms(video, share=1.0) == frozenset()  # never more than all
    assert tables.common_terms("vnone", share=0.5) == frozenset()
    assert tables.vocabulary == {"person", "cup"}
