"""``evaluate``, ``score`` and ``leaderboard``: several models and files in one call, the
files they write, and one clear message (exit 2) for each bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from needleforge.cli import app
from needleforge.evaluate.blind import BLIND_NAMES
from tests.evaluate.eval_helpers import choice_tries, grounding_q, write_jsonl

runner = CliRunner()


def _blind_release(root: Path) -> Path:
    """A release of questions only (no video): what the blind baselines need."""
    rows = [grounding_q(f"g{i}", [[10.0 * (i % 5), 10.0 * (i % 5) + 8]]) for i in range(10)]
    rows += [t for i in range(4) for t in choice_tries(f"s{i}", task="cnt_edit1",
                                                      options=("1", "2", "3", "4"), answer=i)]
    root.mkdir(parents=True)
    write_jsonl(root / "questions.jsonl", rows)
    return root


def test_several_models_and_prediction_files_in_one_call_each(tmp_path: Path) -> None:
    release = _blind_release(tmp_path / "release")
    models = [a for name in BLIND_NAMES for a in ("--model", name)]
    answered = runner.invoke(app, ["evaluate", "--release", str(release), *models,
                                   "--out-dir", str(tmp_path / "preds"),
                                   "--option", "seed=3"])
    assert answered.exit_code == 0, answered.output
    assert sorted(p.stem for p in (tmp_path / "preds").glob("*.jsonl")) == sorted(BLIND_NAMES)
    meta = json.loads((tmp_path / "preds" / "text_only.jsonl.meta.json").read_text())
    assert meta["model_version"].endswith("seed=3")  # the option reached every model
    scored = runner.invoke(app, ["score", "--questions", str(release / "questions.jsonl"),
                                 "--predictions", str(tmp_path / "preds"),
                                 "--out-dir", str(tmp_path / "scores")])
    assert scored.exit_code == 0, scored.output
    assert sorted(p.stem for p in (tmp_path / "scores").glob("*.json")) == sorted(BLIND_NAMES)
    board = runner.invoke(app, ["leaderboard", "--scores", str(tmp_path / "scores")])
    assert board.exit_code == 0 and "letter_prior" in board.output


@pytest.mark.parametrize(("args", "message"), [
    (["--model", "random", "--model", "gpt-9"], "unknown model 'gpt-9'"),
    (["--model", "random", "--model", "random"], "named twice: random"),
    (["--model", "random", "--model", "text_only", "--out", "x.jsonl"],
     "with several --model use --out-dir"),
    (["--model", "random", "--option", "seed"], "options are KEY=VALUE"),
    (["--model", "random", "--option", "seed=two"], "seed='two' is not an integer"),
    (["--model", "random", "--option", "model_dir=/m"], "model_dir: not read by random"),
    (["--model", "openai_http"], "needs --option base_url=URL"),
])
def test_bad_evaluate_calls_run_nothing(tmp_path: Path, args: list[str], message: str) -> None:
    """Every name and option is checked before the first model runs: nothing is written."""
    release = _blind_release(tmp_path / "release")
    result = runner.invoke(app, ["evaluate", "--release", str(release), *args,
                                 "--out-dir", str(tmp_path / "preds")]
                           if "--out" not in args else
                           ["evaluate", "--release", str(release), *args])
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    assert not (tmp_path / "preds").exists() or not any((tmp_path / "preds").iterdir())


def test_bad_score_calls_write_nothing(tmp_path: Path) -> None:
    release = _blind_release(tmp_path / "release")
    questions = str(release / "questions.jsonl")
    empty = tmp_path / "empty"
    empty.mkdir()
    result = runner.invoke(app, ["score", "--questions", questions, "--predictions", str(empty)])
    assert result.exit_code == 2 and "holds no *.jsonl file" in result.output

    preds = tmp_path / "preds"
    answered = runner.invoke(app, ["evaluate", "--release", str(release), "--model",
                                   "letter_prior", "--model", "option_prior", "--out-dir",
                                   str(preds)])
    assert answered.exit_code == 0, answered.output
    both = ["score", "--questions", questions, "--predictions", str(preds)]
    result = runner.invoke(app, [*both, "--out", str(tmp_path / "s.json")])
    assert result.exit_code == 2 and "with several use --out-dir" in result.output

    (preds / "option_prior.jsonl").write_text("{not json\n")
    result = runner.invoke(app, [*both, "--out-dir", str(tmp_path / "scores")])
    assert result.exit_code == 2 and "option_prior.jsonl:1: not valid JSON" in result.output
    assert not (tmp_path / "scores").exists()  # the good file's scores are not half-written


@pytest.mark.slow
def test_evaluate_score_leaderboard_on_video(tmp_path: Path) -> None:
    """Two baselines answer a tiny release in one call; the embedded one finds the cat,
    random does not; the default output folder is <release>/predictions."""
    from tests.evaluate.eval_media import grounding_record, make_cat_clip

    release = tmp_path / "release"
    (release / "videos").mkdir(parents=True)
    make_cat_clip(release / "videos" / "cat.mp4")
    questions = write_jsonl(release / "questions.jsonl", [grounding_record(
        "q1", video="videos/cat.mp4", spans=[[3.0, 6.0]],
        question="When does the cat appear in the video?")])
    result = runner.invoke(app, ["evaluate", "--release", str(release), "--model", "random",
                                 "--model", "embedded"])
    assert result.exit_code == 0, result.output
    for model in ("random", "embedded"):
        meta = json.loads((release / "predictions" / f"{model}.jsonl.meta.json").read_text())
        assert meta["max_frames"] == 64 and meta["fps"] == 1.0 and meta["needleforge_version"]
    scores = tmp_path / "scores"
    scored = runner.invoke(app, ["score", "--questions", str(questions), "--predictions",
                                 str(release / "predictions"), "--out-dir", str(scores)])
    assert scored.exit_code == 0, scored.output
    embedded = json.loads((scores / "embedded.json").read_text())
    assert embedded["grounding"]["all"]["all"]["recall"]["0.5"] == 1.0
    board = runner.invoke(app, ["leaderboard", "--scores", str(scores), "--out",
                                str(tmp_path / "board")])
    assert board.exit_code == 0, board.output
    assert (tmp_path / "board" / "leaderboard.png").is_file()
