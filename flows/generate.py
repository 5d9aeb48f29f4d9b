"""Prefect flow: NeMo stage 2 (questions, negatives, short montages, self-verification).

Generation reads the whole store and is deterministic, so it runs as one task; model-backed
writers retry inside their HTTP client. The flow process alone writes DuckDB.
Run: ``python flows/generate.py --db data/needleforge.duckdb [--params params.yaml]``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from prefect import flow, task

from needleforge.backends import default_registry
from needleforge.config import NemoParams, load_params
from needleforge.nemo import (
    GenerationResult,
    VideoKeyframes,
    build_backends,
    build_probe,
    generate,
)
from needleforge.store import Store


@task(name="nemo-generate")
def generate_task(db: Path, params: NemoParams) -> GenerationResult:
    registry = default_registry()
    describer, verifier = build_backends(params, registry=registry)
    with Store(db, read_only=True) as store:
        videos = store.videos()
        scenes, tags, objects = store.scenes(), store.scene_tags(), store.objects()
    # the negative check (nemo.check_negatives): object targets' negatives searched for the label
    probe = build_probe(params, videos=videos, registry=registry)
    try:
        with VideoKeyframes({v.video_id: v for v in videos}) as keyframes:
            return generate(videos=videos, scenes=scenes, tags=tags, objects=objects,
                            params=params, describer=describer, verifier=verifier,
                            keyframes=keyframes, probe=probe)
    finally:
        if probe is not None:
            probe.close()


@flow(name="generate", log_prints=True)
def generate_flow(db: Path, params_path: Path | None = None) -> dict[str, int]:
    """Generate short NeMo montages and questions into ``db``; returns counts."""
    params = load_params(params_path).nemo
    result = generate_task(db, params)
    with Store(db) as store:
        store.record_generation(result.montages, result.questions, result.verifications,
                                replace_buckets=["short"])
    counts = {"montages": len(result.montages), "questions": len(result.questions),
              "passed": len(result.releasable()), "skipped": len(result.skipped),
              "negatives_passed_over": len(result.rejected_negatives)}
    print(f"generated {counts}")
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", type=Path, default=Path("data/needleforge.duckdb"))
    parser.add_argument("--params", type=Path, default=None)
    args = parser.parse_args()
    generate_flow(args.db, args.params)


if __name__ == "__main__":
    main()
