"""Prefect flow: NeMo stage 3 (medium/long montages, multi-needle questions) and rendering.

Run: ``python -m flows.expand [--db DB] [--render data/render] [--params params.yaml]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from prefect import flow, task

from flows._cli import flow_parser, run_main
from flows._progress import run_progress
from needleforge.params import Params, resolve_params
from needleforge.stages.expand import expand_store
from needleforge.stages.render import render_store


@task(name="expand")
def expand_task(db: Path, params: Params) -> dict[str, int]:
    with run_progress("expand", "montage groups") as report:
        result = expand_store(db=db, params=params, on_group=report)
    return {"montages": len(result.montages), "questions": len(result.questions),
            "passed": len(result.releasable()), "shortfalls": len(result.shortfalls)}


@task(name="render", retries=1)
def render_task(db: Path, out: Path, params: Params) -> int:
    with run_progress("render", "scene clips and montages") as progress:
        report = render_store(db=db, out=out, cache_dir=None, params=params,
                              on_step=progress)
    return sum(1 for m in report.montages if not m.skipped)


@flow(name="expand", log_prints=True)
def expand_flow(db: Path, render: Path | None = None,
                params_path: Path | None = None) -> dict[str, int]:
    """Expand ``db``'s verified short questions, then render every montage when asked."""
    params = resolve_params(params_path)
    counts = expand_task(db, params)
    if render is not None:
        counts["rendered"] = render_task(db, render, params)
    print(f"expanded {counts}")
    return counts


def main(argv: Sequence[str] | None = None) -> None:
    parser = flow_parser(__doc__)
    parser.add_argument("--render", type=Path, default=None)
    run_main(parser, lambda a: expand_flow(a.db, a.render, a.params), argv)


if __name__ == "__main__":
    main()
