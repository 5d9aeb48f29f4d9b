"""The ``evaluate``, ``score`` and ``leaderboard`` commands: models answer a release, the
answers are scored, the scores ranked.

Kept out of :mod:`needleforge.cli.main` (which registers them) so that module stays a short list
of stage commands. ``evaluate`` and ``score`` take several models (or prediction files) in
one call, so the demo's seven baselines cost one process each, not seven.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from needleforge.cli.support import user_errors
from needleforge.params import PARAMS_HELP, resolve_params
from needleforge.runtime.progress import StageProgress

console = Console()


@user_errors
def evaluate(
    release_dir: Annotated[Path, typer.Option("--release", help="A release folder.",
                                              file_okay=False)],
    model: Annotated[list[str], typer.Option(
        "--model", help="random | embedded | openai_http | hf, or a blind baseline: "
        "position_prior | length_prior | text_only | option_prior | letter_prior. "
        "Repeat for several; they run in turn in this process.")],
    out: Annotated[Path | None, typer.Option("--out", help="Predictions JSONL of the one "
                                             "model.", dir_okay=False)] = None,
    out_dir: Annotated[Path | None, typer.Option(
        "--out-dir", help="Folder for <model>.jsonl (default: <release>/predictions).",
        file_okay=False)] = None,
    max_frames: Annotated[int | None, typer.Option(
        "--max-frames", min=1, help="Frames per video the models see (default: "
        "evaluate.max_frames of --params).")] = None,
    option: Annotated[list[str] | None, typer.Option(
        "--option", help="KEY=VALUE for the models (base_url, model, model_dir, style, seed)")]
    = None,
    questions: Annotated[Path | None, typer.Option(
        "--questions", help="Questions file (default: <release>/questions.jsonl).",
        dir_okay=False)] = None,
    params_path: Annotated[Path | None, typer.Option(
        "--params", help=PARAMS_HELP, dir_okay=False)] = None,
) -> None:
    """Answer a release's questions with one or more models (resumable); then `score`."""
    from needleforge.evaluate.models import parse_options
    from needleforge.stages.evaluate import answer

    params = resolve_params(params_path)  # a bad file fails before any model loads
    with StageProgress("evaluate", f"answers ({len(model)} model(s))") as report:
        written = answer(model, parse_options(option), release_dir=release_dir, params=params,
                         max_frames=max_frames, questions=questions, out=out, out_dir=out_dir,
                         on_answer=report)
    for name, path in zip(model, written, strict=True):
        console.print(f"predictions of {name} in {path}", highlight=False)


@user_errors
def score(
    questions: Annotated[Path, typer.Option("--questions", help="Release questions.jsonl.",
                                            dir_okay=False)],
    predictions: Annotated[list[Path], typer.Option(
        "--predictions", help="Ours or moment_detr's JSONL, or a folder of them. Repeatable.")],
    out: Annotated[Path | None, typer.Option("--out", help="Scores JSON of the one "
                                             "predictions file.", dir_okay=False)] = None,
    out_dir: Annotated[Path | None, typer.Option(
        "--out-dir", help="Folder for <predictions stem>.json.", file_okay=False)] = None,
) -> None:
    """Score predictions against a release (Recall@1x, Average mAP, circular accuracy)."""
    from needleforge.stages.evaluate import score_predictions

    scored = score_predictions(questions, predictions, out=out, out_dir=out_dir)
    for s in scored:
        if len(scored) > 1:
            console.print(f"\n{s.predictions.stem}", style="bold", highlight=False)
        console.print(s.report.to_markdown(), markup=False, highlight=False)
        if s.path is not None:
            console.print(f"scores written to {s.path}", highlight=False)


@user_errors
def leaderboard(
    scores: Annotated[Path, typer.Option("--scores", help="Folder of score JSON files "
                                         "(needleforge score --out).", file_okay=False)],
    out: Annotated[Path | None, typer.Option("--out", help="Write leaderboard.md/.html/.png "
                                             "here.", file_okay=False)] = None,
) -> None:
    """Rank the scored models (terminal, Markdown, HTML, and a plot against montage length)."""
    from needleforge.stages.evaluate import write_leaderboard

    board = write_leaderboard(scores, out=out)
    console.print(board.to_text(), markup=False, highlight=False)
    if out is not None:
        console.print(f"leaderboard written to {out}", highlight=False)
