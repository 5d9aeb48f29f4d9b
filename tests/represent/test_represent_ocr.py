"""On-screen text tags of the represent stage, on real frames: statement.mp4's lower third
becomes ``text:`` tags when read on two of three keyframes; a scene of one keyframe, and
scenes whose frames hold only the reader's garbage (single characters, CJK glyphs on
bookshelves, low confidence), get none."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from needleforge.backends.base import Keyframe
from needleforge.backends.embedded.ocr import EmbeddedTextReader
from needleforge.errors import StudioError
from needleforge.represent import _ocr_tags
from needleforge.scenes.onscreen import RULE_NAME, shows, text_of
from needleforge.studio.real_assets import sample_frames


def _keyframes(name: str, *, every: int, most: int, skip: int = 0) -> list[Keyframe]:
    try:
        images: list[npt.NDArray[np.uint8]] = sample_frames(name, every=every, most=most)
    except StudioError as err:
        pytest.skip(f"real clip {name!r} not installed: {err}")
    return [Keyframe(k * every / 25, image, "s") for k, image in enumerate(images)][skip:]


@pytest.fixture(scope="module")
def reader() -> EmbeddedTextReader:
    return EmbeddedTextReader()


def test_text_read_on_two_keyframes_becomes_tags(reader: EmbeddedTextReader) -> None:
    # Keyframes at 0, 1, 2, 3 and 4 s: the caption is up from 2 s, so the three read
    # (0 s, 2 s, 4 s: spread over five) show it twice.
    tags = _ocr_tags("s", _keyframes("statement", every=25, most=5), reader)
    lines = [text_of(t.tag) for t in tags]
    assert any(shows(line, "JULY 14") for line in lines), lines
    assert all(t.backend == reader.name and RULE_NAME in t.model_version for t in tags)
    once = _ocr_tags("s", _keyframes("statement", every=25, most=3, skip=2), reader)
    assert once == []  # one keyframe: text that may not hold


@pytest.mark.parametrize("name", ["talk", "coin", "fish2"])
def test_garbage_gives_no_text_tags(reader: EmbeddedTextReader, name: str) -> None:
    assert _ocr_tags("s", _keyframes(name, every=25, most=5), reader) == []
