"""Helpers of the ``needleforge`` command line that are not commands.

Kept apart from :mod:`needleforge.cli` so that module stays a list of thin commands: the
refused-rows table (``ingest``, ``status``), the store summary table (``status``), the
choice of a model adapter by name and the run it makes (``evaluate``) and the error wrapper of
the commands defined in other modules (:mod:`needleforge.cli_release`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ParamSpec, TypeVar

from rich.table import Table

from needleforge.records import IngestRejection

if TYPE_CHECKING:
    from needleforge.evaluate import VideoLLM

#: Models that watch the videos; the blind baselines (``evaluate.blind.BLIND_NAMES``) follow.
VIDEO_MODEL_NAMES = ("random", "embedded", "openai_http", "hf")
MODEL_NAMES = (*VIDEO_MODEL_NAMES, "position_prior", "length_prior", "text_only",
               "option_prior", "letter_prior")
P = ParamSpec("P")
R = TypeVar("R")


def rejection_table(rejections: Sequence[IngestRejection]) -> Table:
    """The refused manifest rows: row number, reason word and detail."""
    table = Table(title="refused rows", title_justify="left")
    table.add_column("row", justify="right")
    table.add_column("reason")
    table.add_column("detail", overflow="fold")
    for r in rejections:
        table.add_row(str(r.row), r.reason, r.detail)
    return table


def counts_table(title: str, counts: Mapping[str, int]) -> Table:
    """Row counts per store table."""
    table = Table(title=title, title_justify="left")
    table.add_column("table")
    table.add_column("rows", justify="right")
    for name, n in counts.items():
        table.add_row(name, str(n))
    return table


def answer_release(name: str, options: Mapping[str, str], *, questions: Path,
                   release_dir: Path, out: Path, max_frames: int) -> Path:
    """Answer ``questions`` with model ``name`` into ``out``: a blind baseline from the
    questions alone (no video is opened; ``--option seed=N`` picks its fold split), any other
    model through :func:`~needleforge.evaluate.run_model` over the videos of ``release_dir``.

    Raises:
        EvaluationError: an unknown model, a missing or bad option, a malformed questions file.
    """
    from needleforge.evaluate import run_model
    from needleforge.evaluate.blind import BLIND_NAMES, run_blind

    if name in BLIND_NAMES:
        return run_blind(questions, name=name, out=out, seed=int(options.get("seed", "0")))
    return run_model(questions, model=video_llm(name, options), release_dir=release_dir,
                     out=out, max_frames=max_frames)


def video_llm(name: str, options: Mapping[str, str]) -> VideoLLM:
    """The model adapter ``name`` (one of :data:`VIDEO_MODEL_NAMES`) built from ``--option``
    ``KEY=VALUE`` pairs.

    Raises:
        EvaluationError: an unknown model, a missing or bad option.
    """
    from needleforge.errors import EvaluationError
    from needleforge.evaluate import (
        EmbeddedGroundingBaseline,
        HfVideoLLM,
        OpenAIVideoLLM,
        RandomBaseline,
    )

    if name == "random":
        return RandomBaseline(seed=int(options.get("seed", "0")))
    if name == "embedded":
        return EmbeddedGroundingBaseline()
    if name == "openai_http":
        if "base_url" not in options or "model" not in options:
            raise EvaluationError("--model openai_http needs --option base_url=URL "
                                  "--option model=NAME")
        style = options.get("style", "video_first")
        if style not in ("video_first", "interleaved"):
            raise EvaluationError(f"style = {style!r}; known: video_first, interleaved")
        return OpenAIVideoLLM(options["base_url"], model=options["model"],
                              style="interleaved" if style == "interleaved" else "video_first")
    if name == "hf":
        if "model_dir" not in options:
            raise EvaluationError("--model hf needs --option model_dir=PATH")
        return HfVideoLLM(options["model_dir"])
    raise EvaluationError(f"unknown model {name!r}; known: {', '.join(MODEL_NAMES)}")


def user_errors(func: Callable[P, R]) -> Callable[P, R]:
    """Turn project errors into one red line on stderr and exit status 2 (no traceback);
    for commands defined outside :mod:`needleforge.cli` (which has its own copy)."""
    import functools

    import typer
    from rich.console import Console

    from needleforge.errors import NeedleforgeError

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except NeedleforgeError as err:
            Console(stderr=True).print(f"[bold red]error:[/] {err}", highlight=False,
                                       soft_wrap=True)
            raise typer.Exit(code=2) from None

    return wrapper
