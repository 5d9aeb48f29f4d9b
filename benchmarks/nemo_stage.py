"""NeMo stage 2 (``needleforge nemo``) on a represented store: serial against look-ahead.

Runs :func:`needleforge.stages.nemo.generate_store` — the code of the CLI command and of the DVC
stage — twice on fresh copies of the same store: once with ``NEEDLEFORGE_NEMO_WORKERS=0`` (the
serial path: every scan and every verdict's detections computed in planning order on the main
thread, the code before the look-ahead) and once with ``--workers`` threads (the probe's scans
and the looking verifier's detections computed ahead, :mod:`needleforge.nemo.ahead`). With
``--repeat`` the order alternates, so that load from other processes hits both alike.

Figures, per path: wall seconds; CPU seconds of the whole process and of the main thread;
*cores* (CPU / wall, all threads); and the speed-up as the ratio of the serial path's wall to
the look-ahead path's (the headline), the project's convention of a baseline measured in the
same run. On a 2-core machine shared with other work, wall times depend on how many runnable
threads each path has against the load, so a second, load-independent figure is printed: the
wall each path would take on ``--cores`` idle cores by its CPU accounting — the serial path
is bound by its main thread (the detector's own helper thread works alongside it), the
look-ahead path by its total CPU spread over the cores (or its main thread, if longer).

Then the two stores are compared table by table, row for row (sorted, and in stored order):
the look-ahead must change nothing. A difference is printed and the exit status is 1.

Run (after ``make demo``, which leaves the represented store in ``data/db/represent.duckdb``)::

    DO_NOT_TRACK=1 HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/nemo_stage.py \\
        --db data/db/represent.duckdb --params params.yaml --out /tmp/nf-nemo

About 3.5 minutes per path on the demo store on 2 idle cores (more under load).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import resource
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import duckdb

from needleforge.nemo.ahead import DEFAULT_WORKERS
from needleforge.params import load_params
from needleforge.stages.nemo import generate_store


@dataclasses.dataclass(frozen=True)
class Run:
    """One path's figures."""

    label: str
    wall_s: float
    cpu_s: float
    main_cpu_s: float
    questions: int
    passed: int

    def idle_s(self, cores: int) -> float:
        """The wall this run would take on ``cores`` idle cores, by its CPU accounting."""
        return max(self.main_cpu_s, self.cpu_s / cores)


def run_once(label: str, *, source: Path, out: Path, params_path: Path | None,
             workers: int) -> tuple[Run, Path]:
    """``generate_store`` on a fresh copy of ``source`` with ``workers`` look-ahead threads."""
    db = out / f"{label}.duckdb"
    db.unlink(missing_ok=True)
    shutil.copyfile(source, db)
    params = load_params(params_path)
    os.environ["NEEDLEFORGE_NEMO_WORKERS"] = str(workers)
    wall, cpu, main = time.perf_counter(), time.process_time(), time.thread_time()
    outcome = generate_store(db=db, params=params)
    run = Run(label, time.perf_counter() - wall, time.process_time() - cpu,
              time.thread_time() - main, len(outcome.result.questions),
              sum(v.passed for v in outcome.result.verifications))
    return run, db


def table_diffs(first: Path, second: Path) -> list[str]:
    """Every table whose rows differ between the two stores (sorted, then in stored order)."""
    a, b = (duckdb.connect(str(p), read_only=True) for p in (first, second))
    try:
        listing = ("SELECT table_name FROM information_schema.tables "
                   "WHERE table_schema = 'main' ORDER BY 1")
        names = [r[0] for r in a.execute(listing).fetchall()]
        if names != [r[0] for r in b.execute(listing).fetchall()]:
            return ["the stores hold different tables"]
        diffs = []
        for name in names:
            columns = [r[0] for r in a.execute(f'DESCRIBE "{name}"').fetchall()]
            for order in (", ".join(f'"{c}"' for c in columns), "rowid"):
                query = f'SELECT * FROM "{name}" ORDER BY {order}'
                if a.execute(query).fetchall() != b.execute(query).fetchall():
                    diffs.append(f"{name} (ordered by {'value' if order != 'rowid' else 'rowid'})")
        return diffs
    finally:
        a.close()
        b.close()


def report(runs: Sequence[Run], *, cores: int) -> None:
    """The per-path figures and the ratios of the serial path to the look-ahead path."""
    print(f"{'path':<12} {'wall s':>8} {'cpu s':>8} {'main cpu s':>10} {'cores':>6} "
          f"{f'idle {cores}-core s':>14} {'questions':>9} {'passed':>6}")
    for r in runs:
        print(f"{r.label:<12} {r.wall_s:8.1f} {r.cpu_s:8.1f} {r.main_cpu_s:10.1f} "
              f"{r.cpu_s / r.wall_s:6.2f} {r.idle_s(cores):14.1f} {r.questions:9d} "
              f"{r.passed:6d}")
    serial = [r for r in runs if r.label.startswith("serial")]
    ahead = [r for r in runs if r.label.startswith("ahead")]
    wall = sum(r.wall_s for r in serial) / sum(r.wall_s for r in ahead)
    idle = sum(r.idle_s(cores) for r in serial) / sum(r.idle_s(cores) for r in ahead)
    cpu = sum(r.cpu_s for r in ahead) / sum(r.cpu_s for r in serial)
    print(f"speed-up (serial wall / look-ahead wall, same run): {wall:.2f}x")
    print(f"speed-up projected on {cores} idle cores (CPU accounting): {idle:.2f}x")
    print(f"CPU spent by the look-ahead path: {cpu:.2f}x the serial path's")


def main(argv: Sequence[str] | None = None) -> int:
    """Both paths ``--repeat`` times, the figures, the comparison of the stores."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--db", type=Path, default=Path("data/db/represent.duckdb"),
                        help="a represented store (copied, never written)")
    parser.add_argument("--params", type=Path, default=None, help="params.yaml (defaults)")
    parser.add_argument("--out", type=Path, default=Path("/tmp/nf-nemo-stage"),
                        help="scratch folder for the store copies")
    parser.add_argument("--workers", type=int, default=DEFAULT_WORKERS or 2)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--cores", type=int, default=2, help="cores for the idle projection")
    args = parser.parse_args(argv)
    if not args.db.is_file():
        parser.error(f"--db {args.db}: no such store (run make demo, or pass a represented one)")
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"store {args.db}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} "
          f"{os.getloadavg()[1]:.1f} {os.getloadavg()[2]:.1f}", flush=True)
    runs: list[Run] = []
    stores: dict[str, Path] = {}
    for k in range(args.repeat):
        order = [("serial", 0), ("ahead", args.workers)]
        for name, workers in order if k % 2 == 0 else order[::-1]:
            run, db = run_once(f"{name}-{k}", source=args.db, out=args.out,
                               params_path=args.params, workers=workers)
            runs.append(run)
            stores.setdefault(name, db)
            print(f"  {run.label}: {run.wall_s:.1f} s wall, load {os.getloadavg()[0]:.1f}",
                  flush=True)
    report(runs, cores=args.cores)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak:.0f} MiB; load at the end {os.getloadavg()[0]:.1f}")
    diffs = table_diffs(stores["serial"], stores["ahead"])
    print("outputs identical: " + ("yes, every table row for row" if not diffs
                                   else "NO: " + "; ".join(diffs)))
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
