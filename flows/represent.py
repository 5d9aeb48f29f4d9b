"""Prefect flow: the video representation (scenes, tags, objects) of every ingested video.

One task per video, fanned out on threads; each task builds its own model backends (they are
not thread-safe) and returns records; the flow process alone writes DuckDB, one video per
transaction, so a killed run resumes by skipping videos already represented.
Run: ``python flows/represent.py --db data/needleforge.duckdb [--params params.yaml]``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from prefect import flow, task
from prefect.task_runners import ThreadPoolTaskRunner

from needleforge.backends import default_registry
from needleforge.config import Params, load_params
from needleforge.records import Representation
from needleforge.represent import (
    Models,
    RepresentFailure,
    RepresentJob,
    Step,
    config_hash,
    load_models,
    plan_represent,
    run_job,
)
from needleforge.store import Store


def _models(params: Params, step: Step) -> Models | None:
    return None if step == "scenes" else load_models(params.objects, registry=default_registry())


@task(name="represent-video")
def represent_task(
    job: RepresentJob, params: Params, step: Step
) -> Representation | RepresentFailure:
    return run_job(job, scene_params=params.scenes, object_params=params.objects,
                   models=_models(params, step))


# Two workers: one per core; each task already uses cv2/litert threads inside a frame.
# (Prefect's stubs declare the decorator's runner invariantly, hence the ignore.)
_RUNNER: ThreadPoolTaskRunner[Any] = ThreadPoolTaskRunner(max_workers=2)


@flow(name="represent", log_prints=True, task_runner=_RUNNER)  # type: ignore[arg-type]
def represent_flow(
    db: Path, params_path: Path | None = None, step: Step = "all"
) -> dict[str, int]:
    """Represent the videos of ``db`` that are not yet current; returns counts."""
    params = load_params(params_path)
    models = _models(params, step)
    wanted = config_hash(params.scenes, params.objects if models else None, models)
    with Store(db) as store:
        videos = store.videos()
        jobs = plan_represent(
            videos, step=step, wanted_hash=wanted,
            stored_hashes=store.representation_hashes(),
            stored_scenes={v.video_id: tuple(store.scenes(v.video_id)) for v in videos},
        )
        futures = [represent_task.submit(job, params, step) for job in jobs]
        failed = 0
        for future in futures:
            result = future.result()
            if isinstance(result, RepresentFailure):
                print(f"failed: {result.video_id}: {result.error}")
                failed += 1
            else:
                store.record_representation(result)
    print(f"represented {len(jobs) - failed} video(s), {failed} failed")
    return {"represented": len(jobs) - failed, "skipped": len(videos) - len(jobs),
            "failed": failed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", type=Path, default=Path("data/needleforge.duckdb"))
    parser.add_argument("--params", type=Path, default=None)
    parser.add_argument("--step", choices=["scenes", "objects", "all"], default="all")
    args = parser.parse_args()
    represent_flow(args.db, args.params, args.step)


if __name__ == "__main__":
    main()
