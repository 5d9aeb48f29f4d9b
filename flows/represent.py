"""Prefect flow: the video representation (scenes, tags, objects) of every ingested video.

The stage of ``needleforge represent`` (:func:`needleforge.stages.represent.represent_store`: plan,
skip current videos, store each result), with its per-video work fanned out as one task per
video on the task runner of ``runner:`` in params (threads by default; a Dask or Ray cluster
with ``--runner``). Each worker thread or process builds its own model backends once (they
are not thread-safe) and returns records; the flow process alone writes DuckDB, one video per
transaction, so a killed run resumes by skipping videos already represented. Workers read the
stored media at the paths the store records.
Run: ``python -m flows.represent [--db DB] [--params params.yaml]
[--runner dask --workers 2 | --address tcp://host:8786]``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from prefect import flow, task

from flows._cli import flow_parser, run_main, runner_of
from flows._progress import run_progress
from needleforge.backends import default_registry
from needleforge.orchestration.runners import default_task_runner, with_runner
from needleforge.params import Params, RunnerParams, resolve_params
from needleforge.records import Representation
from needleforge.runtime.preflight import check_objects
from needleforge.stages.represent import (
    JobRunner,
    RepresentFailure,
    RepresentJob,
    Step,
    represent_store,
    run_job,
    worker_models,
)
from needleforge.stages.represent_video import Models


@task(name="represent-video")
def represent_task(
    job: RepresentJob, params: Params, step: Step
) -> Representation | RepresentFailure:
    models = None if step == "scenes" else worker_models(params.objects,
                                                         registry=default_registry())
    return run_job(job, scene_params=params.scenes, object_params=params.objects,
                   models=models)


def _as_tasks(params: Params, step: Step) -> JobRunner:
    """The flow's :data:`~needleforge.stages.represent.JobRunner`: one task per job, all submitted
    at once, their results yielded in job order and each failure printed as it arrives."""

    def run(jobs: Sequence[RepresentJob],
            _models: Models | None) -> Iterator[Representation | RepresentFailure]:
        futures = [represent_task.submit(job, params, step) for job in jobs]
        for future in futures:
            result = future.result()
            if isinstance(result, RepresentFailure):
                print(f"failed {result.video_id}: {result.error}")
            yield result

    return run


@flow(name="represent", log_prints=True, task_runner=default_task_runner())
def represent_flow(
    db: Path, params_path: Path | None = None, step: Step = "all"
) -> dict[str, Any]:
    """Represent the videos of ``db`` that are not yet current; returns counts, and each
    video that failed as a failure (:class:`~needleforge.records.failures.StageFailure` dicts) and
    by id (``failed_videos``).

    The tagger's files (a RAM++ checkpoint, its sidecar Python) are checked first, as
    ``needleforge represent`` checks them: a missing one fails the run at its start with the
    CLI's message, not once in every video's task.
    """
    params = resolve_params(params_path)
    if step != "scenes":
        check_objects(params.objects)
    with run_progress("represent" if step == "all" else step, "videos") as report:
        outcome = represent_store(db=db, params=params, step=step, on_video=report,
                                  run_jobs=_as_tasks(params, step))
    failed = len(outcome.failures)
    print(f"represented {outcome.represented} video(s), {failed} failed")
    return {"represented": outcome.represented, "skipped": outcome.current, "failed": failed,
            "failures": [f.to_dict() for f in outcome.stage_failures],
            "failed_videos": [f.video_id for f in outcome.failures]}


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


def main(argv: Sequence[str] | None = None) -> None:
    parser = flow_parser(__doc__, runner=True)
    parser.add_argument("--step", choices=["scenes", "objects", "all"], default="all")
    run_main(parser, lambda a: run_represent(a.db, a.params, a.step, runner=runner_of(a)),
             argv)


if __name__ == "__main__":
    main()
