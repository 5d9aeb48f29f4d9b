"""The evaluate flow: baselines answer a release, answers are scored, a leaderboard built."""

from __future__ import annotations

from pathlib import Path

import pytest

from needleforge.errors import EvaluationError


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness")
def test_evaluate_flow_scores_the_baselines(tmp_path: Path) -> None:
    from flows.evaluate import evaluate_flow
    from tests.evaluate.eval_media import grounding_record, make_cat_clip, write_jsonl

    release = tmp_path / "release"
    (release / "videos").mkdir(parents=True)
    make_cat_clip(release / "videos" / "cat.mp4")
    write_jsonl(release / "questions.jsonl", [grounding_record(
        "q1", video="videos/cat.mp4", spans=[[3.0, 6.0]],
        question="When does the cat appear in the video?")])
    before = sorted(p.name for p in release.rglob("*"))
    out = tmp_path / "eval"
    board = evaluate_flow(release, out=out)
    assert "embedded" in board and "random" in board and "position_prior" in board
    assert (out / "scores" / "embedded.json").is_file()
    assert (out / "predictions" / "random.jsonl").is_file()
    assert (out / "scores" / "leaderboard.png").is_file()
    assert sorted(p.name for p in release.rglob("*")) == before  # the release is left alone
    with pytest.raises(EvaluationError, match="unknown model 'gpt-9'"):
        evaluate_flow(release, models=("random", "gpt-9"), out=tmp_path / "typo")
    assert not (tmp_path / "typo").exists()  # refused before the first model ran
