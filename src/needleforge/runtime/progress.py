"""How far a long stage has got: a bar on a terminal, a count line every ~10 s elsewhere.

A stage body takes an optional callback ``on_…(done, total)`` (:data:`OnCount`) and calls it
as items finish; it never prints. The caller wraps it in a :class:`StageProgress`:

* on a terminal (stderr is a TTY), a rich bar with ``done/total`` and the time elapsed,
  removed when the stage ends;
* elsewhere (a log file, ``dvc repro``, CI), one line on stderr at most every
  :data:`LINE_EVERY_S` seconds, such as ``nemo: 12/40 targets, 95 s``: at each count that
  falls due and, between counts, from a heartbeat thread, so a stage whose items take minutes
  is never silent;
* either way, one last line when the stage ends: ``nemo: done, 40/40 targets in 610 s``, or
  ``stopped at 12/40 …`` when it raised after counting or writing a line (an error raised
  before, such as a bad argument, needs no progress line beside its message).

With ``out`` the counts go there instead of the console (the Prefect flows send them to the
run's log and a progress artifact, ``flows/_progress.py``), at the same pace. The clock is
injectable and the heartbeat optional, so tests check the pace without sleeping.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Literal, TypeAlias

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

#: A stage body's progress callback: ``(done, total)`` items, called as items finish.
OnCount: TypeAlias = Callable[[int, int], None]
#: Seconds between two count lines when not on a terminal.
LINE_EVERY_S = 10.0
#: How often the heartbeat thread looks whether a line is due.
_HEARTBEAT_POLL_S = 1.0

State = Literal["running", "done", "stopped"]


@dataclasses.dataclass(frozen=True, slots=True)
class Count:
    """One reading of a stage's progress: ``done`` of ``total`` ``unit`` (total None: not
    known yet) after ``elapsed_s``; ``state`` says whether the stage is still running."""

    stage: str
    unit: str
    done: int
    total: int | None
    elapsed_s: float
    state: State = "running"

    def line(self) -> str:
        """The count as one line of text (see the module docstring)."""
        of = f"{self.done}/{self.total if self.total is not None else '?'} {self.unit}"
        if self.state == "done":
            return f"{self.stage}: done, {of} in {self.elapsed_s:.0f} s"
        if self.state == "stopped":
            return f"{self.stage}: stopped at {of} after {self.elapsed_s:.0f} s"
        return f"{self.stage}: {of}, {self.elapsed_s:.0f} s"

    def percent(self) -> float | None:
        """Per cent done (0-100), or None while the total is not known; a finished stage
        that counted nothing is 100."""
        if self.total:
            return min(100.0, 100.0 * self.done / self.total)
        return 100.0 if self.state == "done" else None


class StageProgress:
    """Shows one stage's counts (module docstring); use it as a context manager and pass it
    as the stage's ``on_…`` callback. Thread-safe: stages may count from worker threads.

    ``console`` defaults to stderr's (looked up on entering, so a redirected stderr is
    used); ``tty`` overrides its terminal detection; ``out`` replaces the console output;
    ``every_s`` defaults to :data:`LINE_EVERY_S` as it is when the reporter is made.
    """

    def __init__(self, stage: str, unit: str, *, console: Console | None = None,
                 tty: bool | None = None, out: Callable[[Count], None] | None = None,
                 every_s: float | None = None, clock: Callable[[], float] = time.monotonic,
                 heartbeat: bool = True) -> None:
        self.stage, self.unit = stage, unit
        self._console, self._tty, self._out = console, tty, out
        self._every_s = LINE_EVERY_S if every_s is None else every_s
        self._clock, self._heartbeat = clock, heartbeat
        self._lock = threading.Lock()
        self._done: int = 0
        self._total: int | None = None
        self._counted = False
        self._start = self._last_line = 0.0
        self._bar: Progress | None = None
        self._bar_task: TaskID | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> StageProgress:
        self._start = self._last_line = self._clock()
        if self._out is None:
            console = self._console or Console(stderr=True)
            self._console = console
            if (console.is_terminal if self._tty is None else self._tty):
                self._bar = Progress(TextColumn("{task.description}"), BarColumn(),
                                     MofNCompleteColumn(), TimeElapsedColumn(),
                                     console=console, transient=True)
                self._bar_task = self._bar.add_task(f"{self.stage}: {self.unit}", total=None)
                self._bar.start()
        if self._bar is None and self._heartbeat:
            self._thread = threading.Thread(target=self._beat, name=f"{self.stage}-progress",
                                             daemon=True)
            self._thread.start()
        return self

    def __call__(self, done: int, total: int | None) -> None:
        """Record ``done`` of ``total`` items; a line is written when one is due."""
        with self._lock:
            self._done, self._total, self._counted = done, total, True
            if self._bar is not None and self._bar_task is not None:
                self._bar.update(self._bar_task, completed=done, total=total)
                return
            self._line_if_due()

    def tick(self) -> None:
        """Write the current count if a line is due (what the heartbeat thread calls)."""
        with self._lock:
            if self._bar is None:
                self._line_if_due()

    def count(self, state: State = "running") -> Count:
        """The current reading."""
        return Count(self.stage, self.unit, self._done, self._total,
                     self._clock() - self._start, state)

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        with self._lock:
            if self._bar is not None:
                self._bar.stop()
            if exc_type is None or self._counted or self._last_line > self._start:
                self._emit(self.count("done" if exc_type is None else "stopped"))

    def _line_if_due(self) -> None:
        now = self._clock()
        if now - self._last_line >= self._every_s:
            self._last_line = now
            self._emit(self.count())

    def _emit(self, count: Count) -> None:
        if self._out is not None:
            self._out(count)
        elif self._console is not None:
            self._console.print(count.line(), markup=False, highlight=False, soft_wrap=True)

    def _beat(self) -> None:
        while not self._stop.wait(_HEARTBEAT_POLL_S):
            self.tick()


@dataclasses.dataclass(slots=True)
class Steps:
    """A stage body's step counter: each call counts one step of ``total`` and tells
    ``on_count`` (None: counted only), so bodies need no bookkeeping of their own."""

    total: int
    on_count: OnCount | None
    done: int = 0

    def __call__(self) -> None:
        """One more step done."""
        self.to(self.done + 1)

    def to(self, done: int) -> None:
        """``done`` steps done (a jump: a part that ended early counts its rest at once)."""
        self.done = done
        if self.on_count is not None:
            self.on_count(done, self.total)
