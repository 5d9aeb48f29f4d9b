"""The evaluate stage: models answer a release, the answers are scored, the scores ranked.

Three steps, each a CLI command (``evaluate``, ``score``, ``leaderboard``) that the DVC stage
runs in turn and the evaluate flow runs as tasks: :func:`answer`, :func:`score_predictions`
and :func:`write_leaderboard`. Models see at most ``evaluate.max_frames`` frames a video.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path

from needleforge.errors import EvaluationError
from needleforge.evaluate import Leaderboard, leaderboard, score_files
from needleforge.evaluate.models import answer_models, answer_release
from needleforge.evaluate.report import ScoreReport
from needleforge.params import Params
from needleforge.runtime.progress import OnCount


def answer(models: Sequence[str], options: dict[str, str], *, release_dir: Path,
           params: Params, max_frames: int | None = None, questions: Path | None = None,
           out: Path | None = None, out_dir: Path | None = None,
           on_answer: OnCount | None = None) -> list[Path]:
    """Answer ``questions`` (default: the release's) with each of ``models`` in turn
    (resumable); returns each model's predictions file: ``out`` for one model, else
    ``<out_dir>/<model>.jsonl`` (default ``out_dir``: ``<release>/predictions``).
    ``max_frames`` overrides ``evaluate.max_frames``.

    Raises:
        EvaluationError: ``out`` with several models, an unknown model or a bad option.
    """
    frames = params.evaluate.max_frames if max_frames is None else max_frames
    questions = questions or release_dir / "questions.jsonl"
    if out is not None and (len(models) != 1 or out_dir is not None):
        raise EvaluationError("--out names the file of one model; with several --model use "
                              "--out-dir")
    if out is not None:
        return [answer_release(models[0], options, questions=questions, release_dir=release_dir,
                               out=out, max_frames=frames, on_answer=on_answer)]
    return answer_models(models, options, questions=questions, release_dir=release_dir,
                         out_dir=out_dir or release_dir / "predictions", max_frames=frames,
                         on_answer=on_answer)


@dataclasses.dataclass(frozen=True, slots=True)
class Scored:
    """One predictions file's scores, and where they were written (None: not written)."""

    predictions: Path
    report: ScoreReport
    path: Path | None


def score_predictions(questions: Path, predictions: Sequence[Path], *, out: Path | None = None,
                      out_dir: Path | None = None) -> list[Scored]:
    """Score each predictions file (or every ``*.jsonl`` of a folder) against ``questions``,
    all before any is written: to ``out`` (one file) or ``<out_dir>/<stem>.json``.

    Raises:
        EvaluationError: a folder holds no ``*.jsonl``, two files share a stem, ``out`` with
            several files, or a file cannot be scored.
    """
    files = _prediction_files(predictions)
    if out is not None and (len(files) != 1 or out_dir is not None):
        raise EvaluationError("--out names the scores of one predictions file; with several "
                              "use --out-dir")
    reports = [(f, score_files(questions, f)) for f in files]
    scored = [Scored(f, r, out if out is not None else (
        out_dir / f"{f.stem}.json" if out_dir is not None else None)) for f, r in reports]
    for s in scored:
        if s.path is not None:
            write_scores(s.report, s.path)
    return scored


def write_scores(report: ScoreReport, path: Path) -> None:
    """Write ``report`` as JSON to ``path`` (its folder made as needed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report.to_dict(), indent=2, sort_keys=True) + "\n")


def _prediction_files(paths: Sequence[Path]) -> list[Path]:
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


def write_leaderboard(scores: Path, *, out: Path | None = None) -> Leaderboard:
    """Rank the score files of ``scores``; with ``out``, write ``leaderboard.md``, ``.html``
    and ``.png`` (against montage length) there.

    Raises:
        EvaluationError: a score file cannot be read.
    """
    board = leaderboard(scores)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "leaderboard.md").write_text(board.to_markdown())
        (out / "leaderboard.html").write_text(board.to_html())
        board.plot(out / "leaderboard.png")
    return board
