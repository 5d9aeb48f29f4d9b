"""Prefect flow: answer a release with each model, score the answers, build the leaderboard.

Each model runs as its own task (answers are resumable, so a retried task continues where it
stopped); scoring and the leaderboard read the files the tasks wrote. Everything is written
under ``out`` (default: the release folder): ``predictions/``, ``scores/``, ``leaderboard.*``.
Models see at most ``evaluate.max_frames`` frames a video, read from the params file as
``needleforge evaluate`` reads it (64 by default; the sample ``params.yaml`` sets 16: the
embedded baseline's cost is one detector run per distinct frame, and 16 keeps a demo release
of 174 questions around a minute on 2 cores while scoring far above random,
``benchmarks/evaluate.py``); ``max_frames`` / ``--max-frames`` overrides it.
By default it runs the CPU baselines and the blind ones (``BASELINE_NAMES``), as ``make demo``
does. Run: ``python -m flows.evaluate releases/sample --params params.yaml [--model random
--model embedded] [--out DIR]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from prefect import flow, task

from flows._cli import flow_parser, run_main
from flows._progress import run_progress
from needleforge.evaluate import leaderboard, score_files
from needleforge.evaluate.models import BASELINE_NAMES, answer_release, check_models, model_options
from needleforge.params import resolve_params
from needleforge.stages.evaluate import write_scores


@task(name="answer", retries=1)
def answer_task(release: Path, name: str, options: dict[str, str], max_frames: int,
                out: Path) -> Path:
    with run_progress(f"evaluate {name}", "answers") as report:
        return answer_release(name, options, questions=release / "questions.jsonl",
                              release_dir=release, out=out / "predictions" / f"{name}.jsonl",
                              max_frames=max_frames, on_answer=report)


@task(name="score")
def score_task(release: Path, predictions: Path, out: Path) -> Path:
    path = out / "scores" / f"{predictions.stem}.json"
    write_scores(score_files(release / "questions.jsonl", predictions), path)
    return path


@flow(name="evaluate", log_prints=True)
def evaluate_flow(release: Path, models: tuple[str, ...] = BASELINE_NAMES,
                  max_frames: int | None = None, out: Path | None = None,
                  options: dict[str, str] | None = None,
                  params_path: Path | None = None) -> str:
    """Score ``models`` (any name ``needleforge evaluate`` knows, with its ``options``) on
    ``release`` into ``out``; returns the leaderboard as Markdown. ``max_frames`` None takes
    ``evaluate.max_frames`` of ``params_path`` (built-in defaults when None)."""
    frames = resolve_params(params_path).evaluate.max_frames  # a bad file fails either way
    max_frames = frames if max_frames is None else max_frames
    out = release if out is None else out
    options = options or {}
    check_models(models, options)  # a typo fails the run before any model's minutes
    for name in models:
        own = {k: v for k, v in options.items() if k in model_options(name)}
        score_task(release, answer_task(release, name, own, max_frames, out), out)
    board = leaderboard(out / "scores")
    board.plot(out / "scores" / "leaderboard.png")
    print(board.to_text())
    return board.to_markdown()


def main(argv: Sequence[str] | None = None) -> None:
    parser = flow_parser(__doc__, db=False)
    parser.add_argument("release", type=Path)
    parser.add_argument("--model", action="append", dest="models",
                        help=f"repeatable (default: {' '.join(BASELINE_NAMES)})")
    parser.add_argument("--max-frames", type=int, default=None,
                        help="frames per video (default: evaluate.max_frames of --params)")
    parser.add_argument("--out", type=Path, default=None)
    run_main(parser, lambda a: evaluate_flow(a.release, tuple(a.models or BASELINE_NAMES),
                                             a.max_frames, a.out, params_path=a.params), argv)


if __name__ == "__main__":
    main()
