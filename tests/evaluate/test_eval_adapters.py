"""Adapters and baselines: prompt snapshots, the OpenAI adapter against a real local HTTP
server, the grid sent to single-image HF models, frame sampling, and both CPU baselines."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from needleforge.backends.base import RGBImage
from needleforge.backends.openai.client import TimedFrame
from needleforge.errors import BackendError, EvaluationError, MediaError
from needleforge.evaluate import (
    EmbeddedGroundingBaseline,
    HfVideoLLM,
    OpenAIVideoLLM,
    RandomBaseline,
    VideoLLM,
    parse_spans,
    render_prompt,
    sample_frames,
    sample_times,
    tile_frames,
)
from needleforge.evaluate.baselines import find_label, squash
from tests.backends.openai_stub_server import ChatStubServer, answer
from tests.evaluate.eval_media import make_cat_clip

SNAPSHOTS = Path(__file__).parent / "snapshots"
OPTIONS = ["apple", "river", "candle", "violet"]


@pytest.fixture(scope="module")
def cat_clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The black / cat / black clip of :func:`make_cat_clip` (cat 3–6 s of 8 s)."""
    return make_cat_clip(tmp_path_factory.mktemp("cat") / "cat.mp4")


@pytest.fixture(scope="module")
def cat_frames(cat_clip: Path) -> list[TimedFrame]:
    return sample_frames(cat_clip)


@pytest.fixture(scope="module")
def embedded() -> EmbeddedGroundingBaseline:
    return EmbeddedGroundingBaseline()


@pytest.fixture()
def stub() -> Iterator[ChatStubServer]:
    with ChatStubServer() as server:
        yield server


def _frames(n: int, *, side: int = 32) -> list[TimedFrame]:
    return [(i + 0.5, np.full((side, side * 2, 3), 40 * i % 256, dtype=np.uint8))
            for i in range(n)]


# --- prompts ----------------------------------------------------------------------------------

def test_grounding_prompt_snapshot() -> None:
    expected = (SNAPSHOTS / "prompt_grounding.txt").read_text(encoding="utf-8")
    assert render_prompt("When is the red car seen?", kind="grounding") == expected


def test_choice_prompt_snapshot() -> None:
    expected = (SNAPSHOTS / "prompt_choice.txt").read_text(encoding="utf-8")
    assert render_prompt("What is the secret word?", kind="choice", options=OPTIONS) == expected


@pytest.mark.parametrize(("kind", "options"), [("choice", None), ("choice", ["a", "b"]),
                                               ("grounding", OPTIONS)])
def test_prompt_refuses_mismatched_options(kind: str, options: list[str] | None) -> None:
    with pytest.raises(EvaluationError, match="option"):
        render_prompt("Q?", kind=kind, options=options)  # type: ignore[arg-type]


# --- frames -----------------------------------------------------------------------------------

def test_sample_times_mid_second_and_uniform_thinning() -> None:
    assert sample_times(3.0) == [0.5, 1.5, 2.5]
    assert sample_times(2.2) == pytest.approx([0.5, 1.5, 2.2])  # the last instant is clipped
    thinned = sample_times(100.0, max_frames=5)
    assert thinned == [0.5, 25.5, 50.5, 74.5, 99.5]
    with pytest.raises(MediaError, match="max_frames"):
        sample_times(10.0, max_frames=0)


def test_sample_frames_shows_what_is_on_screen(cat_clip: Path) -> None:
    frames = sample_frames(cat_clip, max_frames=4, max_side=90)
    assert [t for t, _ in frames] == [0.5, 2.5, 5.5, 7.5]
    assert all(img.dtype == np.uint8 and max(img.shape[:2]) <= 90 for _, img in frames)
    assert [img.mean() > 20 for _, img in frames] == [False, False, True, False]


def test_sample_frames_bad_file(tmp_path: Path) -> None:
    (tmp_path / "x.mp4").write_text("not a video")
    with pytest.raises(MediaError, match="cannot open"):
        sample_frames(tmp_path / "x.mp4")


# --- OpenAI adapter ---------------------------------------------------------------------------

def test_openai_video_first_sends_frames_then_prompt(stub: ChatStubServer) -> None:
    model = OpenAIVideoLLM(stub.url, model="tiny-vlm", max_retries=0)
    assert isinstance(model, VideoLLM)
    stub.script(answer("3 - 6"))
    reply = model.answer(_frames(3), "When is the cat seen?", kind="grounding")
    assert reply == "3 - 6"
    (request,) = stub.requests
    assert request.body["model"] == "tiny-vlm"
    assert len(request.images) == 3
    assert request.texts[-1] == render_prompt("When is the cat seen?", kind="grounding")
    assert not any(t.startswith("[") for t in request.texts)


def test_openai_interleaved_puts_times_before_frames(stub: ChatStubServer) -> None:
    model = OpenAIVideoLLM(stub.url, model="tiny-vlm", style="interleaved", max_retries=0)
    reply = model.answer(_frames(2), "What is the secret word?", kind="choice", options=OPTIONS)
    assert reply == render_prompt("What is the secret word?", kind="choice", options=OPTIONS)
    kinds = [kind for kind, _ in stub.requests[0].parts]
    assert kinds == ["text", "text", "image", "text", "image", "text"]
    assert stub.requests[0].texts[1:3] == ["[0.5 s]", "[1.5 s]"]
    assert model.prompt_style == "interleaved" and model.name == "openai_http:tiny-vlm"


