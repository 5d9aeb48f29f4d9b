"""Stage functions over a store path and params: what the CLI commands, DVC and Prefect share.

Each function does one stage's work and its store writes (the caller's process is the single
writer) and returns the stage's own result object for reporting; none prints. Ingest,
represent and NeMo generation already have flow entry points (``flows/``); the stages here
are the ones only the CLI wired until now: expand, render, validate, release.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from needleforge.backends import default_registry
from needleforge.config import Params
from needleforge.nemo import ExpansionResult, expand
from needleforge.quality import GateResult, QualityError
from needleforge.quality import validate as run_validate
from needleforge.release import ReleaseReport, build_release
from needleforge.render import RenderReport, render_montages
from needleforge.represent import (
    RepresentFailure,
    Step,
    config_hash,
    load_models,
    plan_represent,
    run_job,
)
from needleforge.store import Store
from needleforge.vnbench.records import VNBenchResult


def expand_store(*, db: Path, params: Params) -> ExpansionResult:
    """NeMo stage 3 into ``db``: medium/long and multi-needle montages from verified short ones.

    Stage 3 owns the medium/long montages and the short multi-needle ones it made: those
    are dropped and rewritten, so a rerun on the same store writes the same rows.

    Raises:
        StoreError: ``db`` is not a usable store. NemoError: inconsistent inputs.
    """
    with Store(db) as store:
        result = expand(
            videos=store.videos(), scenes=store.scenes(), tags=store.scene_tags(),
            objects=store.objects(), montages=store.montages(), questions=store.questions(),
            verifications=store.verifications(), params=params.expand, nemo=params.nemo)
        stale = [m.montage_id for m in store.montages() if m.bucket != "short"
                 or any(s.needle_index for s in m.segments)]
        store.drop_montages(stale)
        store.record_generation(result.montages, result.questions, result.verifications)
    return result


def render_store(*, db: Path, out: Path, cache_dir: Path | None, params: Params) -> RenderReport:
    """Render every montage of ``db`` to ``out/<montage_id>.mp4`` (current ones are skipped).

    Raises:
        StoreError: ``db`` is not a usable store. MediaError: a plan cannot be rendered.
    """
    with Store(db, read_only=True) as store:
        montages = store.montages()
        scenes_by_id = {s.scene_id: s for s in store.scenes()}
        videos_by_id = {v.video_id: v for v in store.videos()}
    return render_montages(montages, scenes_by_id=scenes_by_id, videos_by_id=videos_by_id,
                           out_dir=out, cache_dir=cache_dir or out / ".cache",
                           params=params.render)


def validate_store(*, db: Path, out: Path, params: Params,
                   questions: Path | None = None) -> GateResult:
    """Run the quality gate on ``db`` (and a release's ``questions``); raise when it fails.

    Raises:
        QualityError: the gate failed (the message lists every failing expectation) or could
            not run. StoreError: ``db`` is not a usable store.
    """
    result = run_validate(db, out_dir=out, questions=questions, params=params.quality)
    if not result.passed:
        raise QualityError(f"quality gate failed for {db}:\n{result.to_text()}")
    return result


def previous_release(out_root: Path, *, name: str) -> Path | None:
    """The release under ``out_root`` to write ``name``'s changelog against, or None.

    That is the release (a folder with a ``manifest.json``) whose name sorts last among
    the others: date-based names (``2026.11.29``) sort in time order.
    """
    if not out_root.is_dir():
        return None
    others = sorted(p for p in out_root.iterdir()
                    if p.name != name and (p / "manifest.json").is_file())
    return others[-1] if others else None


def release_store(*, db: Path, name: str, out_root: Path, render_dir: Path | None,
                  params: Params, previous: Path | None) -> ReleaseReport:
    """Build ``out_root/name`` from ``db`` with a changelog against ``previous``.

    Raises:
        ReleaseError: see :func:`needleforge.release.build_release`.
    """
    return build_release(db=db, name=name, out_root=out_root, render_dir=render_dir,
                         params=params, previous=previous)


def vnbench_store(*, db: Path, out: Path, cache_dir: Path | None, params: Params) -> VNBenchResult:
    """Build, render and export a VNBench set from ``db``'s videos into ``out``.

    Writes ``out/<sample>.mp4`` (+ sidecars), ``out/questions.jsonl`` (scorer records, 4
    rotations per sample) and ``out/vnbench.json`` (VNBench-style).

    Raises:
        StoreError: ``db`` is not a usable store. BackendError: an unknown embedder.
        VNBenchError / MediaError: an asset or a sample cannot be built.
    """
    from needleforge.backends import default_registry
    from needleforge.vnbench import build_vnbench
    from needleforge.vnbench.export import write_jsonl, write_vnbench_json

    embedder = default_registry().create("image_embedder", params.vnbench.embedder,
                                         **params.vnbench.embedder_options)
    with Store(db, read_only=True) as store:
        videos = store.videos()
    result = build_vnbench(videos=videos, params=params.vnbench, out_dir=out,
                           cache_dir=cache_dir or out / ".cache", render=params.render,
                           embedder=embedder)
    write_jsonl(result.questions, path=out / "questions.jsonl")
    write_vnbench_json(result.vnbench_json, path=out / "vnbench.json")
    return result


@dataclasses.dataclass(frozen=True, slots=True)
class RepresentOutcome:
    """What a represent run did: videos done, already current, and the ones that failed."""

    represented: int
    current: int
    failures: tuple[RepresentFailure, ...]
    counts: dict[str, int]


def represent_store(
    *, db: Path, params: Params, step: Step, on_video: Callable[[int, int], None] | None = None,
) -> RepresentOutcome:
    """Represent the videos of ``db`` that are not current, storing each as it finishes.

    One transaction per video, so a killed run resumes by skipping finished videos; a video
    that fails is reported and keeps whatever it had stored. ``on_video(done, total)`` is
    called after each video (a progress bar).

    Raises:
        StoreError: ``db`` is not a usable store. BackendError: an unknown backend name.
    """
    models = None if step == "scenes" else load_models(params.objects,
                                                       registry=default_registry())
    wanted = config_hash(params.scenes, params.objects if models else None, models)
    failures: list[RepresentFailure] = []
    with Store(db) as store:
        videos = store.videos()
        jobs = plan_represent(
            videos, step=step, wanted_hash=wanted, stored_hashes=store.representation_hashes(),
            stored_scenes={v.video_id: tuple(store.scenes(v.video_id)) for v in videos})
        for done, job in enumerate(jobs, start=1):
            result = run_job(job, scene_params=params.scenes, object_params=params.objects,
                             models=models)
            if isinstance(result, RepresentFailure):
                failures.append(result)
            else:
                store.record_representation(result)
            if on_video is not None:
                on_video(done, len(jobs))
        counts = store.counts()
    return RepresentOutcome(len(jobs) - len(failures), len(videos) - len(jobs),
                            tuple(failures), counts)
