"""The review index page: same content as before it moved to a Jinja2 template, and hostile
question texts, notes, verifier reasons and file names reach the page as text, never as markup.

``golden/index.html`` is the page the f-string renderer wrote (13d845a) for :func:`_rows`; the
test compares what a browser makes of both (:mod:`tests.html_parts`), so only the spelling of
escapes may differ (``&#x27;`` then, ``&#39;`` now).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
from pathlib import Path

from needleforge.records import (
    Authorization,
    MediaInfo,
    Verification,
    Video,
    video_id_for,
)
from needleforge.review.index import IndexRow, index_html
from needleforge.review.items import build_items
from needleforge.review.verdicts import FileVerdict
from tests.html_parts import html_parts, texts
from tests.review.review_cases import make_representation, montages, questions

GOLDEN = Path(__file__).parent / "golden" / "index.html"
HOSTILE = "<script>alert(\"pwned\")</script> & 'kite' </td></tr><b>"
SUMMARY = "3 questions\n</pre><script>alert(1)</script>"


def _video() -> Video:
    """The review cases' video as a record only (no file is read here)."""
    sha = hashlib.sha256(b"colours").hexdigest()
    return Video(
        video_id=video_id_for(sha), sha256=sha, program="colours", source_path="colours.mp4",
        stored_path="colours.mp4", size_bytes=1,
        media=MediaInfo(duration_s=18.0, fps=10.0, width=160, height=90, video_codec="h264",
                        n_frames=180),
        authorization=Authorization(rights_holder="Test", licence_id="CC0-1.0",
                                    scope=("benchmark",), valid_until=dt.date(2099, 1, 1)))


def _rows() -> list[IndexRow]:
    video = _video()
    _, kite = make_representation(video)
    asked = questions(video, kite)
    asked[0] = dataclasses.replace(asked[0], text=HOSTILE, description=f"the {HOSTILE} kite")
    checks = [Verification("q-obj", "embedded", "ver-1", True, f"unique: {HOSTILE}"),
              Verification("q-scene", "embedded", "ver-1", False, "orange also in negative 1")]
    items = build_items(asked, montages(video), objects=[kite], verifications=checks)
    verdicts = {"q-obj": FileVerdict("k-obj", "q-obj", True, True, True, note=HOSTILE),
                "q-scene": FileVerdict("k-scene", "q-scene", False, False, True),
                "q-multi": FileVerdict("k-multi", "q-multi", None, None, None)}
    sheets = {"q-obj": 'q-obj".png', "q-scene": "q-scene.png", "q-multi": "q&multi.png"}
    return [IndexRow(item, sheets[item.question_id], f"key-{item.question_id}",
                     verdicts[item.question_id]) for item in items]


def test_the_page_shows_what_it_showed_before() -> None:
    page = index_html(_rows(), title="needleforge <review>", summary=SUMMARY)
    assert html_parts(page) == html_parts(GOLDEN.read_text(encoding="utf-8"))


def test_hostile_texts_stay_text() -> None:
    page = index_html(_rows(), title="needleforge <review>", summary=SUMMARY)
    assert "<script>" not in page and HOSTILE not in page
    shown = texts(page)
    assert HOSTILE in shown and f"the {HOSTILE} kite" in shown and SUMMARY.split()[0] in shown
    assert f"embedded: unique: {HOSTILE}" in shown
    # a quote in a file name does not end the attribute it sits in
    starts = [p for p in html_parts(page) if p[0] == "start" and p[1] in ("a", "img")]
    assert ("start", "a", 'href=q-obj".png') in starts
    assert ("start", "a", "href=q&multi.png") in starts
    assert [p for p in html_parts(page) if p[:2] == ("start", "script")] == []


def test_an_empty_review_is_a_page_with_an_empty_table() -> None:
    page = index_html([], title="nothing")
    assert html_parts(page).count(("start", "tr")) == 1  # the header row only
    assert "pre" not in {p[1] for p in html_parts(page) if p[0] == "start"}
