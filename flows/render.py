"""Prefect flow: render every montage of a store, fanned out over the task runner.

Two waves of tasks: first the scene clips the montages need (each distinct clip once, in
batches spread over the workers) fill the scene-clip cache; then the montages are joined by
stream copy in batches, every clip now a cache hit. The flow process reads the store
(read-only: rendering writes files, never DuckDB), checks every plan before anything is
encoded, and sums the workers' reports. Workers must see the stored media, the cache and the
output folder at the same paths (a shared filesystem); clips and montages are written under
temporary names and renamed into place, and the same inputs give the same bytes anywhere,
so two workers racing on one clip both write identical files.
Run: ``python -m flows.render --db data/needleforge.duckdb --out data/render
[--cache data/cache/clips] [--params params.yaml] [--runner dask --workers 2]``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

from prefect import flow, task
from prefect.task_runners import ThreadPoolTaskRunner

from needleforge.config import PARAMS_HELP, Params, RenderParams, RunnerParams, resolve_params
from needleforge.media.cache import ClipResult, ClipSpec, SceneClipCache
from needleforge.records import Montage, Scene, Video

# The render stage's plan checks and clip list; shared so the flow encodes exactly the clips
# render_montages will look for.
from needleforge.render import (
    RenderReport,
    check_sources,
    first_users,
    is_current,
    montage_job,
    render_montages,
)
from needleforge.runners import add_runner_arguments, runner_from_args, with_runner
from needleforge.store import Store

_T = TypeVar("_T")
#: Batches per worker in each wave: enough to balance uneven clips, few enough that task
#: overhead (one API round trip each) stays small next to an encode.
BATCHES_PER_WORKER = 3


@task(name="encode-scene-clips", retries=1)
def encode_clips_task(specs: list[ClipSpec], cache_dir: Path,
                      profile: RenderParams) -> list[ClipResult]:
    cache = SceneClipCache(cache_dir, profile=profile)
    return [cache.ensure(spec) for spec in specs]


@task(name="join-montages", retries=1)
def join_montages_task(
    montages: list[Montage], scenes: dict[str, Scene], videos: dict[str, Video],
    out: Path, cache_dir: Path, profile: RenderParams,
) -> RenderReport:
    return render_montages(montages, scenes_by_id=scenes, videos_by_id=videos, out_dir=out,
                           cache_dir=cache_dir, params=profile.model_copy(update={"workers": 1}))


_RUNNER: ThreadPoolTaskRunner[Any] = ThreadPoolTaskRunner(max_workers=2)


@flow(name="render", log_prints=True, task_runner=_RUNNER)  # type: ignore[arg-type]
def render_flow(db: Path, out: Path, cache_dir: Path | None = None,
                params_path: Path | None = None, workers: int = 2) -> dict[str, int]:
    """Render the montages of ``db`` into ``out/<montage_id>.mp4``; returns counts.

    ``workers`` only sizes the batches (the task runner decides where they run). Current
    montages (same plan, output present) are skipped; clips already cached are not encoded.

    Raises:
        StoreError: ``db`` is not a usable store. MediaError: a plan cannot be rendered
            (checked for every montage before anything is encoded), a source is missing, or
            ffmpeg fails (the montages finished before stay, and a rerun skips them).
    """
    profile = resolve_params(params_path).render
    cache = cache_dir or out / ".cache"
    with Store(db, read_only=True) as store:
        montages = store.montages()
        scenes = {s.scene_id: s for s in store.scenes()}
        videos = {v.video_id: v for v in store.videos()}
    jobs = [montage_job(m, scenes_by_id=scenes, videos_by_id=videos, params=profile)
            for m in montages]
    out.mkdir(parents=True, exist_ok=True)
    todo = [j for j in jobs if not is_current(j, out)]
    owners = first_users(todo)
    check_sources(owners, cache=SceneClipCache(cache, profile=profile), videos_by_id=videos)
    specs = list(owners)
    encoded = [f.result() for f in [encode_clips_task.submit(batch, cache, profile)
                                    for batch in _batches(specs, workers)]]
    clips = [clip for batch in encoded for clip in batch]
    todo_montages = [j.montage for j in todo]
    joined = [f.result() for f in [
        join_montages_task.submit(batch, *_subset(batch, scenes, videos), out, cache, profile)
        for batch in _batches(todo_montages, workers)]]
    counts = {"montages": len(montages), "rendered": sum(len(r.montages) for r in joined),
              "skipped": len(montages) - len(todo),
              "clips_encoded": sum(1 for c in clips if not c.hit),
              "clips_cached": sum(1 for c in clips if c.hit),
              "join_misses": sum(r.cache_misses for r in joined)}
    print(f"rendered {counts}")
    return counts


def _batches(items: Sequence[_T], workers: int) -> list[list[_T]]:
    """``items`` dealt round-robin into at most ``workers * BATCHES_PER_WORKER`` batches."""
    n = min(len(items), max(1, workers) * BATCHES_PER_WORKER)
    return [list(items[i::n]) for i in range(n)]


def _subset(montages: Sequence[Montage], scenes: dict[str, Scene],
            videos: dict[str, Video]) -> tuple[dict[str, Scene], dict[str, Video]]:
    """Only the scenes and videos ``montages`` use: what a batch ships to its worker."""
    scene_ids = {s.scene_id for m in montages for s in m.segments}
    used = {i: scenes[i] for i in scene_ids}
    return used, {s.video_id: videos[s.video_id] for s in used.values()}


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", type=Path, default=Path("data/needleforge.duckdb"))
    parser.add_argument("--out", type=Path, default=Path("data/render"))
    parser.add_argument("--cache", type=Path, default=None,
                        help="scene-clip cache (default: OUT/.cache)")
    parser.add_argument("--params", type=Path, default=None, help=PARAMS_HELP)
    add_runner_arguments(parser)
    args = parser.parse_args()
    params: Params = resolve_params(args.params)
    run_render(args.db, args.out, args.cache, args.params,
               runner=runner_from_args(params.runner, args))


if __name__ == "__main__":
    main()
