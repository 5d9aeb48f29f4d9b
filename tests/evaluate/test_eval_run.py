"""run_model: predictions the scorer reads, resume by skipping answered questions, metadata,
concurrency against a real local chat server, and nothing lost when a model fails."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

import needleforge
from needleforge.backends.openai.client import TimedFrame
from needleforge.errors import BackendError, EvaluationError
from needleforge.evaluate import (
    OpenAIVideoLLM,
    RandomBaseline,
    load_predictions,
    meta_path,
    run_model,
    score_files,
)
from needleforge.evaluate.prompts import AnswerKind
from tests.backends.openai_stub_server import ChatStubServer
from tests.evaluate.eval_media import choice_records, grounding_record, make_bars_clip, write_jsonl


class _Recorder:
    """A VideoLLM that answers fixed text and records what it was asked (thread-safe)."""

    name = "recorder"
    version = "1"
    prompt_style = "none"

    def __init__(self, *, fail_on: str | None = None) -> None:
        self.asked: list[tuple[str, int, AnswerKind]] = []
        self.fail_on = fail_on
        self._lock = threading.Lock()

    def answer(self, frames: Sequence[TimedFrame], question_text: str, *, kind: AnswerKind,
               options: Sequence[str] | None = None) -> str:
        if self.fail_on is not None and self.fail_on in question_text:
            raise BackendError("scripted model failure")
        with self._lock:
            self.asked.append((question_text, len(frames), kind))
        return "A" if kind == "choice" else "1 - 2"


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two 4 s videos, two grounding questions and one 4-try multiple-choice sample."""
    root = tmp_path_factory.mktemp("release")
    (root / "videos").mkdir()
    make_bars_clip(root / "videos" / "a.mp4")
    make_bars_clip(root / "videos" / "b.mp4")
    records = [
        grounding_record("g1", video="videos/a.mp4", spans=[[1.0, 2.0]], duration_s=4.0,
                         question="When is the clock seen?"),
        grounding_record("g2", video="videos/b.mp4", spans=[[2.0, 3.0]], duration_s=4.0,
                         question="When is the dog seen?"),
        *choice_records("c1", video="videos/a.mp4", options=["w", "x", "y", "z"], answer=0,
                        question="Which word?", duration_s=4.0),
    ]
    write_jsonl(root / "questions.jsonl", records)
    return root


def test_run_writes_scorable_predictions_and_meta(release: Path, tmp_path: Path) -> None:
    model = _Recorder()
    out = run_model(release / "questions.jsonl", model=model, release_dir=release,
                    out=tmp_path / "pred.jsonl", max_frames=3)
    predictions = load_predictions(out)
    assert sorted(p.key for p in predictions) == sorted(
        [("g1", None), ("g2", None)] + [("c1", t) for t in range(4)])
    assert {n for _, n, _ in model.asked} == {3}
    report = score_files(release / "questions.jsonl", out)
    assert report.issue_counts()["missing"] == 0
    assert report.grounding["all"]["all"].recall[0.7] == 0.5  # g1 hit exactly, g2 missed
    meta = json.loads(meta_path(out).read_text())
    assert meta["model"] == "recorder" and meta["model_version"] == "1"
    assert meta["prompt_style"] == "none" and meta["fps"] == 1.0 and meta["max_frames"] == 3
    assert meta["needleforge_version"] == needleforge.__version__


def test_resume_skips_answered_and_drops_a_torn_line(release: Path, tmp_path: Path) -> None:
    out = tmp_path / "pred.jsonl"
    run_model(release / "questions.jsonl", model=_Recorder(), release_dir=release, out=out)
    lines = out.read_text().splitlines()
    kept = [json.loads(line) for line in lines[:2]]
    out.write_text("\n".join(lines[:2]) + "\n" + lines[2][:10])  # killed mid-write
    model = _Recorder()
    run_model(release / "questions.jsonl", model=model, release_dir=release, out=out)
    assert len(model.asked) == 4
    predictions = load_predictions(out)  # no duplicate, no torn line
    assert len(predictions) == 6
    assert [json.loads(line) for line in out.read_text().splitlines()[:2]] == kept
    again = _Recorder()
    run_model(release / "questions.jsonl", model=again, release_dir=release, out=out)
    assert again.asked == []


