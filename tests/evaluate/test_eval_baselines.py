"""The CPU baselines at release scale: models run once per picture, only for what is asked,
random answers need no decoding, and VNBench multiple-choice records go through end to end."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from needleforge.backends.embedded.detector import EmbeddedDetector
from needleforge.errors import BackendError
from needleforge.evaluate import (
    EmbeddedGroundingBaseline,
    RandomBaseline,
    load_predictions,
    load_questions,
    parse_spans,
    run_model,
    sample_frames,
    score_files,
)
from needleforge.evaluate.records import ChoiceQuestion
from needleforge.records import Detection
from tests.conftest import ffmpeg
from tests.evaluate.eval_media import choice_records, grounding_record, make_cat_clip, write_jsonl


class _CountingDetector:
    """The real SSD detector, counting the frames it is run on."""

    def __init__(self) -> None:
        self._detector = EmbeddedDetector()
        self.name, self.version = self._detector.name, self._detector.version
        self.calls = 0
        self._lock = threading.Lock()

    def detect(self, image: Any, *, t_s: float) -> list[Detection]:
        with self._lock:
            self.calls += 1
        return self._detector.detect(image, t_s=t_s)


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The cat clip twice (the copy re-encoded at another quality: the same pictures, other
    bytes), two grounding questions on the copies and a 4-try VNBench sample on the first."""
    root = tmp_path_factory.mktemp("baselines")
    (root / "videos").mkdir()
    make_cat_clip(root / "videos" / "cat.mp4")
    ffmpeg("-i", str(root / "videos" / "cat.mp4"), "-c:v", "libx264", "-crf", "28",
           "-pix_fmt", "yuv420p", str(root / "videos" / "copy.mp4"))
    write_jsonl(root / "questions.jsonl", [
        grounding_record("g1", video="videos/cat.mp4", spans=[[3.0, 6.0]],
                         question="When is the cat seen?"),
        grounding_record("g2", video="videos/copy.mp4", spans=[[3.0, 6.0]],
                         question="At what point in the video can the cat be seen?"),
        *choice_records("c1", video="videos/cat.mp4", options=["dog", "bus", "cat", "car"],
                        answer=2, task="ret_insert1",
                        question="One second of this video is a still image taken from "
                                 "elsewhere. What is in that image?"),
    ])
    return root


def _embedded() -> tuple[EmbeddedGroundingBaseline, _CountingDetector]:
    detector = _CountingDetector()
    return EmbeddedGroundingBaseline(detector=detector), detector  # type: ignore[arg-type]


@pytest.mark.slow
def test_near_identical_pictures_are_detected_once(release: Path) -> None:
    baseline, detector = _embedded()
    first = sample_frames(release / "videos" / "cat.mp4")
    reply = baseline.answer(first, "When is the cat seen?", kind="grounding")
    assert parse_spans(reply).spans == ((3.0, 6.0),)
    once = detector.calls
    assert 0 < once <= len(first)
    assert baseline.answer(first, "When is the cat seen?", kind="grounding") == reply
    copy = sample_frames(release / "videos" / "copy.mp4")
    assert not all(np.array_equal(a, b) for (_, a), (_, b) in zip(first, copy, strict=True))
    assert baseline.answer(copy, "When can the cat be seen?", kind="grounding") == reply
    assert detector.calls == once  # other bytes, same pictures: no new detection
    fresh, fresh_detector = _embedded()
    fresh.label_memo.max_diff = 0.0  # reuse off: every frame of the copy is detected again
    fresh.answer(first, "When is the cat seen?", kind="grounding")
    fresh.answer(copy, "When is the cat seen?", kind="grounding")
    assert fresh_detector.calls == 2 * len(first)


def test_models_run_only_for_what_is_asked(release: Path) -> None:
    baseline, detector = _embedded()
    frames = sample_frames(release / "videos" / "cat.mp4")
    assert baseline.answer(frames, "When does the sunset start?", kind="grounding") == ""
    assert detector.calls == 0 and baseline._readers_made == 0  # nothing named: no model at all
    baseline.answer(frames, "When is the cat seen?", kind="grounding")
    baseline.answer(frames, "How many times does a picture of a rocket interrupt the footage?",
                    kind="choice", options=["1", "2", "3", "4"])
    assert baseline._readers_made == 0  # objects only: the OCR model was never loaded


def test_random_needs_no_decoding_and_answers_as_with_frames(release: Path,
                                                             tmp_path: Path) -> None:
    out = run_model(release / "questions.jsonl", model=RandomBaseline(seed=5),
                    release_dir=release, out=tmp_path / "random.jsonl", max_frames=4)
    got = {p.key: p.response for p in load_predictions(out)}
    for question in load_questions(release / "questions.jsonl"):
        frames = sample_frames(release / question.video, max_frames=4,
                               duration_s=question.duration_s)
        options = question.options if isinstance(question, ChoiceQuestion) else None
        expected = RandomBaseline(seed=5).answer(
            frames, question.question, kind="grounding" if options is None else "choice",
            options=options)
        assert got[question.key] == expected
    bare = tmp_path / "bare"  # the questions without their videos: nothing is decoded
    bare.mkdir()
    (bare / "questions.jsonl").write_bytes((release / "questions.jsonl").read_bytes())
    again = run_model(bare / "questions.jsonl", model=RandomBaseline(seed=5), release_dir=bare,
                      out=tmp_path / "bare.jsonl", max_frames=4)
    assert {p.key: p.response for p in load_predictions(again)} == got


@pytest.mark.slow
def test_vnbench_choices_go_through_the_embedded_baseline(release: Path,
                                                          tmp_path: Path) -> None:
    baseline, _ = _embedded()
    out = run_model(release / "questions.jsonl", model=baseline, release_dir=release,
                    out=tmp_path / "embedded.jsonl")
    report = score_files(release / "questions.jsonl", out)
    choice = report.choice["all"]["all"]
    assert choice.n_samples == 1 and choice.coverage.missing == 0
    assert choice.circular_accuracy == 1.0  # "cat" is picked in every rotation
    assert report.vnbench is not None and report.vnbench.groups == {"retrieval": 1.0}
    assert report.grounding["all"]["all"].recall[0.7] == 1.0


def test_embedded_bad_settings_are_refused() -> None:
    with pytest.raises(BackendError, match="parallel = 0"):
        EmbeddedGroundingBaseline(parallel=0)
    with pytest.raises(BackendError, match="max_diff = -1"):
        EmbeddedGroundingBaseline(near_duplicate_diff=-1.0)


@pytest.mark.parametrize(("question", "asks"), [
    ("Captions announcing a secret word show up in this video. How many?", True),
    ("What does the text on the sign say?", True),
    ("When is the texture of the rug shown?", False),
    ("Count the inserted still pictures showing the space shuttle.", False),
    ("Which words appear, in order?", True),
    ("Which subtitles name a city?", True),
])
def test_only_text_questions_ask_for_ocr(question: str, asks: bool) -> None:
    from needleforge.evaluate.baselines import _asks_text

    assert _asks_text(question) is asks
