"""Helpers of the ``needleforge`` command line that are not commands.

Kept apart from :mod:`needleforge.cli` so that module stays a list of thin commands: the
refused-rows table (``ingest``, ``status``), the store summary table (``status``), the
choice of a model adapter by name and the run it makes (``evaluate``) and the error wrapper of
the commands defined in other modules (:mod:`needleforge.cli_release`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import ParamSpec, TypeVar

from rich.table import Table

from needleforge.records import IngestRejection

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
