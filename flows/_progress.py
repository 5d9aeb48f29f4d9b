"""The flows' progress: a stage's counts in the Prefect run, as the CLI shows them in a terminal.

:func:`run_progress` is a :class:`~needleforge.runtime.progress.StageProgress` whose counts go
to the current flow or task run instead of stderr, at the same pace (one every ~10 s, and the last
one): a log line (``nemo: 12/40 …, 95 s``) and a progress artifact keyed
``<stage>-progress`` whose per cent and description follow the count.

Counts may come from worker threads (the evaluate run's video threads) and from the
reporter's heartbeat thread, which carry no Prefect run context: the run's logger and the
context (its API settings) are taken when the reporter is made, in the run, and each count is
sent inside a copy of that context.
"""

from __future__ import annotations

import contextvars
import re
from typing import cast
from uuid import UUID

from prefect.artifacts import create_progress_artifact, update_progress_artifact
from prefect.exceptions import MissingContextError
from prefect.logging import get_run_logger

from needleforge.runtime.progress import Count, StageProgress


class RunCounts:
    """Sends counts to the Prefect run it was made in (module docstring)."""

    def __init__(self, stage: str) -> None:
        self._logger = get_run_logger()
        self._context = contextvars.copy_context()
        self._key = f"{re.sub(r'[^a-z0-9]+', '-', stage.lower()).strip('-')}-progress"
        self._artifact: UUID | None = None

    def __call__(self, count: Count) -> None:
        """Log ``count`` and move the progress artifact to it."""
        self._context.copy().run(self._send, count)

    def _send(self, count: Count) -> None:
        self._logger.info(count.line())
        percent = count.percent()
        if percent is None:
            return
        if self._artifact is None:  # the flows are sync: this is the sync call's UUID
            self._artifact = cast(UUID, create_progress_artifact(
                percent, key=self._key, description=count.line()))
        else:
            update_progress_artifact(self._artifact, percent, description=count.line())


def run_progress(stage: str, unit: str) -> StageProgress:
    """A reporter for ``stage`` counting ``unit`` into the current flow or task run; use it
    as a context manager inside the run, and pass it as the stage's ``on_…`` callback.
    Outside a run (a task's function called as a plain function) it writes to stderr, as
    the CLI does."""
    try:
        counts = RunCounts(stage)
    except MissingContextError:
        return StageProgress(stage, unit)
    return StageProgress(stage, unit, out=counts)
