"""On-screen text in the negatives' draw: a question quoting "JULY" may not take a scene whose
tables hold the same text, however the reader spaced or punctuated it."""

from __future__ import annotations

import random

from nemo_cases import make_tag, params, tile

from needleforge.nemo import excluded_terms, index_tables, select_negatives
from needleforge.nemo.targets import Target
from needleforge.scenes.onscreen import tag_score


def test_a_negative_showing_the_quoted_text_is_not_drawn() -> None:
    """s0 reads 'JULY14.2015'; s1 the same caption spaced and with a comma (out), s2 'EXIT'
    (may serve), s3 'JUIY 14 2015' (one letter misread,
    read on one keyframe only: out), s4 nothing (may serve), s5 a
    'book' tag, a word the quote does not name (may serve)."""
    s = tile([8.0, 6.0, 6.0, 6.0, 6.0, 6.0])
    tags = [make_tag(s[0], "text:JULY14.2015"), make_tag(s[1], "text:July 14, 2015"),
            make_tag(s[2], "text:EXIT"), make_tag(s[3], "text:JUIY 14 2015", tag_score(1)),
            make_tag(s[4], "wall"), make_tag(s[5], "book")]
    tables = index_tables(s, tags=tags, objects=[])
    target = Target("scene", s[0], None)
    text = ("A scene where on-screen text reads 'JULY 14'.\n"
            "When is there a scene where on-screen text reads 'JULY 14'?")
    excluded = excluded_terms(target, tables, text=text)
    assert {"text:july14.2015", "text:july 14, 2015", "text:juiy 14 2015"} <= excluded
    drawn = select_negatives(target, tables, params=params(), rng=random.Random(0),
                             excluded=excluded)
    assert sorted(n.scene_id for n in drawn) == [s[2].scene_id, s[4].scene_id, s[5].scene_id]
    # A quoted word is text, not a thing the scene shows: a 'book' tag does not clash.
    assert excluded_terms(target, tables, text="on-screen text reads 'BOOK'") == frozenset()
