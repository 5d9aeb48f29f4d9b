"""How often NeMo stages 2 and 3 run the detector on a picture it has already looked at.

Issue 33 asks for work that is not repeated. The negative check's scans are stored per scene
and the looking verifier keeps its detections per frame inside one process; what neither
covers is what this script counts. It runs ``needleforge nemo`` and then ``needleforge
expand`` (:func:`~needleforge.stages.nemo.generate_store`, :func:`~needleforge.stages.expand.
expand_store`: the code of the CLI and DVC stages) in one process on a copy of a represented
store, with every :class:`~needleforge.backends.embedded.detector.EmbeddedDetector` call
counted (the detector itself runs unchanged) under a key of the detector's settings (version,
score threshold, input scale, coarse maps) and the picture's bytes (sha1).

It prints, per stage and per settings: calls, distinct pictures, the calls that repeat an
earlier call of the same settings on the same picture (in this stage, and of the earlier
stage), and the CPU seconds those repeats cost (each call's own CPU time, summed); and how
many pictures were looked at under two different settings (work a shared cache could not
save, since another input finds other things).

Run (after ``make demo``)::

    PYTHONPATH=. .venv/bin/python benchmarks/detector_repeats.py \\
        --db data/db/represent.duckdb --params params.yaml --out /tmp/nf-repeats
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import hashlib
import shutil
import threading
import time
from pathlib import Path
from typing import Any

from needleforge.backends.embedded.detector import EmbeddedDetector
from needleforge.params import load_params
from needleforge.stages.expand import expand_store
from needleforge.stages.nemo import generate_store


@dataclasses.dataclass
class Calls:
    """Every detector call: (stage, settings, picture sha1, CPU seconds of the call)."""

    stage: str = ""
    rows: list[tuple[str, str, str, float]] = dataclasses.field(default_factory=list)
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)


def _counting(calls: Calls) -> Any:
    """``EmbeddedDetector.detect`` that records each call in ``calls`` and then detects."""
    detect = EmbeddedDetector.detect

    def counted(self: EmbeddedDetector, image: Any, *, t_s: float) -> Any:
        started = time.thread_time()
        found = detect(self, image, t_s=t_s)
        cpu = time.thread_time() - started
        settings = (f"{self.version} >= {self.score_threshold:g} "
                    f"x{self.input_scale} {self.coarse_maps}")
        picture = hashlib.sha1(image.tobytes() + str(image.shape).encode()).hexdigest()
        with calls.lock:
            calls.rows.append((calls.stage, settings, picture, cpu))
        return found

    return counted


def report(calls: Calls) -> None:
    """The table of the module docstring."""
    seen: set[tuple[str, str]] = set()
    settings_of: dict[str, set[str]] = collections.defaultdict(set)
    table: dict[tuple[str, str], list[float]] = collections.defaultdict(lambda: [0, 0, 0, 0.0])
    for stage, settings, picture, cpu in calls.rows:
        row = table[(stage, settings)]
        row[0] += 1
        if (settings, picture) in seen:
            row[1] += 1
            row[2] += cpu
        seen.add((settings, picture))
        settings_of[picture].add(settings)
        row[3] += cpu
    print(f"{'stage':<7} {'calls':>6} {'repeats':>7} {'repeat CPU s':>12} {'all CPU s':>9}  "
          "settings")
    for (stage, settings), (n, repeats, repeat_cpu, cpu) in table.items():
        print(f"{stage:<7} {n:6.0f} {repeats:7.0f} {repeat_cpu:12.1f} {cpu:9.1f}  {settings}")
    shared = sum(len(s) > 1 for s in settings_of.values())
    print(f"pictures: {len(settings_of)} distinct; {shared} looked at under two or more "
          f"settings")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", type=Path, default=Path("data/db/represent.duckdb"))
    parser.add_argument("--params", type=Path, default=Path("params.yaml"))
    parser.add_argument("--out", type=Path, required=True, help="scratch folder")
    args = parser.parse_args()
    if not args.db.is_file():
        parser.error(f"--db {args.db}: no such store (make demo leaves one there)")
    params = load_params(args.params if args.params.is_file() else None)
    args.out.mkdir(parents=True, exist_ok=True)
    db = args.out / "repeats.duckdb"
    shutil.copyfile(args.db, db)
    calls = Calls()
    EmbeddedDetector.detect = _counting(calls)  # type: ignore[method-assign]
    for stage, run in (("nemo", generate_store), ("expand", expand_store)):
        calls.stage = stage
        started = time.process_time()
        run(db=db, params=params)
        print(f"{stage}: {time.process_time() - started:.0f} CPU s (this process)")
    report(calls)


if __name__ == "__main__":
    main()
