"""Scaling benchmark: wall time of the represent flow with 1 and 2 workers, threads and Dask.

Builds a small studio corpus (synthetic episodes, 640x360 25 fps), ingests it once, then runs
the real represent flow (:func:`flows.represent.run_represent`, one task per video, the flow
process writing DuckDB) on a fresh copy of the ingested store for each runner: threads with
1 and 2 workers, and a local Dask cluster of 1 and 2 single-threaded worker processes. All
runs share one temporary Prefect API (started once, not counted).

Figures: wall seconds of each flow run (Dask runs include starting and stopping their local
cluster, printed separately as measured in the same run, and each worker process loading its
models), x realtime (seconds of video / wall seconds), and the speed-up against threads with
1 worker measured in the same run. Every run must produce the same rows (checked, so a fast
but wrong runner does not go unnoticed).

Run: ``.venv/bin/python benchmarks/scaling.py --out /tmp/nf-scaling [--videos 4 --video-s 40]``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from flows.represent import run_represent
from needleforge.ingest import ingest
from needleforge.params import IngestParams, ProgramParams, RunnerParams, StudioParams
from needleforge.store import Store
from needleforge.studio import build_studio

TABLES = ("scenes", "scene_tags", "objects", "object_boxes")


def build(out: Path, *, videos: int, video_s: float) -> tuple[Path, float]:
    """Studio corpus (in a child process, so its memory is not ours) ingested into a store."""
    params = StudioParams(seed=0, real_clips=[], programs=[ProgramParams(
        name="scaling", n_videos=videos, video_duration_s=video_s, min_scene_s=4,
        max_scene_s=12, subtitles=False)])
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    start = time.perf_counter()
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        report = pool.submit(build_studio, params, out / "studio").result()
    db = out / "ingested.duckdb"
    result = ingest(report.manifest_path, media_dir=out / "media", params=IngestParams())
    with Store(db) as store:
        store.record_ingest(result.videos, result.rejections)
    media_s = sum(v.media.duration_s for v in result.videos)
    print(f"corpus: {len(result.videos)} videos, {media_s:.0f} s of video, built and ingested "
          f"in {time.perf_counter() - start:.1f} s")
    return db, media_s


def dask_start_stop_s(workers: int) -> float:
    """Seconds to start and stop a local Dask cluster of ``workers`` processes (no tasks)."""
    from distributed import Client, LocalCluster

    start = time.perf_counter()
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        client.wait_for_workers(workers)
    return time.perf_counter() - start


def rows(db: Path) -> list[list[tuple[object, ...]]]:
    with Store(db, read_only=True) as store:
        return [store.query(f"SELECT * FROM {t} ORDER BY ALL") for t in TABLES]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="scratch folder (emptied)")
    parser.add_argument("--videos", type=int, default=4, help="synthetic episodes")
    parser.add_argument("--video-s", type=float, default=40.0, help="length of one episode")
    parser.add_argument("--no-dask", action="store_true", help="threads only")
    args = parser.parse_args()
    from prefect.testing.utilities import prefect_test_harness

    print(f"machine: {len(os.sched_getaffinity(0))} core(s) usable, load average "
          f"{os.getloadavg()[0]:.2f}")
    ingested, media_s = build(args.out.resolve(), videos=args.videos, video_s=args.video_s)
    runners = [("threads", 1), ("threads", 2)]
    if not args.no_dask:
        runners += [("dask", 1), ("dask", 2)]
    results: list[tuple[str, int, float]] = []
    expected = None
    with prefect_test_harness(server_startup_timeout=90):
        for kind, workers in runners:
            db = ingested.with_name(f"{kind}-{workers}.duckdb")
            shutil.copy(ingested, db)
            start = time.perf_counter()
            counts = run_represent(db, runner=RunnerParams(kind=kind, workers=workers))
            wall = time.perf_counter() - start
            if counts["represented"] != args.videos or counts["failed"]:
                raise SystemExit(f"{kind} x{workers}: unexpected counts {counts}")
            found = rows(db)
            expected = expected or found
            if found != expected:
                raise SystemExit(f"{kind} x{workers}: rows differ from threads x1")
            results.append((kind, workers, wall))
    overhead = {w: dask_start_stop_s(w) for w in (1, 2)} if not args.no_dask else {}
    base = results[0][2]
    print(f"\nrepresent flow, {args.videos} videos ({media_s:.0f} s of video), one task per "
          "video; same rows from every runner (checked)")
    print(f"{'runner':<10}{'workers':>8}{'wall s':>9}{'x realtime':>12}{'speed-up':>10}"
          f"{'cluster s':>11}")
    for kind, workers, wall in results:
        cluster = f"{overhead[workers]:.1f}" if kind == "dask" else "-"
        print(f"{kind:<10}{workers:>8}{wall:>9.1f}{media_s / wall:>11.1f}x"
              f"{base / wall:>9.2f}x{cluster:>11}")
    print("  speed-up = threads x1 wall / this wall (same run); cluster s = start + stop of a "
          "bare local Dask cluster of that size (included in its wall s)")
    print(f"load average now {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
