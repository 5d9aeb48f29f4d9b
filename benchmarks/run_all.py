"""Every benchmark in one go (``make bench``): sized to finish in under 15 minutes on 2 cores.

Each benchmark runs as its own child process (so one's peak memory is not another's, and a
crash is reported without stopping the rest), its output shown as it comes and kept in
``OUT/bench.log``. The suite prints the machine first (cores, CPU model, RAM, load), then each
benchmark's own figures — all measured as ratios against a baseline of the same run — and
ends with a summary: each benchmark's wall time and status, and every line that states a goal.

Figures issue 9 asks for, and where they come from:

* represent throughput (x realtime) per scene backend (pyav base, opencv variant) with its
  split: scene detection, keyframe decode, detector, tagger, tracking — ``represent.py``;
* render: scene-clip cache + stream-copy join against a naive re-encode per montage at 1x,
  10x and 100x montage hours per source hour — ``render.py --per-source-hour``;
* planning at NeMoBench-Full scale (13,486 montages' worth of rows, 31,378 QA): time and peak
  memory — ``plan_scale.py``;
* the scorer on 31,378 questions — ``score.py``;
* VNBench rendering against a full re-encode per sample — ``vnbench_render.py``;
* represent wall time with 1 vs 2 workers, threads and Dask — ``scaling.py``;
* also ingest throughput (``ingest.py``), answer validity against the studio truth
  (``validity.py``), what inflect and scipy.stats cost a fresh process
  (``library_imports.py``) and, when present, ``evaluate.py``;
* after ``make demo``: what expand's instance check and the CPU baselines compute more than
  once — ``work_repeats.py``.

Run: ``make bench`` or ``PYTHONPATH=. .venv/bin/python benchmarks/run_all.py --out DIR``
(``--only NAME,...`` / ``--skip NAME,...`` pick benchmarks; ``--list`` shows them).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BUDGET_S = 15 * 60
#: Lines worth repeating in the summary: goals and verdicts.
HEADLINE = re.compile(r"\bgoal\b|\bMET\b|\bmet\b", re.IGNORECASE)


@dataclasses.dataclass(frozen=True)
class Bench:
    """One benchmark script and the arguments that size it for the suite."""

    name: str
    script: str
    args: tuple[str, ...]
    scratch: bool = True  # takes --out DIR

    def argv(self, out: Path) -> list[str]:
        extra = ["--out", str(out / self.name)] if self.scratch else []
        return [sys.executable, str(HERE / self.script), *extra, *self.args]


def suite(out: Path) -> list[Bench]:
    """The benchmarks, sized so that all of them fit in :data:`BUDGET_S` on 2 cores."""
    pyav = out / "represent-pyav.yaml"
    out.mkdir(parents=True, exist_ok=True)
    # Base run on the PyAV scene backend; the opencv backend is one of its variants.
    pyav.write_text("scenes:\n  backend: pyav\n", "utf-8")
    benches = [
        Bench("represent", "represent.py", ("--minutes", "1.5", "--params", str(pyav))),
        Bench("render", "render.py", ("--minutes", "5", "--video-s", "150",
                                      "--per-source-hour", "1,10,100",
                                      "--naive-budget-s", "600")),
        Bench("plan_scale", "plan_scale.py", (), scratch=False),
        Bench("score", "score.py", ("--repeat", "3"), scratch=False),
        Bench("vnbench_render", "vnbench_render.py", ("--fps", "25", "--lengths", "60,180")),
        Bench("scaling", "scaling.py", ("--videos", "4", "--video-s", "20")),
        Bench("ingest", "ingest.py", ("--mib", "128"), scratch=False),
        Bench("validity", "validity.py", ("--videos", "2", "--video-s", "60")),
        Bench("library_imports", "library_imports.py", ("--repeat", "3"), scratch=False),
    ]
    if (HERE / "evaluate.py").is_file():
        # median of 1 instead of 3: the slowest benchmark otherwise (~200 s of 15 min)
        benches.append(Bench("evaluate", "evaluate.py", ("--repeat", "1"), scratch=False))
    if (ROOT / "data/db/nemo.duckdb").is_file() and (ROOT / "releases/sample").is_dir():
        # expand on the demo's stage-2 store (~1.5 min) and the baselines on its release's
        # first 100 videos (~1.5 min): what each computes more than once (issue 33)
        benches.append(Bench("work_repeats", "work_repeats.py", ("--videos", "100")))
    return benches


def machine() -> str:
    """Cores, CPU model and RAM of this machine, and its load (figures depend on all four)."""
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text("utf-8").splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
        mem_kib = next(int(line.split()[1]) for line in
                       Path("/proc/meminfo").read_text("utf-8").splitlines()
                       if line.startswith("MemTotal:"))
        ram = f"{mem_kib / 1024 / 1024:.1f} GiB RAM"
    except (OSError, StopIteration, ValueError):
        ram = "RAM unknown"
    cores = len(os.sched_getaffinity(0))
    return (f"{cores} usable core(s) of {os.cpu_count()}, {model}, {ram}; Python "
            f"{sys.version.split()[0]}; load average {os.getloadavg()[0]:.2f}")


def run(bench: Bench, out: Path, log: list[str]) -> tuple[int, float, list[str]]:
    """Run one benchmark, echoing and logging its output; returns (status, wall s, goals)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p),
        "HF_HUB_OFFLINE": "1", "DO_NOT_TRACK": "1", "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_LOGGING_LEVEL": "WARNING", "PREFECT_LOGGING_ROOT_LEVEL": "WARNING",
        "DASK_LOGGING__DISTRIBUTED": "error",
        "PYTHONUNBUFFERED": "1"}
    header = f"\n=== {bench.name}: {' '.join(bench.argv(out)[1:])}"
    print(header, flush=True)
    log.append(header)
    goals: list[str] = []
    start = time.perf_counter()
    with subprocess.Popen(bench.argv(out), cwd=ROOT, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, errors="replace") as proc:
        for line in proc.stdout or ():
            print(line, end="", flush=True)
            log.append(line.rstrip("\n"))
            if HEADLINE.search(line):
                goals.append(line.strip())
    return proc.returncode, time.perf_counter() - start, goals


