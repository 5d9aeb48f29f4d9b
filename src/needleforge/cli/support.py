"""Helpers of the ``needleforge`` command line that are not commands.

Kept apart from :mod:`needleforge.cli.main` so that module stays a list of thin commands: the
refused-rows table (``ingest``, ``status``), the store summary table (``status``), skip and
failure reasons grouped by kind (``nemo``, ``expand``) and the error wrapper every command
shares, wherever it is defined (:mod:`needleforge.cli`, :mod:`needleforge.cli.release`,
:mod:`needleforge.cli.evaluate`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import ParamSpec, TypeVar

from rich.console import Console
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


def print_reason_groups(console: Console, what: str, reasons: list[tuple[str, str]], *,
                        limit: int = 5) -> None:
    """Print ``(where, why)`` pairs grouped by ``where`` and the kind of ``why`` (its ids,
    numbers, quoted text, lists and URLs masked), most common first, each with one example:
    40 skips for one dead server read as one line that says why."""
    varying = re.compile(r"https?://\S*[^\s:]|(?<!\w)'[^']*'|\"[^\"]*\"|\[[^\]]*\]"
                         r"|\{.*\}|(?<!HTTP )\b[\w.-]*\d(?:[\w.:-]*[\w.-])?")
    groups: dict[tuple[str, str], list[str]] = {}
    for where, why in reasons:
        groups.setdefault((where, varying.sub("…", why)), []).append(why)
    ranked = sorted(groups.items(), key=lambda item: -len(item[1]))
    for (where, kind), whys in ranked[:limit]:
        console.print(f"  {what} {len(whys)}× {where}: {kind[:160]}", highlight=False,
                      markup=False, soft_wrap=True)
        if whys[0] != kind:
            console.print(f"    e.g. {whys[0][:240]}", highlight=False, markup=False,
                          soft_wrap=True)
    if len(ranked) > limit:
        rest = sum(len(whys) for _, whys in ranked[limit:])
        console.print(f"  … and {rest} more {what} of {len(ranked) - limit} other kind(s)",
                      highlight=False, soft_wrap=True)


def user_errors(func: Callable[P, R]) -> Callable[P, R]:
    """Turn project errors into one red line on stderr and exit status 2 (no traceback).

    The one error wrapper of every command, those of :mod:`needleforge.cli.main` and those
    defined elsewhere (:mod:`needleforge.cli.release`, :mod:`needleforge.cli.evaluate`): an
    error with causes (a library's exception behind it) is logged whole
    (:mod:`needleforge.runtime.debug_log`) and its line ends with where, so no command loses the
    chain that its one line leaves out.
    """
    import functools

    import typer
    from rich.console import Console

    from needleforge.errors import NeedleforgeError

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except NeedleforgeError as err:
            from needleforge.runtime.debug_log import record

            logged = record(err, command=func.__name__)
            details = f" (details: {logged})" if logged is not None else ""
            Console(stderr=True).print(f"[bold red]error:[/] {err}{details}",
                                       highlight=False, soft_wrap=True)
            raise typer.Exit(code=2) from None

    return wrapper
