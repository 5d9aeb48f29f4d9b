"""Prefect flow: a VideoNIAH / VNBench set from the ingested videos.

Run: ``python -m flows.vnbench --db data/needleforge.duckdb --out data/vnbench``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from prefect import flow, task

from needleforge.config import PARAMS_HELP, Params, resolve_params
from needleforge.pipeline import vnbench_store


@task(name="vnbench-build")
def vnbench_task(db: Path, out: Path, params: Params) -> dict[str, int]:
    result = vnbench_store(db=db, out=out, cache_dir=None, params=params)
    return {"samples": len(result.samples), "questions": len(result.questions),
            "skipped": len(result.skipped)}


@flow(name="vnbench", log_prints=True)
def vnbench_flow(db: Path, out: Path, params_path: Path | None = None) -> dict[str, int]:
    """Build, render and export VNBench samples into ``out``; returns counts."""
    counts = vnbench_task(db, out, resolve_params(params_path))
    print(f"vnbench {counts}")
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", type=Path, default=Path("data/needleforge.duckdb"))
    parser.add_argument("--out", type=Path, default=Path("data/vnbench"))
    parser.add_argument("--params", type=Path, default=None, help=PARAMS_HELP)
    args = parser.parse_args()
    vnbench_flow(args.db, args.out, args.params)


if __name__ == "__main__":
    main()