def test_openai_bad_style_is_refused() -> None:
    with pytest.raises(BackendError, match="style"):
        OpenAIVideoLLM("http://127.0.0.1:9/v1", model="m", style="sideways")  # type: ignore[arg-type]


# --- HF adapter (single-image models get a grid) ----------------------------------------------

class _FakeTagger:
    """Stands in for HfVlmTagger: records what ``ask`` got (the real one is tested in backends)."""

    name = "hf-tiny"
    version = "abc123"

    def __init__(self) -> None:
        self.calls: list[tuple[tuple[int, ...], str]] = []

    def ask(self, image: RGBImage, *, prompt: str) -> str:
        self.calls.append((image.shape, prompt))
        return "B"


@pytest.mark.slow  # builds and runs a real (1-layer) VLM: seconds alone, a minute on a busy CPU
def test_hf_adapter_runs_a_tiny_random_init_model(tmp_path: Path) -> None:
    from tests.backends.hf_tiny_models import SCRIPTED_ANSWER, build_tiny_idefics3

    folder = build_tiny_idefics3(tmp_path / "tiny-idefics3-scripted", scripted=True)
    model = HfVideoLLM(folder, grid_frames=4, tile_side=32)
    assert isinstance(model, VideoLLM)
    reply = model.answer(_frames(6), "When is the cat seen?", kind="grounding")
    assert reply == SCRIPTED_ANSWER
    assert model.name == "hf:hf-tiny-idefics3-scripted" and model.version


def test_tile_frames_spreads_frames_over_a_grid() -> None:
    grid, times = tile_frames(_frames(9), max_tiles=4, tile_side=20)
    assert grid.shape == (40, 40, 3) and times == [0.5, 3.5, 5.5, 8.5]
    with pytest.raises(BackendError, match="at least one frame"):
        tile_frames([])


def test_hf_adapter_sends_grid_and_tile_times() -> None:
    tagger = _FakeTagger()
    model = HfVideoLLM("unused", tagger=tagger, grid_frames=4, tile_side=16)  # type: ignore[arg-type]
    assert model.answer(_frames(2), "What is it?", kind="choice", options=OPTIONS) == "B"
    ((shape, prompt),) = tagger.calls
    assert shape == (16, 32, 3)  # 2 tiles: one row of two
    assert "grid of 2 frames" in prompt and "0.5 s, 1.5 s" in prompt and "(D) violet" in prompt
    assert model.name == "hf:hf-tiny" and model.version == "abc123"


# --- baselines --------------------------------------------------------------------------------

def test_random_baseline_is_reproducible_and_typical() -> None:
    frames = _frames(60)
    a, b = RandomBaseline(seed=7), RandomBaseline(seed=7)
    questions = [f"When is thing {i} seen?" for i in range(20)]
    answers = [a.answer(frames, q, kind="grounding") for q in questions]
    assert answers == [b.answer(frames, q, kind="grounding") for q in reversed(questions)][::-1]
    assert answers != [RandomBaseline(seed=8).answer(frames, q, kind="grounding")
                       for q in questions]
    for reply in answers:
        ((start, end),) = parse_spans(reply).spans
        assert start >= 0 and end <= 60.0 and 3.0 - 0.1 <= end - start <= 8.0 + 0.1
    letters = {a.answer(frames, q, kind="choice", options=OPTIONS) for q in questions}
    assert letters <= set("ABCD") and len(letters) > 1


def test_find_label_prefers_longest_and_earliest() -> None:
    assert find_label("When is the cell phone on the table seen?") == "cell phone"
    assert find_label("Two dogs chase a cat") == "dog"
    assert find_label("When does the woman wave?") == "person"
    assert find_label("When does the sunset start?") is None


@pytest.mark.parametrize(("question", "label"), [
    ("How many knives lie on the board?", "knife"), ("When do the mice appear?", "mouse"),
    ("Count the buses.", "bus"), ("When are the wine glasses filled?", "wine glass"),
    ("When are the skis waxed?", "skis"), ("Where are the sheep?", "sheep"),
    ("When do the knifes appear?", None),  # a misspelt plural names nothing
])
def test_find_label_reads_english_plurals(question: str, label: str | None) -> None:
    assert find_label(question) == label
    assert squash("The secret word is  RIVER!") == "thesecretwordisriver"


def test_embedded_baseline_finds_the_cat_span(embedded: EmbeddedGroundingBaseline,
                                              cat_frames: list[TimedFrame]) -> None:
    reply = embedded.answer(cat_frames, "When is the cat on the blanket seen?", kind="grounding")
    assert parse_spans(reply).spans == ((3.0, 6.0),)
    assert embedded.answer(cat_frames, "When is the giraffe seen?", kind="grounding") == ""


def test_embedded_baseline_multiple_choice(embedded: EmbeddedGroundingBaseline,
                                           cat_frames: list[TimedFrame]) -> None:
    pick = embedded.answer(cat_frames, "What is it a picture of?", kind="choice",
                           options=["dog", "bus", "cat", "car"])
    assert pick == "C"
    count = embedded.answer(cat_frames, "How many times is the footage interrupted by a "
                            "picture of the cat?", kind="choice", options=["3", "2", "4", "1"])
    assert count == "D"
