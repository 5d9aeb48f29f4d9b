#!/usr/bin/env python3
"""What each stage of ``make demo`` costs: wall time, CPU seconds and peak RSS, on which CPU.

Issue 33: a wall-clock budget measured on one fast machine does not hold on a user's, so the
demo states its cost in CPU seconds per stage and the instruction-set level they were
measured on. Two modes:

* **As DVC's shell** (``SHELL=$PWD/benchmarks/demo_cost.py dvc repro``, what ``make demo``
  runs). DVC runs each line of a stage's ``cmd`` as ``$SHELL -c LINE`` with ``DVC_STAGE`` set;
  this script runs the line under ``/bin/sh`` (``NEEDLEFORGE_COST_SHELL`` overrides), waits,
  and appends one JSON line to ``$NEEDLEFORGE_COST_LOG``: the stage, its wall seconds, the
  user and system CPU seconds of the line's whole process tree (``RUSAGE_CHILDREN``: every
  process it waited for, ffmpeg children and threads included) and the peak RSS of its
  largest process. Its exit status is the line's. Nothing else changes: ``dvc.yaml`` and its
  stages' hashes are untouched, and with no log named the line just runs. Stages DVC finds
  up to date run nothing and log nothing.
* **report LOG**: the table of a log (stages in the order they ran, a stage's lines summed),
  with the total, the CPU (model, cores, instruction-set level from ``/proc/cpuinfo``) and
  the precision the detector runtime runs in.

Stdlib only in the first mode (it starts once per stage line); the report imports
needleforge only to ask the detector's runtime.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

LOG_ENV = "NEEDLEFORGE_COST_LOG"
SHELL_ENV = "NEEDLEFORGE_COST_SHELL"
#: /proc/cpuinfo flags that decide how fast the detector's convolutions can run.
ISA_FLAGS = ("avx2", "avx_vnni", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile",
             "amx_int8", "amx_bf16")


def run_line(line: str, *, stage: str, log: Path | None, shell: str) -> int:
    """Run ``line`` under ``shell`` and, with a ``log``, append its cost; its exit status.

    Ctrl-C reaches the line's processes (the terminal signals the whole group); this process
    waits for them to stop, so the log still gets the line's cost."""
    env = {**os.environ, "SHELL": shell}
    start = time.perf_counter()
    child = subprocess.Popen([shell, "-c", line], env=env)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        rc = child.wait()
    finally:
        signal.signal(signal.SIGINT, previous)
    wall_s = time.perf_counter() - start
    if log is not None:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # this process's only child
        record = {"stage": stage, "wall_s": round(wall_s, 3),
                  "user_s": round(usage.ru_utime, 3), "sys_s": round(usage.ru_stime, 3),
                  "max_rss_mb": round(usage.ru_maxrss / 1024, 1), "rc": rc}
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")
    return rc


def read_log(path: Path) -> list[dict[str, Any]]:
    """Per stage, in the order the stages first ran: wall, user and sys seconds summed over
    its lines, the largest peak RSS, the worst exit status."""
    stages: dict[str, dict[str, Any]] = {}
    for text in path.read_text(encoding="utf-8").splitlines():
        if not text.strip():
            continue
        row = json.loads(text)
        got = stages.setdefault(row["stage"], {"stage": row["stage"], "wall_s": 0.0,
                                               "user_s": 0.0, "sys_s": 0.0,
                                               "max_rss_mb": 0.0, "rc": 0})
        for key in ("wall_s", "user_s", "sys_s"):
            got[key] += float(row[key])
        got["max_rss_mb"] = max(got["max_rss_mb"], float(row["max_rss_mb"]))
        got["rc"] = got["rc"] or int(row["rc"])
    return list(stages.values())


def isa_level(flags: Iterable[str]) -> str:
    """The highest vector instruction-set level of a CPU with these ``/proc/cpuinfo`` flags."""
    have = set(flags)
    if "amx_tile" in have:
        return "AMX (AVX-512 + VNNI + AMX tiles)"
    if "avx512f" in have:
        return "AVX-512 + VNNI" if "avx512_vnni" in have else "AVX-512"
    if "avx2" in have:
        return "AVX2 + VNNI" if "avx_vnni" in have else "AVX2"
    return "below AVX2"


def cpu_info(cpuinfo: str) -> dict[str, Any]:
    """Model name, logical cores and the instruction-set flags of ``/proc/cpuinfo``'s text."""
    model, flags, cores = "unknown CPU", set(), 0
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "processor":
            cores += 1
        elif key == "model name" and model == "unknown CPU":
            model = value.strip()
        elif key == "flags" and not flags:
            flags = set(value.split())
    return {"model": model, "cores": cores or os.cpu_count() or 0, "level": isa_level(flags),
            "flags": [f for f in ISA_FLAGS if f in flags]}


