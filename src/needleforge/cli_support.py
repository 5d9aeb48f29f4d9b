"""Helpers of the ``needleforge`` command line that are not commands.

Kept apart from :mod:`needleforge.cli` so that module stays a list of thin commands: the
refused-rows table (``ingest``, ``status``), the store summary table (``status``) and the
choice of a model adapter by name (``evaluate``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from rich.table import Table

from needleforge.records import IngestRejection

if TYPE_CHECKING:
    from needleforge.evaluate import VideoLLM

MODEL_NAMES = ("random", "embedded", "openai_http", "hf")


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


def video_llm(name: str, options: Mapping[str, str]) -> VideoLLM:
    """The model adapter ``name`` (one of :data:`MODEL_NAMES`) built from ``--option``
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