class _SlowOnFirstVideo(_Recorder):
    """Answers video a's questions only after video b's are all in (needs two workers)."""

    def __init__(self) -> None:
        super().__init__()
        self.b_done = threading.Event()

    def answer(self, frames: Sequence[TimedFrame], question_text: str, *, kind: AnswerKind,
               options: Sequence[str] | None = None) -> str:
        if "dog" in question_text:  # the one question of video b
            self.b_done.set()
        else:
            assert self.b_done.wait(timeout=30)
        return super().answer(frames, question_text, kind=kind, options=options)


def test_the_file_ends_in_question_order_whoever_answered_first(release: Path,
                                                                tmp_path: Path) -> None:
    """Video b answered first, a resumed run, a clean run: the same bytes, in the order of
    questions.jsonl."""
    slow = run_model(release / "questions.jsonl", model=_SlowOnFirstVideo(), workers=2,
                     release_dir=release, out=tmp_path / "slow.jsonl")
    clean = run_model(release / "questions.jsonl", model=_Recorder(), workers=1,
                      release_dir=release, out=tmp_path / "clean.jsonl")
    order = [(r["question_id"], r.get("try")) for r in map(json.loads, (
        release / "questions.jsonl").read_text().splitlines())]
    assert [(p.question_id, p.try_index) for p in load_predictions(slow)] == order
    assert slow.read_bytes() == clean.read_bytes()
    resumed = tmp_path / "resumed.jsonl"
    resumed.write_text("\n".join(clean.read_text().splitlines()[3:]) + "\n")
    run_model(release / "questions.jsonl", model=_Recorder(), release_dir=release, out=resumed)
    assert resumed.read_bytes() == clean.read_bytes()
    assert not list(tmp_path.glob("*.sorting"))


def test_resume_with_other_settings_is_refused(release: Path, tmp_path: Path) -> None:
    out = tmp_path / "pred.jsonl"
    run_model(release / "questions.jsonl", model=_Recorder(), release_dir=release, out=out,
              max_frames=2)
    with pytest.raises(EvaluationError, match="other settings"):
        run_model(release / "questions.jsonl", model=_Recorder(), release_dir=release,
                  out=out, max_frames=8)


def test_a_failing_model_keeps_finished_answers(release: Path, tmp_path: Path) -> None:
    out = tmp_path / "pred.jsonl"
    with pytest.raises(BackendError, match="scripted"):
        run_model(release / "questions.jsonl", model=_Recorder(fail_on="dog"),
                  release_dir=release, out=out, workers=1)
    written = load_predictions(out)
    assert "g2" not in {p.question_id for p in written}
    model = _Recorder()
    run_model(release / "questions.jsonl", model=model, release_dir=release, out=out)
    assert [q for q, _, _ in model.asked] == ["When is the dog seen?"]


def test_openai_adapter_end_to_end_concurrently(release: Path, tmp_path: Path) -> None:
    with ChatStubServer() as stub:
        model = OpenAIVideoLLM(stub.url, model="tiny-vlm", style="interleaved", max_retries=0)
        out = run_model(release / "questions.jsonl", model=model, release_dir=release,
                        out=tmp_path / "pred.jsonl", max_frames=2, workers=2)
        assert len(stub.requests) == 6
        assert all(len(r.images) == 2 for r in stub.requests)
    assert len(load_predictions(out)) == 6  # the echoed prompts, parsed or not
    assert json.loads(meta_path(out).read_text())["prompt_style"] == "interleaved"


def test_random_baseline_run_is_reproducible(release: Path, tmp_path: Path) -> None:
    outs = [run_model(release / "questions.jsonl", model=RandomBaseline(seed=3),
                      release_dir=release, out=tmp_path / f"r{i}.jsonl", workers=2)
            for i in range(2)]
    first, second = (sorted(out.read_text().splitlines()) for out in outs)
    assert first == second