def detector_precision() -> str:
    """The embedded SSD detector's runtime and the precision it infers in, as the runtime
    reports it for a compiled model; why not, when it cannot say."""
    try:
        from needleforge.backends.embedded.model_files import (
            OPENPIBO_DISTRIBUTION,
            OPENPIBO_PACKAGE,
            package_models_dir,
        )
        from needleforge.backends.embedded.ssd_runtime import compiled, converted_path

        models = package_models_dir(OPENPIBO_PACKAGE, distribution=OPENPIBO_DISTRIBUTION)
        xml = converted_path(models / "frozen_inference_graph.pb")
        if not xml.is_file():
            return "OpenVINO (model not converted yet: no stage ran the detector)"
        import openvino

        precision = compiled(xml, threads=1).get_property("INFERENCE_PRECISION_HINT")
        offered = openvino.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")
        name = {"float32": "f32", "bf16": "bf16", "f16": "f16"}.get(
            str(precision).split("'")[1] if "'" in str(precision) else str(precision),
            str(precision))
        return (f"OpenVINO {openvino.__version__.split('-')[0]} on CPU, {name} "
                f"(the CPU offers {', '.join(offered)})")
    except Exception as exc:  # noqa: BLE001 (a report line, never a failed demo)
        return f"unknown ({type(exc).__name__}: {exc})"


def report(stages: Sequence[dict[str, Any]], *, cpu: dict[str, Any], detector: str,
           expected: Sequence[str] = ()) -> str:
    """The budget table of ``stages`` (see :func:`read_log`) and the machine it ran on;
    ``expected`` stages missing from it are listed as not run (DVC found them current)."""
    lines = [f"demo budget on {cpu['model']} ({cpu['cores']} logical cores, instruction set "
             f"{cpu['level']}: {' '.join(cpu['flags']) or 'no AVX2'})",
             f"detector: {detector}",
             *([f"ONEDNN_MAX_CPU_ISA={cap}: OpenVINO's convolutions (the SSD detector) run as "
                f"on that level; the TFLite models (tagger, pose, OCR) still use the CPU's own"]
               if (cap := os.environ.get("ONEDNN_MAX_CPU_ISA")) else []),
             "CPU s = user + sys of each stage's whole process tree",
             "",
             f"{'stage':<12}{'wall s':>9}{'CPU s':>9}{'CPU/wall':>10}{'peak RSS MB':>13}"]
    for s in stages:
        cpu_s = s["user_s"] + s["sys_s"]
        ratio = cpu_s / s["wall_s"] if s["wall_s"] > 0 else 0.0
        failed = "" if s["rc"] == 0 else f"  (exit {s['rc']})"
        lines.append(f"{s['stage']:<12}{s['wall_s']:>9.1f}{cpu_s:>9.1f}{ratio:>10.2f}"
                     f"{s['max_rss_mb']:>13.0f}{failed}")
    wall = sum(s["wall_s"] for s in stages)
    cpu_total = sum(s["user_s"] + s["sys_s"] for s in stages)
    peak = max((s["max_rss_mb"] for s in stages), default=0.0)
    lines.append(f"{'total':<12}{wall:>9.1f}{cpu_total:>9.1f}"
                 f"{(cpu_total / wall if wall else 0.0):>10.2f}{peak:>13.0f}")
    skipped = [name for name in expected if name not in {s["stage"] for s in stages}]
    if skipped:
        lines.append(f"not run (DVC found them up to date): {', '.join(skipped)}")
    return "\n".join(lines)


def dvc_stages(dvc_yaml: Path) -> list[str]:
    """The stage names of ``dvc.yaml``, in file order ([] when it cannot be read)."""
    try:
        import yaml

        return list(yaml.safe_load(dvc_yaml.read_text(encoding="utf-8"))["stages"])
    except Exception:  # noqa: BLE001 (only the "not run" line needs them)
        return []


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["-c"] and len(args) == 2:  # called by DVC as its $SHELL
        log = os.environ.get(LOG_ENV, "").strip()
        return run_line(args[1], stage=os.environ.get("DVC_STAGE", "?"),
                        log=Path(log) if log else None,
                        shell=os.environ.get(SHELL_ENV, "").strip() or "/bin/sh")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    show = sub.add_parser("report", help="print the budget table of a cost log")
    show.add_argument("log", type=Path)
    show.add_argument("--dvc-yaml", type=Path, default=Path("dvc.yaml"))
    show.add_argument("--no-detector", action="store_true",
                      help="do not ask the detector's runtime for its precision")
    parsed = parser.parse_args(args)
    if not parsed.log.is_file():
        print(f"no cost log at {parsed.log}: every stage was up to date", file=sys.stderr)
        return 0
    cpuinfo = Path("/proc/cpuinfo")
    print(report(read_log(parsed.log),
                 cpu=cpu_info(cpuinfo.read_text() if cpuinfo.is_file() else ""),
                 detector="not asked" if parsed.no_detector else detector_precision(),
                 expected=dvc_stages(parsed.dvc_yaml)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
