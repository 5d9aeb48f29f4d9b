"""Prefect flow: the video representation (scenes, tags, objects) of every ingested video.

One task per video, fanned out on the task runner of ``runner:`` in params (threads by
default; a Dask or Ray cluster with ``--runner``). Each worker thread or process builds its
own model backends once (they are not thread-safe) and returns records; the flow process
alone writes DuckDB, one video per transaction, so a killed run resumes by skipping videos
already represented. Workers read the stored media at the paths the store records.
Run: ``python -m flows.represent --db data/needleforge.duckdb [--params params.yaml]
[--runner dask --workers 2 | --address tcp://host:8786]``.
"""

from __future__ import annotations

import argparse
import threading
from pathlib import Path
from typing import Any

from prefect import flow, task
from prefect.task_runners import ThreadPoolTaskRunner

from needleforge.backends import default_registry
from needleforge.config import PARAMS_HELP, ObjectParams, Params, RunnerParams, resolve_params
from needleforge.failures import from_represent
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
from needleforge.runners import add_runner_arguments, runner_from_args, with_runner
from needleforge.store import Store

# Per worker thread: model backends keyed by their params (built on first use, then reused
# by every later video the thread represents; a Dask/Ray worker process has its own).
_local = threading.local()


def _worker_models(params: ObjectParams) -> Models:
    key = params.model_dump_json()
    cached: dict[str, Models] = getattr(_local, "models", {})
    if key not in cached:
        cached[key] = load_models(params, registry=default_registry())
        _local.models = cached
    return cached[key]


@task(name="represent-video")
def represent_task(
    job: RepresentJob, params: Params, step: Step
) -> Representation | RepresentFailure:
    models = None if step == "scenes" else _worker_models(params.objects)
    return run_job(job, scene_params=params.scenes, object_params=params.objects,
                   models=models)


# Two workers: one per core; each task already uses cv2/litert threads inside a frame.
# (Prefect's stubs declare the decorator's runner invariantly, hence the ignore.)
_RUNNER: ThreadPoolTaskRunner[Any] = ThreadPoolTaskRunner(max_workers=2)


@flow(name="represent", log_prints=True, task_runner=_RUNNER)  # type: ignore[arg-type]
def represent_flow(
    db: Path, params_path: Path | None = None, step: Step = "all"
) -> dict[str, Any]:
    """Represent the videos of ``db`` that are not yet current; returns counts, and each
    video that failed as a failure (:class:`~needleforge.failures.StageFailure` dicts) and
    by id (``failed_videos``)."""
    params = resolve_params(params_path)
    models = None if step == "scenes" else load_models(params.objects,
                                                       registry=default_registry())
    wanted = config_hash(params.scenes, params.objects if models else None, models)
    with Store(db) as store:
        videos = store.videos()
        jobs = plan_represent(
            videos, step=step, wanted_hash=wanted,
            stored_hashes=store.representation_hashes(),
            stored_scenes={v.video_id: tuple(store.scenes(v.video_id)) for v in videos},
        )
        futures = [represent_task.submit(job, params, step) for job in jobs]
        by_id = {v.video_id: v for v in videos}
        failed: list[RepresentFailure] = []
        for future in futures:
            result = future.result()
            if isinstance(result, RepresentFailure):
                failed.append(result)
                print(f"failed {result.video_id}: {result.error}")
            else:
                store.record_representation(result)
    failures = [from_represent(f.video_id, f.error, videos=by_id) for f in failed]
    print(f"represented {len(jobs) - len(failed)} video(s), {len(failed)} failed")
    return {"represented": len(jobs) - len(failed), "skipped": len(videos) - len(jobs),
            "failed": len(failed), "failures": [f.to_dict() for f in failures],
            "failed_videos": [f.video_id for f in failed]}


def run_represent(
    db: Path, params_path: Path | None = None, step: Step = "all", *,
    runner: RunnerParams | None = None,
) -> dict[str, Any]:
    """:func:`represent_flow` on the task runner ``runner`` describes (default: the params
    file's ``runner:`` section).

    Raises:
        ConfigError: the runner's package is missing or its cluster address is unreachable.
    """
    settings = runner or resolve_params(params_path).runner
    return with_runner(represent_flow, settings)(db, params_path, step)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", type=Path, default=Path("data/needleforge.duckdb"))
    parser.add_argument("--params", type=Path, default=None, help=PARAMS_HELP)
    parser.add_argument("--step", choices=["scenes", "objects", "all"], default="all")
    add_runner_arguments(parser)
    args = parser.parse_args()
    run_represent(args.db, args.params, args.step,
                  runner=runner_from_args(resolve_params(args.params).runner, args))


if __name__ == "__main__":
    main()
