"""Prefect flow: answer a release with each model, score the answers, build the leaderboard.

Each model runs as its own task (answers are resumable, so a retried task continues where it
stopped); scoring and the leaderboard read the files the tasks wrote.
Run: ``python -m flows.evaluate releases/sample --model random --model embedded``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from prefect import flow, task

from needleforge.evaluate import (
    EmbeddedGroundingBaseline,
    RandomBaseline,
    VideoLLM,
    leaderboard,
    run_model,
    score_files,
)


def _model(name: str) -> VideoLLM:
    if name == "random":
        return RandomBaseline(seed=0)
    if name == "embedded":
        return EmbeddedGroundingBaseline()
    raise ValueError(f"model {name!r}: this flow runs the CPU baselines (random, embedded); "
                     "use `needleforge evaluate` for openai_http and hf")


@task(name="answer", retries=1)
def answer_task(release: Path, name: str, max_frames: int) -> Path:
    return run_model(release / "questions.jsonl", model=_model(name), release_dir=release,
                     out=release / "predictions" / f"{name}.jsonl", max_frames=max_frames)


@task(name="score")
def score_task(release: Path, predictions: Path) -> Path:
    report = score_files(release / "questions.jsonl", predictions)
    out = release / "scores" / f"{predictions.stem}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report.to_dict(), indent=2, sort_keys=True) + "\n")
    return out


@flow(name="evaluate", log_prints=True)
def evaluate_flow(release: Path, models: tuple[str, ...] = ("random", "embedded"),
                  max_frames: int = 64) -> str:
    """Score ``models`` on ``release``; returns the leaderboard as Markdown."""
    for name in models:
        score_task(release, answer_task(release, name, max_frames))
    board = leaderboard(release / "scores")
    board.plot(release / "scores" / "leaderboard.png")
    print(board.to_text())
    return board.to_markdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("release", type=Path)
    parser.add_argument("--model", action="append", dest="models")
    parser.add_argument("--max-frames", type=int, default=64)
    args = parser.parse_args()
    evaluate_flow(args.release, tuple(args.models or ("random", "embedded")), args.max_frames)


if __name__ == "__main__":
    main()
