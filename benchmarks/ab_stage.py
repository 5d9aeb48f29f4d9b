"""One store stage on two source trees: CPU seconds as a ratio, and the outputs compared.

For a change meant to save work without changing a result (a kept answer, a shared scan),
the baseline is today's code in the same run: ``--baseline`` is a checkout of it (``git
worktree add /tmp/nf-base HEAD``), the tree this script sits in is the change. Each tree runs
the stage as the CLI and DVC run it (``python -m needleforge.cli STAGE --db COPY``, with
``PYTHONPATH`` at that tree's ``src``) on its own fresh copy of ``--db``, alternating the order
with ``--repeat`` so that load from other work hits both alike. Printed per run: wall
seconds and CPU seconds (user + sys of the stage's process tree, ``RUSAGE_CHILDREN``); then
the change's CPU and wall as ratios of the baseline's, and every table whose rows differ
between the two stores (exit status 1 when any does).

Run (after ``make demo``)::

    PYTHONPATH=. .venv/bin/python benchmarks/ab_stage.py --baseline /tmp/nf-base \\
        --db data/db/represent.duckdb --stage nemo --params params.yaml --out /tmp/nf-ab
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks.demo_cost import cpu_info
from benchmarks.nemo_stage import table_diffs

HERE = Path(__file__).resolve().parents[1]


def run_stage(tree: Path, *, stage: str, db: Path, params: Path | None) -> tuple[float, float]:
    """``needleforge STAGE --db db`` with ``tree``'s code: (wall s, CPU s of the process tree).

    Raises:
        RuntimeError: the stage exited non-zero (its last output lines quoted).
    """
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    command = [sys.executable, "-m", "needleforge.cli", stage, "--db", str(db)]
    command += ["--params", str(params)] if params is not None else []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-12:])
        raise RuntimeError(f"{stage} on {tree} exited {done.returncode}:\n{tail}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--baseline", type=Path, required=True, help="checkout of today's code")
    parser.add_argument("--db", type=Path, required=True, help="store (copied, never written)")
    parser.add_argument("--stage", default="nemo", help="CLI stage taking --db (default nemo)")
    parser.add_argument("--params", type=Path, default=None, help="params.yaml (defaults)")
    parser.add_argument("--out", type=Path, default=Path("/tmp/nf-ab"), help="scratch folder")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args(argv)
    if not (args.baseline / "src" / "needleforge").is_dir():
        parser.error(f"--baseline {args.baseline}: no src/needleforge there (a checkout?)")
    if not args.db.is_file():
        parser.error(f"--db {args.db}: no such store")
    args.out.mkdir(parents=True, exist_ok=True)
    cpuinfo = Path("/proc/cpuinfo")
    machine = cpu_info(cpuinfo.read_text() if cpuinfo.is_file() else "")
    print(f"{machine['model']} ({machine['cores']} logical cores, {machine['level']}), "
          f"load {os.getloadavg()[0]:.1f}")
    trees = {"baseline": args.baseline.resolve(), "change": HERE}
    figures: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
    for k in range(args.repeat):
        for name in list(trees) if k % 2 == 0 else list(trees)[::-1]:
            db = args.out / f"{name}.duckdb"
            shutil.copyfile(args.db, db)
            wall, cpu = run_stage(trees[name], stage=args.stage, db=db, params=args.params)
            figures[name].append((wall, cpu))
            print(f"  {name} run {k}: {wall:.1f} s wall, {cpu:.1f} CPU s, "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)
    (base_wall, base_cpu), (wall, cpu) = ((sum(w for w, _ in runs), sum(c for _, c in runs))
                                          for runs in figures.values())
    print(f"{args.stage}: change / baseline, CPU s {cpu / base_cpu:.2f}x, "
          f"wall {wall / base_wall:.2f}x ({args.repeat} run(s) each)")
    diffs = table_diffs(args.out / "baseline.duckdb", args.out / "change.duckdb")
    print("outputs identical: " + ("yes, every table row for row" if not diffs
                                   else "NO: " + "; ".join(diffs)))
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
