"""On-screen text tags of the represent stage, on real frames: statement.mp4's lower third
becomes ``text:`` tags that hold when read on two of three keyframes (a weak tag when read
once); a scene of one keyframe, and scenes whose frames hold only the reader's garbage
(single characters, CJK glyphs on bookshelves, low confidence), get none."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from needleforge.backends import default_registry
from needleforge.backends.base import Keyframe
from needleforge.backends.embedded.ocr import EmbeddedTextReader
from needleforge.errors import StudioError
from needleforge.params import ObjectParams
from needleforge.scenes.onscreen import RULE_NAME, holds, shows, text_of
from needleforge.stages.represent_video import _ocr_tags, load_models
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
    assert all(holds(t.score) for t in tags)
    single = _ocr_tags("s", _keyframes("statement", every=25, most=3, skip=2), reader)
    assert single == []  # one keyframe: text that could never hold is not read
    # The caption on the middle keyframe only: a weak tag, not text to ask about.
    no, _, caption = _keyframes("statement", every=25, most=3)
    once = _ocr_tags("s", [no, caption, Keyframe(3.0, no.image, "s")], reader)
    assert once and not any(holds(t.score) for t in once), once
    # Nothing legible on the middle keyframe: the others are not read.
    assert _ocr_tags("s", [caption, no, Keyframe(3.0, caption.image, "s")], reader) == []


@pytest.mark.parametrize("name", ["talk", "coin", "fish2"])
def test_garbage_gives_no_text_tags(reader: EmbeddedTextReader, name: str) -> None:
    assert _ocr_tags("s", _keyframes(name, every=25, most=5), reader) == []


def test_a_worker_reader_gets_one_thread_and_reads_the_same_lines() -> None:
    """load_models gives the OCR reader the workers' thread count, as it gives the detector
    and tagger (two onnxruntime threads on each of two workers cost twice the CPU), and one
    thread reads every line with the same confidence as two."""
    made: list[dict[str, object]] = []

    @functools.wraps(EmbeddedTextReader)  # the reader's signature: the options it accepts
    def recording(**options: Any) -> EmbeddedTextReader:
        made.append(options)
        return EmbeddedTextReader(**options)

    registry = default_registry()
    registry.register("text_reader", "embedded", recording, replace=True)
    params = ObjectParams(ocr=True, pose_people=False)
    one = load_models(params, registry=registry, threads=1).text_reader
    default = load_models(params, registry=registry).text_reader
    assert made[0]["num_threads"] == 1 and "num_threads" not in made[1]
    assert made[0]["det_limit_side_len"] == made[1]["det_limit_side_len"]
    assert isinstance(one, EmbeddedTextReader) and isinstance(default, EmbeddedTextReader)
    for frame in _keyframes("statement", every=25, most=5):
        assert one.read_scored(frame.image) == default.read_scored(frame.image)
