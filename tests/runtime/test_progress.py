"""The stage progress reporter: a bar on a terminal, a count line at most every ~10 s
elsewhere, one last line; paced by an injected clock (nothing sleeps, nothing is timed)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from needleforge.runtime.progress import Count, StageProgress, Steps


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _plain() -> tuple[Console, io.StringIO]:
    text = io.StringIO()
    return Console(file=text, force_terminal=False, width=200), text


def test_off_a_terminal_a_count_line_at_most_every_interval_and_a_last_one() -> None:
    console, text = _plain()
    clock = Clock()
    with StageProgress("nemo", "targets", console=console, clock=clock,
                       heartbeat=False) as report:
        clock.now += 3
        report(1, 4)
        assert text.getvalue() == ""  # not due yet
        clock.now += 7
        report(2, 4)  # 10 s since the start
        clock.now += 5
        report(3, 4)  # 5 s since the last line
        clock.now += 6
        report.tick()  # the heartbeat: 11 s since the last line, the count unchanged
        clock.now += 1
        report.tick()
        clock.now += 2
        report(4, 4)
    assert text.getvalue().splitlines() == [
        "nemo: 2/4 targets, 10 s",
        "nemo: 3/4 targets, 21 s",
        "nemo: done, 4/4 targets in 24 s",
    ]


def test_on_a_terminal_a_bar_and_only_the_last_line() -> None:
    text = io.StringIO()
    console = Console(file=text, force_terminal=True, width=100)
    clock = Clock()
    with StageProgress("expand", "groups", console=console, clock=clock) as report:
        for done in range(1, 4):
            clock.now += 20
            report(done, 3)
            report.tick()
    out = text.getvalue()
    assert "expand: 1/3 groups," not in out  # no count lines beside the bar
    assert out.rstrip().endswith("expand: done, 3/3 groups in 60 s")


def test_a_stage_that_raises_ends_with_a_stopped_line() -> None:
    console, text = _plain()
    clock = Clock()
    with pytest.raises(RuntimeError), StageProgress("render", "clips", console=console,
                                                     clock=clock, heartbeat=False) as report:
        report(2, 9)
        clock.now += 4
        raise RuntimeError("ffmpeg failed")
    assert text.getvalue().splitlines() == ["render: stopped at 2/9 clips after 4 s"]


def test_an_error_before_anything_counted_leaves_no_line() -> None:
    console, text = _plain()
    with pytest.raises(ValueError), StageProgress("evaluate", "answers", console=console,
                                                   heartbeat=False):
        raise ValueError("unknown model")
    assert text.getvalue() == ""


def test_counts_go_to_out_at_the_same_pace_and_the_total_may_be_unknown() -> None:
    seen: list[Count] = []
    clock = Clock()
    with StageProgress("vnbench", "samples", out=seen.append, clock=clock,
                       every_s=5, heartbeat=False) as report:
        report.tick()
        clock.now += 5
        report.tick()  # nothing counted yet: 0 of an unknown total
        report(1, 8)
        clock.now += 5
        report(2, 8)
    assert [c.line() for c in seen] == ["vnbench: 0/? samples, 5 s",
                                        "vnbench: 2/8 samples, 10 s",
                                        "vnbench: done, 2/8 samples in 10 s"]
    assert [c.percent() for c in seen] == [None, 25.0, 25.0]


def test_the_heartbeat_thread_stops_with_the_stage() -> None:
    console, _ = _plain()
    with StageProgress("nemo", "targets", console=console) as report:
        thread = report._thread
        assert thread is not None and thread.is_alive()
    assert not thread.is_alive()


def test_percent_of_a_finished_stage_that_counted_nothing_is_100() -> None:
    assert Count("validate", "steps", 0, None, 1.0, "done").percent() == 100.0
    assert Count("validate", "steps", 0, 0, 1.0, "done").percent() == 100.0
    assert Count("validate", "steps", 3, 12, 1.0).percent() == 25.0


def test_steps_count_one_at_a_time_or_jump() -> None:
    told: list[tuple[int, int]] = []
    steps = Steps(5, lambda done, total: told.append((done, total)))
    steps()
    steps()
    steps.to(4)
    steps()
    assert told == [(1, 5), (2, 5), (4, 5), (5, 5)]
    quiet = Steps(2, None)
    quiet()
    assert quiet.done == 1
