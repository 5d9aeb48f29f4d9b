"""The represent stage: scenes, tags, objects and referring expressions of every ingested video
not yet current, stored one video at a time (a killed run resumes where it stopped).

The jobs are planned here (:func:`plan_represent`) and each runs
:func:`~needleforge.stages.represent_video.represent_video`, on threads of this process by
default (:func:`run_on_threads`) or as tasks of the represent flow (``flows/represent.py``).
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Literal, TypeVar

from needleforge.backends import Registry, default_registry
from needleforge.errors import NeedleforgeError
from needleforge.params import ObjectParams, Params, RunnerParams, SceneParams
from needleforge.records import Representation, Scene, Video
from needleforge.records.failures import StageFailure, from_represent
from needleforge.runtime.progress import OnCount
from needleforge.stages.represent_video import Models, config_hash, load_models, represent_video
from needleforge.store import Store


@dataclasses.dataclass(frozen=True, slots=True)
class RepresentFailure:
    """A video the stage could not represent, and why (its stored rows stay as they were)."""

    video_id: str
    error: str


Step = Literal["scenes", "objects", "all"]


@dataclasses.dataclass(frozen=True, slots=True)
class RepresentJob:
    """One video to (re)represent; ``scenes`` set when the objects step reuses stored scenes."""

    video: Video
    scenes: tuple[Scene, ...] | None = None


def plan_represent(
    videos: Sequence[Video],
    *,
    step: Step,
    wanted_hash: str,
    stored_hashes: dict[str, str],
    stored_scenes: dict[str, tuple[Scene, ...]],
) -> list[RepresentJob]:
    """The videos whose stored representation is missing or was made another way.

    A finished video is skipped, so a killed run resumes where it stopped and a rerun with the
    same configuration changes nothing. The objects step reuses stored scenes when they came
    from the same scene parameters, else it detects scenes again.
    """
    scenes_part = wanted_hash.split("-", 1)[0]
    jobs: list[RepresentJob] = []
    for video in videos:
        stored = stored_hashes.get(video.video_id, "")
        if stored == wanted_hash or (step == "scenes" and stored.startswith(scenes_part + "-")):
            continue
        reuse = step == "objects" and stored.startswith(scenes_part + "-")
        jobs.append(RepresentJob(video, stored_scenes.get(video.video_id) if reuse else None))
    return jobs


#: Model threads of each worker when videos are represented on several threads at once.
WORKER_MODEL_THREADS = 1
_local = threading.local()


def worker_models(params: ObjectParams, *, registry: Registry) -> Models:
    """This thread's own model backends for ``params`` (:data:`WORKER_MODEL_THREADS` each),
    built on its first video and reused for every later one (backends are not thread-safe)."""
    key = params.model_dump_json()
    cached: dict[str, Models] = getattr(_local, "models", {})
    if key not in cached:
        cached[key] = load_models(params, registry=registry, threads=WORKER_MODEL_THREADS)
        _local.models = cached
    return cached[key]


_S = TypeVar("_S")


class SceneModelPool:
    """Threads that do scenes' model work, each with its own models (:func:`worker_models`):
    the :class:`~needleforge.stages.represent_video.SceneRunner` of :func:`run_on_threads`.
    """

    def __init__(self, params: ObjectParams, *, registry: Registry, workers: int) -> None:
        self._params, self._registry = params, registry
        self._pool = ThreadPoolExecutor(max_workers=workers,
                                        thread_name_prefix="represent-scene")

    def submit(self, work: Callable[[Models], _S]) -> Future[_S]:
        """Start ``work`` on a pool thread with that thread's models."""
        return self._pool.submit(
            lambda: work(worker_models(self._params, registry=self._registry)))

    def close(self) -> None:
        """Stop the threads: queued work is dropped, running work finishes."""
        self._pool.shutdown(wait=True, cancel_futures=True)


def run_on_threads(
    jobs: Sequence[RepresentJob], *, scene_params: SceneParams, object_params: ObjectParams,
    models: Models | None, workers: int, registry: Registry,
) -> Iterator[Representation | RepresentFailure]:
    """Represent ``jobs`` on ``workers`` threads, yielding results in job order; their
    scenes' model work runs on ``workers`` more threads with models of their own
    (:class:`SceneModelPool`; none when ``models`` is None: a scenes-only run). ``models`` (the
    caller's) only names the backends in each result's config hash.

    Why threads: decoding and the models release the GIL. Why a pool for the scenes: a video
    decodes in order on one thread, and when one long video was left (the sample's three
    7-minute programs on two workers) one core idled for a third of the stage; now both
    threads of the pool take its scenes while it decodes. The longest videos still start
    first, and results come back in job order, so the store is written in the same order,
    with the same rows, as by one thread.
    """
    pool = SceneModelPool(object_params, registry=registry, workers=workers) if models else None

    def one(job: RepresentJob) -> Representation | RepresentFailure:
        return run_job(job, scene_params=scene_params, object_params=object_params,
                       models=models, scenes_on=pool)

    longest_first = sorted(jobs, key=lambda j: -j.video.media.duration_s)
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="represent") as videos:
        futures = {id(job): videos.submit(one, job) for job in longest_first}
        try:
            for job in jobs:
                yield futures[id(job)].result()
        finally:
            for future in futures.values():
                future.cancel()
            if pool is not None:
                pool.close()


