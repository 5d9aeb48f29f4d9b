"""Prefect flow: NeMo stage 3 (medium/long montages, multi-needle questions) and rendering.

Run: ``python -m flows.expand --db data/needleforge.duckdb --render data/render``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from prefect import flow, task

from needleforge.config import PARAMS_HELP, Params, resolve_params
from needleforge.pipeline import expand_store, render_store


@task(name="expand")
def expand_task(db: Path, params: Params) -> dict[str, int]:
    result = expand_store(db=db, params=params)
    return {"montages": len(result.montages), "questions": len(result.questions),
            "passed": len(result.releasable()), "shortfalls": len(result.shortfalls)}


@task(name="render", retries=1)
def render_task(db: Path, out: Path, params: Params) -> int:
    report = render_store(db=db, out=out, cache_dir=None, params=params)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", type=Path, default=Path("data/needleforge.duckdb"))
    parser.add_argument("--render", type=Path, default=None)
    parser.add_argument("--params", type=Path, default=None, help=PARAMS_HELP)
    args = parser.parse_args()
    expand_flow(args.db, args.render, args.params)


if __name__ == "__main__":
    main()
