"""Prefect flow: a VideoNIAH / VNBench set from the ingested videos.

Run: ``python -m flows.vnbench [--db DB] [--out data/vnbench] [--params params.yaml]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from prefect import flow, task

from flows._cli import flow_parser, run_main
from flows._progress import run_progress
from needleforge.params import Params, resolve_params
from needleforge.stages.vnbench import vnbench_store


@task(name="vnbench-build")
def vnbench_task(db: Path, out: Path, params: Params) -> dict[str, int]:
    with run_progress("vnbench", "haystacks and samples") as report:
        result = vnbench_store(db=db, out=out, cache_dir=None, params=params, on_step=report)
    return {"samples": len(result.samples), "questions": len(result.questions),
            "skipped": len(result.skipped)}


@flow(name="vnbench", log_prints=True)
def vnbench_flow(db: Path, out: Path, params_path: Path | None = None) -> dict[str, int]:
    """Build, render and export VNBench samples into ``out``; returns counts."""
    counts = vnbench_task(db, out, resolve_params(params_path))
    print(f"vnbench {counts}")
    return counts


def main(argv: Sequence[str] | None = None) -> None:
    parser = flow_parser(__doc__)
    parser.add_argument("--out", type=Path, default=Path("data/vnbench"))
    run_main(parser, lambda a: vnbench_flow(a.db, a.out, a.params), argv)


if __name__ == "__main__":
    main()
