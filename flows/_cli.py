"""The flows' command line: the options they share, and how a run ends on a user's error.

Every flow's ``main`` is :func:`flow_parser`, its own arguments, and :func:`run_main`.
``--db`` defaults to the store the ``needleforge`` CLI uses
(:data:`needleforge.params.DEFAULT_DB`) and must not be a folder; ``--params`` is read when
the command line is parsed, so a missing or invalid file is a usage error naming it before
Prefect starts; ``--runner``/``--workers``/``--address`` override the file's ``runner:``
section (:func:`runner_of`). As the CLI does, an error a user can cause (any
:class:`~needleforge.errors.NeedleforgeError`) ends the command with one line on stderr and
exit status 2, never a Python traceback (Prefect's own log of a failed run still shows one).
This lives in ``flows/`` and not in the package: it exits the process, which library code
must not do.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path

from needleforge.errors import NeedleforgeError
from needleforge.orchestration.runners import add_runner_arguments, runner_from_args
from needleforge.params import DEFAULT_DB, PARAMS_HELP, RunnerParams, resolve_params
from needleforge.runtime.debug_log import record


def store_file(text: str) -> Path:
    """``--db``: a DuckDB file (it need not exist yet), never a folder.

    Raises:
        argparse.ArgumentTypeError: ``text`` names an existing folder.
    """
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{path} is a folder; expected a DuckDB file")
    return path


def params_file(text: str) -> Path:
    """``--params``: a params file that :func:`~needleforge.params.resolve_params` accepts.

    Raises:
        argparse.ArgumentTypeError: the file is a folder, missing or invalid (the message
            names it and, for an invalid one, each bad key).
    """
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{path} is a folder; expected a params file")
    try:
        resolve_params(path)
    except NeedleforgeError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return path


def flow_parser(description: str | None, *, db: bool = True,
                runner: bool = False) -> argparse.ArgumentParser:
    """A parser with the options the flows share: ``--db`` (unless ``db`` is False),
    ``--params`` and, with ``runner``, the task runner overrides."""
    parser = argparse.ArgumentParser(description=description)
    if db:
        parser.add_argument("--db", type=store_file, default=DEFAULT_DB,
                            help="DuckDB store (default: %(default)s)")
    parser.add_argument("--params", type=params_file, default=None, help=PARAMS_HELP)
    if runner:
        add_runner_arguments(parser)
    return parser


def runner_of(args: argparse.Namespace) -> RunnerParams:
    """The task runner of ``--params``'s ``runner:`` section with the command line's overrides.

    Raises:
        ConfigError: an override is invalid
            (see :func:`needleforge.orchestration.runners.runner_params`).
    """
    return runner_from_args(resolve_params(args.params).runner, args)


def run_main(parser: argparse.ArgumentParser, run: Callable[[argparse.Namespace], object],
             argv: Sequence[str] | None = None) -> None:
    """Parse ``argv`` (default: ``sys.argv``) and ``run`` the parsed arguments.

    A usage error exits with status 2 (argparse); so does a project error from ``run``,
    printed as ``<prog>: error: <message>``. As the CLI does, an error with causes is logged
    whole (:mod:`needleforge.runtime.debug_log`) and its line ends with where.
    """
    args = parser.parse_args(argv)
    try:
        run(args)
    except NeedleforgeError as err:
        logged = record(err, command=parser.prog)
        details = f" (details: {logged})" if logged is not None else ""
        parser.exit(2, f"{parser.prog}: error: {err}{details}\n")
