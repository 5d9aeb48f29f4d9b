"""On-screen text worth asking about: legibility, text that holds, fuzzy matching, quoting.

The garbage cases are what the PP-OCRv4 reader really gave on the project's clips (a pound
sign at 0.85 on a fish tank, a registered sign at 0.92 on a coin, symbol runs on a Lego
model); the real-frame tests read statement.mp4's lower third and clips with no text."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from needleforge.backends.embedded.ocr import EmbeddedTextReader
from needleforge.errors import StudioError
from needleforge.scenes import onscreen
from needleforge.studio.real_assets import sample_frames


@pytest.mark.parametrize(("line", "confidence"), [
    ("", 1.0),                      # empty
    ("   ", 1.0),
    ("#", 0.85),                    # single characters (fish2)
    ("®", 0.92),                    # coin
    ("+电电电+", 0.69),              # symbol runs (lego)
    ("公", 0.69),
    ("104", 0.62),                  # digits, no word
    ("E:0", 0.36),
    ("ooCC", 0.23),                 # four letters, but at low confidence (clockcat)
    ("JULY14.2015", 0.5),           # real text at low confidence
    ("AB 12 CD", 0.99),             # no run of three letters
    ("电视台STATEMENT电视台新闻", 0.99),  # mostly CJK: not Latin text a viewer reads
])
def test_garbage_and_low_confidence_lines_are_not_legible(line: str, confidence: float) -> None:
    assert not onscreen.legible(line, confidence)


@pytest.mark.parametrize("line", ["JULY14.2015", "PRESIDENTOBAMA STATEMENTONIRAN", "EXIT 12",
                                  "The Secret Word"])
def test_words_read_confidently_are_legible(line: str) -> None:
    assert onscreen.legible(line, 0.93)


def test_text_must_hold_on_two_frames() -> None:
    caption = [("PRESIDENTOBAMA STATEMENTONIRAN", 0.98), ("JULY14.2015", 0.93)]
    merged = [("PRESIDENTOBAMASTATEMENTONIRAN", 1.0), ("JULY14,2015", 0.97)]
    assert onscreen.held_lines([caption, merged]) == ["PRESIDENTOBAMASTATEMENTONIRAN",
                                                      "JULY14,2015"]
    assert onscreen.held_lines([caption]) == []           # one frame: a flash or a misread
    assert onscreen.held_lines([caption, [("★★", 0.84)]]) == []
    assert onscreen.held_lines([[("#", 0.85)], [("#", 0.85)], [("®", 0.92)]]) == []
    assert onscreen.held_lines([[], []]) == []
    with pytest.raises(ValueError, match="min_frames"):
        onscreen.held_lines([caption], min_frames=0)


def test_text_is_matched_without_case_spaces_or_punctuation() -> None:
    assert onscreen.squashed("July 14, 2015") == onscreen.squashed("JULY14.2015")
    assert onscreen.shows("PRESIDENTOBAMASTATEMENTONIRAN", "Iran")
    assert onscreen.shows("JULY 14, 2015", "JULY14")
    assert onscreen.shows("STATEMENTONLRAN", "STATEMENT ON IRAN")   # one misread in 15
    assert not onscreen.shows("STATEMENTONLRAN", "IRAN")           # four letters: exact
    assert not onscreen.shows("JUNE 14, 2015", "JULY")
    assert not onscreen.shows("", "JULY") and not onscreen.shows("JULY", "")
    assert onscreen.same_line("PRESIDENTOBAMA STATEMENTONIRAN", "PRESIDENTOBAMASTATEMENTONIRAN")
    assert not onscreen.same_line("JULY14.2015", "PRESIDENTOBAMASTATEMENTONIRAN")


def test_questions_quote_short_parts_that_read_back() -> None:
    assert onscreen.parts("JULY14.2015") == ["JULY", "JULY 14", "JULY 14 2015"]
    assert onscreen.parts("THE SECRET WORD")[:2] == ["WORD", "SECRET"]
    assert onscreen.parts("PRESIDENTOBAMASTATEMENTONIRAN") == []  # merged words: too long
    assert onscreen.parts("104 2015") == []                      # no word to read
    text = f"When is there a scene where {onscreen.phrase('JULY 14')}?"
    assert onscreen.quotes(text) == ["JULY 14"]
    assert onscreen.without_quotes(text) == "When is there a scene where on-screen text?"
    with pytest.raises(ValueError, match="letters and digits"):
        onscreen.phrase("JULY, 14")
    assert onscreen.text_of("text:JULY14.2015") == "JULY14.2015"
    with pytest.raises(ValueError, match="not on-screen text"):
        onscreen.text_of("person")


def _frames(name: str, *, every: int, most: int) -> list[npt.NDArray[np.uint8]]:
    try:
        return sample_frames(name, every=every, most=most)
    except StudioError as err:
        pytest.skip(f"real clip {name!r} not installed: {err}")


@pytest.fixture(scope="module")
def reader() -> EmbeddedTextReader:
    return EmbeddedTextReader()


def test_a_real_lower_third_holds_and_is_quoted(reader: EmbeddedTextReader) -> None:
    """statement.mp4: the caption 'President Obama statement on Iran, July 14, 2015'
    appears about 2 s in; read on three frames after that, it holds."""
    frames = _frames("statement", every=25, most=5)[2:]
    lines = onscreen.held_lines([reader.read_scored(f) for f in frames])
    assert any(onscreen.shows(line, "JULY 14") for line in lines), lines
    assert any(onscreen.shows(line, "STATEMENT ON IRAN") for line in lines), lines
    assert "JULY" in [p for line in lines for p in onscreen.parts(line)]
    before = onscreen.held_lines([reader.read_scored(f) for f in
                                  _frames("statement", every=25, most=2)])
    assert before == []  # the first second: no caption yet


@pytest.mark.parametrize("name", ["talk", "intro", "coin", "lego", "fish2", "clockcat"])
def test_clips_without_text_hold_none(reader: EmbeddedTextReader, name: str) -> None:
    """The reader's garbage on bookshelves, a coin, a Lego model, a fish tank and a clock
    (single characters, symbol runs, CJK glyphs) never becomes text to ask about."""
    frames = _frames(name, every=25, most=4)
    assert onscreen.held_lines([reader.read_scored(f) for f in frames]) == []


def test_tag_scores_say_whether_text_holds() -> None:
    caption = [("JULY14.2015", 0.93)]
    assert onscreen.read_lines([caption, [], caption]) == [("JULY14.2015", 2)]
    assert [onscreen.holds(onscreen.tag_score(n)) for n in (1, 2, 3)] == [False, True, True]
    with pytest.raises(ValueError, match="frames"):
        onscreen.tag_score(0)