def main() -> int:
    """Run the suite; the exit status is 1 when any benchmark failed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("/tmp/nf-bench"), help="scratch folder")
    parser.add_argument("--only", default="", help="comma-separated benchmark names")
    parser.add_argument("--skip", default="", help="comma-separated benchmark names")
    parser.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    args = parser.parse_args()
    out = args.out.resolve()
    benches = suite(out)
    names = {b.name for b in benches}
    only = {n for n in args.only.split(",") if n}
    skip = {n for n in args.skip.split(",") if n}
    unknown = sorted((only | skip) - names)
    if unknown:
        parser.error(f"unknown benchmark(s) {unknown}; known: {sorted(names)}")
    if args.list:
        for bench in benches:
            print(f"{bench.name:<16}{' '.join(bench.argv(out)[1:])}")
        return 0
    chosen = [b for b in benches if (not only or b.name in only) and b.name not in skip]
    log = [f"machine: {machine()}"]
    print(log[0], flush=True)
    results = []
    start = time.perf_counter()
    for bench in chosen:
        results.append((bench.name, *run(bench, out, log)))
    total = time.perf_counter() - start
    lines = ["", "=== summary", f"machine: {machine()}",
             f"{'benchmark':<16}{'wall s':>8}  status"]
    for name, status, wall, _ in results:
        lines.append(f"{name:<16}{wall:>8.1f}  {'ok' if status == 0 else f'FAILED ({status})'}")
    verdict = "within" if total <= BUDGET_S else "OVER"
    lines.append(f"{'total':<16}{total:>8.1f}  {verdict} the {BUDGET_S // 60}-minute budget")
    lines += ["", "goals stated by the benchmarks:"]
    lines += [f"  [{name}] {goal}" for name, _, _, goals in results for goal in goals]
    print("\n".join(lines), flush=True)
    (out / "bench.log").write_text("\n".join([*log, *lines]) + "\n", "utf-8")
    print(f"\nfull output: {out / 'bench.log'}")
    return 0 if all(status == 0 for _, status, _, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
