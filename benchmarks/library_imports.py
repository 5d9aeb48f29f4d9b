"""What the generic libraries of issue 34 cost a fresh process, as ratios within this run.

- **inflect** (plurals of tags, ``records/phrases.py``): the first :func:`plural` in a process
  imports inflect without typeguard's instrumentation; baseline: the same first plural with
  inflect imported plainly (its ``@typechecked`` methods re-parse its source, jaraco/inflect#212).
  Goal: ours under 1/5 of the baseline.
- **scipy.stats** (the scorer's and the bias audit's bootstrap, ``evaluate/intervals.py``): the
  first :func:`bootstrap_ci` in a process, against the same call once SciPy is loaded (the
  import is the difference; it is paid once per scoring process).

Each figure is the median over ``--repeat`` child processes. Run:
``PYTHONPATH=src:. python benchmarks/library_imports.py [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

GOAL_RATIO = 0.2

_OURS = """
import time
t = time.perf_counter()
from needleforge.records.phrases import plural
plural("tomato")
print(time.perf_counter() - t)
"""
_PLAIN = """
import time
t = time.perf_counter()
import inflect
inflect.engine().plural_noun("tomato")
print(time.perf_counter() - t)
"""
_BOOTSTRAP = """
import time
import numpy as np
from needleforge.evaluate.intervals import bootstrap_ci
hits = (np.arange(400) % 3 == 0).astype(float)
t = time.perf_counter()
bootstrap_ci((hits, np.ones(400)))
first = time.perf_counter() - t
t = time.perf_counter()
bootstrap_ci((hits, np.ones(400)), seed=1)
print(first, time.perf_counter() - t)
"""


def _child(code: str) -> list[float]:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=300).stdout
    return [float(x) for x in out.split()]


def _median(code: str, repeat: int) -> list[float]:
    runs = [_child(code) for _ in range(repeat)]
    return [statistics.median(column) for column in zip(*runs, strict=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="child processes per figure")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error(f"--repeat = {args.repeat} must be >= 1")
    (ours,), (plain,) = _median(_OURS, args.repeat), _median(_PLAIN, args.repeat)
    ratio = ours / plain
    print(f"first plural: {ours:.3f} s ours, {plain:.3f} s with inflect imported plainly "
          f"(x{ratio:.2f})")
    print(f"goal: first plural under {GOAL_RATIO:g}x a plain inflect import: "
          f"{'MET' if ratio < GOAL_RATIO else 'NOT MET'}")
    first, warm = _median(_BOOTSTRAP, args.repeat)
    print(f"first bootstrap_ci (imports scipy.stats): {first:.3f} s; the next one: "
          f"{warm * 1000:.1f} ms (x{first / warm:.0f})")


if __name__ == "__main__":
    main()
