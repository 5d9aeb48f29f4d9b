"""Prefect flow: render every montage of a store, fanned out over the task runner.

Two waves of tasks: first the scene clips the montages need (each distinct clip once, in
batches spread over the workers) fill the scene-clip cache; then the montages are joined by
stream copy in batches, every clip now a cache hit. The flow process reads the store
(read-only: rendering writes files, never DuckDB), checks every plan before anything is
encoded (:func:`needleforge.stages.render.plan_render`, as ``needleforge render`` does), and sums
the workers' reports. Workers must see the stored media, the cache and the output folder at
the same paths (a shared filesystem); clips and montages are written under temporary names
and renamed into place, and the same inputs give the same bytes anywhere, so two workers
racing on one clip both write identical files.
Run: ``python -m flows.render [--db DB] --out data/render [--cache data/cache/clips]
[--params params.yaml] [--runner dask --workers 2]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

from prefect import flow, task

from flows._cli import flow_parser, run_main, runner_of
from flows._progress import run_progress
from needleforge.media.cache import ClipResult, ClipSpec
from needleforge.orchestration.runners import default_task_runner, with_runner
from needleforge.params import RenderParams, RunnerParams, resolve_params
from needleforge.records import Montage, Scene, Video
from needleforge.runtime.progress import Steps
from needleforge.stages.render import (
    RenderReport,
    batch_counts,
    batch_sources,
    batches,
    encode_clips,
    join_montages,
    plan_render,
    render_inputs,
)

_T = TypeVar("_T")


@task(name="encode-scene-clips", retries=1)
def encode_clips_task(specs: list[ClipSpec], cache_dir: Path,
                      profile: RenderParams) -> list[ClipResult]:
    return encode_clips(specs, cache_dir=cache_dir, params=profile)


@task(name="join-montages", retries=1)
def join_montages_task(
    montages: list[Montage], scenes: dict[str, Scene], videos: dict[str, Video],
    out: Path, cache_dir: Path, profile: RenderParams,
) -> RenderReport:
    return join_montages(montages, scenes_by_id=scenes, videos_by_id=videos, out_dir=out,
                         cache_dir=cache_dir, params=profile)


@flow(name="render", log_prints=True, task_runner=default_task_runner())
def render_flow(db: Path, out: Path, cache_dir: Path | None = None,
                params_path: Path | None = None, workers: int = 2) -> dict[str, int]:
    """Render the montages of ``db`` a release could ship into ``out/<montage_id>.mp4``
    (:func:`~needleforge.stages.render.shippable`); returns counts (``refused``: montages left
    out because the verifier refused every question on them).

    ``workers`` only sizes the batches (the task runner decides where they run). Current
    montages (same plan, output present) are skipped; clips already cached are not encoded.

    Raises:
        StoreError: ``db`` is not a usable store. MediaError: a plan cannot be rendered
            (checked for every montage before anything is encoded), a source is missing, or
            ffmpeg fails (the montages finished before stay, and a rerun skips them).
    """
    params = resolve_params(params_path)
    profile = params.render
    cache = cache_dir or out / ".cache"
    stored = render_inputs(db=db, release=params.release)
    scenes, videos = stored.scenes_by_id, stored.videos_by_id
    plan = plan_render(stored.montages, scenes_by_id=scenes, videos_by_id=videos,
                       out_dir=out, cache_dir=cache, params=profile)
    clip_batches = batches(list(plan.owners), workers=workers)
    montage_batches = batches([j.montage for j in plan.todo], workers=workers)
    with run_progress("render", "task batches") as report:
        done = Steps(len(clip_batches) + len(montage_batches), report)
        # Every batch of a wave is submitted before any result is awaited.
        encoded = [_counted(f.result(), done) for f in [
            encode_clips_task.submit(batch, cache, profile) for batch in clip_batches]]
        joined = [_counted(f.result(), done) for f in [
            join_montages_task.submit(
                batch, *batch_sources(batch, scenes_by_id=scenes, videos_by_id=videos),
                out, cache, profile)
            for batch in montage_batches]]
    counts = batch_counts(plan, [clip for batch in encoded for clip in batch], joined)
    counts["refused"] = len(stored.refused)
    print(f"rendered {counts}")
    return counts


def _counted(result: _T, steps: Steps) -> _T:
    """``result`` of a batch, counted as one step."""
    steps()
    return result


def run_render(db: Path, out: Path, cache_dir: Path | None = None,
               params_path: Path | None = None, *,
               runner: RunnerParams | None = None) -> dict[str, int]:
    """:func:`render_flow` on the task runner ``runner`` describes (default: the params
    file's ``runner:`` section).

    Raises:
        ConfigError: the runner's package is missing or its cluster address is unreachable.
        See :func:`render_flow` for the rest.
    """
    settings = runner or resolve_params(params_path).runner
    return with_runner(render_flow, settings)(db, out, cache_dir, params_path,
                                              settings.workers)


def main(argv: Sequence[str] | None = None) -> None:
    parser = flow_parser(__doc__, runner=True)
    parser.add_argument("--out", type=Path, default=Path("data/render"))
    parser.add_argument("--cache", type=Path, default=None,
                        help="scene-clip cache (default: OUT/.cache)")
    run_main(parser, lambda a: run_render(a.db, a.out, a.cache, a.params, runner=runner_of(a)),
             argv)


if __name__ == "__main__":
    main()
