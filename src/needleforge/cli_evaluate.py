"""The ``evaluate``, ``score`` and ``leaderboard`` commands: models answer a release, the
answers are scored, the scores ranked.

Kept out of :mod:`needleforge.cli` (which registers them) so that module stays a short list
of stage commands. ``evaluate`` and ``score`` take several models (or prediction files) in
one call, so the demo's seven baselines cost one process each, not seven.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from needleforge.cli_support import user_errors
from needleforge.config import PARAMS_HELP, resolve_params
from needleforge.errors import EvaluationError
from needleforge.progress import StageProgress

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
    from needleforge.evaluate.models import answer_models, answer_release, parse_options

    frames = resolve_params(params_path).evaluate.max_frames  # a bad file fails either way
    max_frames = frames if max_frames is None else max_frames
    options = parse_options(option)
    questions = questions or release_dir / "questions.jsonl"
    if out is not None and (len(model) != 1 or out_dir is not None):
        raise EvaluationError("--out names the file of one model; with several --model use "
                              "--out-dir")
    with StageProgress("evaluate", f"answers ({len(model)} model(s))") as report:
        if out is not None:
            written = [answer_release(model[0], options, questions=questions,
                                      release_dir=release_dir, out=out, max_frames=max_frames,
                                      on_answer=report)]
        else:
            written = answer_models(model, options, questions=questions,
                                    release_dir=release_dir,
                                    out_dir=out_dir or release_dir / "predictions",
                                    max_frames=max_frames, on_answer=report)
    for name, path in zip(model, written, strict=True):
        console.print(f"predictions of {name} in {path}", highlight=False)


def _prediction_files(paths: list[Path]) -> list[Path]:
    """Each path, or every ``*.jsonl`` of a folder (sorted); refuses a folder with none."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(path.glob("*.jsonl"))
            if not found:
                raise EvaluationError(f"--predictions {path}: folder holds no *.jsonl file")
            files += found
        else:
            files.append(path)
    stems = [f.stem for f in files]
    twice = sorted({s for s in stems if stems.count(s) > 1})
    if twice:
        raise EvaluationError(f"--predictions: two files would be scored as {twice[0]!r}")
    return files


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
    from needleforge.evaluate import score_files

    files = _prediction_files(predictions)
    if out is not None and (len(files) != 1 or out_dir is not None):
        raise EvaluationError("--out names the scores of one predictions file; with several "
                              "use --out-dir")
    reports = [(f, score_files(questions, f)) for f in files]  # all scored before any write
    for path, report in reports:
        if len(reports) > 1:
            console.print(f"\n{path.stem}", style="bold", highlight=False)
        console.print(report.to_markdown(), markup=False, highlight=False)
        target = out if out is not None else (
            out_dir / f"{path.stem}.json" if out_dir is not None else None)
        if target is not None:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps(report.to_dict(), indent=2, sort_keys=True) + "\n")
            console.print(f"scores written to {target}", highlight=False)


@user_errors
def leaderboard(
    scores: Annotated[Path, typer.Option("--scores", help="Folder of score JSON files "
                                         "(needleforge score --out).", file_okay=False)],
    out: Annotated[Path | None, typer.Option("--out", help="Write leaderboard.md/.html/.png "
                                             "here.", file_okay=False)] = None,
) -> None:
    """Rank the scored models (terminal, Markdown, HTML, and a plot against montage length)."""
    from needleforge.evaluate import leaderboard as build_leaderboard

    board = build_leaderboard(scores)
    console.print(board.to_text(), markup=False, highlight=False)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "leaderboard.md").write_text(board.to_markdown())
        (out / "leaderboard.html").write_text(board.to_html())
        board.plot(out / "leaderboard.png")
        console.print(f"leaderboard written to {out}", highlight=False)