def run_job(
    job: RepresentJob, *, scene_params: SceneParams, object_params: ObjectParams,
    models: Models | None, scenes_on: SceneModelPool | None = None,
) -> Representation | RepresentFailure:
    """Represent one planned video; a project error becomes a :class:`RepresentFailure`.

    The failure names the video's source file first (stored files are named by hash).
    ``scenes_on``: see :func:`~needleforge.stages.represent_video.represent_video`.
    """
    try:
        return represent_video(job.video, scene_params=scene_params,
                               object_params=object_params if models else None, models=models,
                               scenes=job.scenes, scenes_on=scenes_on)
    except NeedleforgeError as err:
        return RepresentFailure(job.video.video_id, f"{job.video.source_path}: {err}")


@dataclasses.dataclass(frozen=True, slots=True)
class RepresentOutcome:
    """What a represent run did: videos done, already current, and the ones that failed
    (``stage_failures``: the same, named by source path for changelogs and flows)."""

    represented: int
    current: int
    failures: tuple[RepresentFailure, ...]
    counts: dict[str, int]
    stage_failures: tuple[StageFailure, ...] = ()


#: Runs planned represent jobs and yields each result in job order (see
#: :func:`represent_store`); ``models`` are the calling process's backends (None for the
#: scenes step), which a runner fanning jobs out to other workers does not use.
JobRunner = Callable[[Sequence[RepresentJob], Models | None],
                     Iterable[Representation | RepresentFailure]]


def represent_store(
    *, db: Path, params: Params, step: Step, on_video: OnCount | None = None,
    run_jobs: JobRunner | None = None,
) -> RepresentOutcome:
    """Represent the videos of ``db`` that are not current, storing each as it finishes.

    One transaction per video, so a killed run resumes by skipping finished videos; a video
    that fails is reported and keeps whatever it had stored. ``on_video(done, total)`` is
    called once the jobs are planned and after each video (a progress bar). ``run_jobs``
    runs the planned jobs, by default on ``runner.workers`` threads of this process
    (:func:`run_on_threads`; one after another with 1 worker or 1 job); the represent flow
    passes one that fans them out as tasks. Either way each worker has its own backends and
    this process alone writes the store, in job order.

    Raises:
        StoreError: ``db`` is not a usable store. BackendError: an unknown backend name.
    """
    models = None if step == "scenes" else load_models(params.objects,
                                                       registry=default_registry())
    wanted = config_hash(params.scenes, params.objects if models else None, models)
    run = run_jobs or functools.partial(_run_here, scene_params=params.scenes,
                                        object_params=params.objects, runner=params.runner)
    failures: list[RepresentFailure] = []
    with Store(db) as store:
        videos = store.videos()
        jobs = plan_represent(
            videos, step=step, wanted_hash=wanted, stored_hashes=store.representation_hashes(),
            stored_scenes={v.video_id: tuple(store.scenes(v.video_id)) for v in videos})
        if on_video is not None:
            on_video(0, len(jobs))  # the total from the start, not after the first video
        for done, result in enumerate(run(jobs, models), start=1):
            if isinstance(result, RepresentFailure):
                failures.append(result)
            else:
                store.record_representation(result)
            if on_video is not None:
                on_video(done, len(jobs))
        counts = store.counts()
    by_id = {v.video_id: v for v in videos}
    named = tuple(from_represent(f.video_id, f.error, videos=by_id) for f in failures)
    return RepresentOutcome(len(jobs) - len(failures), len(videos) - len(jobs),
                            tuple(failures), counts, named)


def _run_here(jobs: Sequence[RepresentJob], models: Models | None, *,
              scene_params: SceneParams, object_params: ObjectParams, runner: RunnerParams
              ) -> Iterator[Representation | RepresentFailure]:
    """The default :data:`JobRunner`: the jobs on ``runner.workers`` threads of this process,
    or each in turn with ``models`` when there is one worker or one job."""
    workers = min(runner.workers, len(jobs))
    if workers > 1:
        yield from run_on_threads(jobs, scene_params=scene_params, object_params=object_params,
                                  models=models, workers=workers, registry=default_registry())
        return
    for job in jobs:
        yield run_job(job, scene_params=scene_params, object_params=object_params,
                      models=models)
