"""Stage functions over a store path and params: what the CLI commands, DVC and Prefect share.

Each function does one stage's work and its store writes (the caller's process is the single
writer) and returns the stage's own result object for reporting; none prints. The CLI
commands call these; the Prefect flows (``flows/``) call them or fan their per-item work out.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from needleforge.backends import default_registry
from needleforge.backends.registry import Registry
from needleforge.config import ObjectParams, Params, RunnerParams, SceneParams
from needleforge.failures import StageFailure, from_represent
from needleforge.montage_render import RenderReport, render_montages
from needleforge.nemo import (
    ExpansionResult,
    GenerationResult,
    VideoKeyframes,
    build_backends,
    build_probe,
    expand,
    generate,
    index_tables,
    select_targets,
)
from needleforge.nemo.checks.negative_scan import ProbeCost, TiledProbe
from needleforge.nemo.video_keyframes import VERIFY_PER_SCENE
from needleforge.progress import OnCount
from needleforge.quality import (
    GateResult,
    QualityError,
    read_questions_jsonl,
    read_release,
    run_gate,
)
from needleforge.quality import validate as run_validate
from needleforge.records import Montage, Representation, Scene, SceneScan, Video
from needleforge.release import ReleaseReport, build_release
from needleforge.release.history import Fingerprint, latest_release, releases_by_build_time
from needleforge.represent import (
    Models,
    RepresentFailure,
    RepresentJob,
    Step,
    config_hash,
    load_models,
    plan_represent,
    run_job,
    run_on_threads,
)
from needleforge.store import Store
from needleforge.vnbench.records import VNBenchResult


@dataclasses.dataclass(frozen=True, slots=True)
class GenerateOutcome:
    """What NeMo stage 2 did, and what its negative check (when on) cost."""

    result: GenerationResult
    probe_cost: ProbeCost | None


def generate_store(*, db: Path, params: Params,
                   on_step: OnCount | None = None) -> GenerateOutcome:
    """NeMo stage 2 into ``db``: targets, questions, negatives, short montages, verdicts.

    The short single-needle montages are replaced as a whole (one transaction), so a rerun
    writes the same rows. With ``nemo.check_negatives`` each negative candidate of an object
    target is searched for the target's label first (upscaled detection on denser frames);
    scans the store already holds for that check are reused and new ones are stored, even
    when generation fails. ``on_step(done, total)``: each target planned and verified
    (:func:`~needleforge.nemo.generate.generate`).

    Raises:
        StoreError: ``db`` is not a usable store. BackendError: an unknown backend name.
        NemoError: inconsistent inputs.
    """
    registry = default_registry()
    describer, verifier = build_backends(params.nemo, registry=registry)
    with Store(db) as store:
        videos = store.videos()
        probe = _stored_probe(store, params, registry)
        try:
            with VideoKeyframes({v.video_id: v for v in videos},
                                per_scene=VERIFY_PER_SCENE) as keyframes:
                result = generate(videos=videos, scenes=store.scenes(),
                                  tags=store.scene_tags(), objects=store.objects(),
                                  params=params.nemo, describer=describer, verifier=verifier,
                                  keyframes=keyframes, probe=probe, on_step=on_step)
        finally:
            _keep_scans(store, probe)
        store.record_generation(result.montages, result.questions, result.verifications,
                                replace_buckets=["short"])
    return GenerateOutcome(result, probe.cost if probe is not None else None)


def expand_store(*, db: Path, params: Params,
                 on_group: OnCount | None = None) -> ExpansionResult:
    """NeMo stage 3 into ``db``: medium/long and multi-needle montages from verified short ones.

    Stage 3 owns the medium/long montages and the short multi-needle ones it made: those
    are dropped and rewritten, so a rerun on the same store writes the same rows. With
    ``nemo.check_negatives`` the new negatives of object montages are checked like stage 2's,
    reusing the scans stage 2 stored. ``on_group(done, total)``: the montage groups of every
    lane as they are planned (:func:`~needleforge.nemo.expand.expand`).

    Raises:
        StoreError: ``db`` is not a usable store. NemoError: inconsistent inputs.
    """
    with Store(db) as store:
        probe = _stored_probe(store, params, default_registry())
        try:
            result = expand(
                videos=store.videos(), scenes=store.scenes(), tags=store.scene_tags(),
                objects=store.objects(), montages=store.montages(),
                questions=store.questions(), verifications=store.verifications(),
                params=params.expand, nemo=params.nemo, probe=probe, on_group=on_group)
        finally:
            _keep_scans(store, probe)
        if probe is not None:
            result = dataclasses.replace(result, probe_cost=probe.cost)
        stale = [m.montage_id for m in store.montages() if m.bucket != "short"
                 or any(s.needle_index for s in m.segments)]
        store.drop_montages(stale)
        store.record_generation(result.montages, result.questions, result.verifications)
    return result


@dataclasses.dataclass(frozen=True, slots=True)
class ScanJob:
    """Scenes of one video for the negative check to scan ahead of stage 2 (one task)."""

    video: Video
    scenes: tuple[Scene, ...]


def scan_jobs(*, db: Path, params: Params) -> list[ScanJob]:
    """What the negative check would look at in stage 2 and has not stored yet: every scene
    (at least ``nemo.min_negative_s`` long) of each video holding an object target, less the
    scenes already scanned by the same probe configuration. [] when the check is off.

    Scanning these ahead, one task per video on a runner, spreads the check's cost (most of
    stage 2's) over workers; stage 2 then reuses the stored scans. Expand may still scan
    scenes of other videos itself.

    Raises:
        StoreError: ``db`` is not a usable store. BackendError: an unknown detector.
    """
    with Store(db) as store:  # opened for writing: an older store is migrated first
        probe = build_probe(params.nemo, videos=[], registry=default_registry())
        if probe is None:
            return []
        probe.close()
        done = {s.scene_id for s in store.negative_scans(probe.key)}
        videos = {v.video_id: v for v in store.videos()}
        scenes = store.scenes()
        tables = index_tables(scenes, tags=store.scene_tags(), objects=store.objects(),
                              video_ids=list(videos))
    wanted = {t.video_id for t in select_targets(tables, params=params.nemo)
              if t.target_object is not None}
    jobs: dict[str, list[Scene]] = {}
    for scene in scenes:
        if (scene.video_id in wanted and scene.scene_id not in done
                and scene.duration_s + 1e-6 >= params.nemo.min_negative_s):
            jobs.setdefault(scene.video_id, []).append(scene)
    return [ScanJob(videos[vid], tuple(found)) for vid, found in sorted(jobs.items())]


def record_scans(*, db: Path, scans: Sequence[SceneScan]) -> int:
    """Store scans made by :func:`~needleforge.nemo.checks.build.scan_scenes`
    (one transaction).

    Raises:
        StoreError: ``db`` is not a usable store, or a scan names an unknown scene.
    """
    with Store(db) as store:
        return store.record_negative_scans(scans)


def _stored_probe(store: Store, params: Params, registry: Registry) -> TiledProbe | None:
    """The negative check ``params`` ask for (None when off), with the scans ``store``
    already holds for its configuration preloaded (label and instance scans)."""
    probe = build_probe(params.nemo, videos=store.videos(), registry=registry)
    if probe is not None:
        probe.preload(store.negative_scans())
    return probe


def _keep_scans(store: Store, probe: TiledProbe | None) -> None:
    """Store the scans ``probe`` made and close it; runs even when the stage fails, since
    the scans are facts about the scenes and cost the most of the stage."""
    if probe is not None:
        try:
            store.record_negative_scans(probe.new_scans())
        finally:
            probe.close()


@dataclasses.dataclass(frozen=True, slots=True)
class RenderInputs:
    """What rendering reads from a store: every montage, and the scenes and videos by id."""

    montages: list[Montage]
    scenes_by_id: dict[str, Scene]
    videos_by_id: dict[str, Video]


def render_inputs(*, db: Path) -> RenderInputs:
    """Read what :func:`render_store` and the render flow render (read-only: rendering writes
    files, never DuckDB).

    Raises:
        StoreError: ``db`` is not a usable store.
    """
    with Store(db, read_only=True) as store:
        return RenderInputs(montages=store.montages(),
                            scenes_by_id={s.scene_id: s for s in store.scenes()},
                            videos_by_id={v.video_id: v for v in store.videos()})


def render_store(*, db: Path, out: Path, cache_dir: Path | None, params: Params,
                 on_step: OnCount | None = None) -> RenderReport:
    """Render every montage of ``db`` to ``out/<montage_id>.mp4`` (current ones are skipped).
    ``on_step(done, total)``: each scene clip encoded and each montage joined.

    Raises:
        StoreError: ``db`` is not a usable store. MediaError: a plan cannot be rendered.
    """
    inputs = render_inputs(db=db)
    return render_montages(inputs.montages, scenes_by_id=inputs.scenes_by_id,
                           videos_by_id=inputs.videos_by_id, out_dir=out,
                           cache_dir=cache_dir or out / ".cache", params=params.render,
                           on_step=on_step)


def run_checks(*, db: Path, out: Path, params: Params, questions: Path | None = None,
               release_dir: Path | None = None, on_step: OnCount | None = None) -> GateResult:
    """Run the quality gate on ``db`` (and a release) and return its verdict; never raises on
    a failing expectation.

    ``questions`` checks a bare ``questions.jsonl``; ``release_dir`` checks a whole release
    folder: its questions, videos and ``sources.json`` licences on the release day
    (``release.release_date``, else today) against ``release.required_scopes``. NeMo
    videos are required when the folder holds any montage video. ``on_step(done, total)``:
    the gate's steps (:func:`~needleforge.quality.gate.run_gate`).

    Raises:
        QualityError: the gate could not run or the release's files cannot be read.
        StoreError: ``db`` is not a usable store.
    """
    if release_dir is None:
        return run_validate(db, out_dir=out, questions=questions, params=params.quality,
                            on_step=on_step)
    families = frozenset({"vnbench"} | ({"nemo"} if _ships_nemo_videos(release_dir) else set()))
    return _release_gate(db=db, root=release_dir, out=out, params=params, families=families,
                         on_step=on_step)


def validate_store(*, db: Path, out: Path, params: Params, questions: Path | None = None,
                   release_dir: Path | None = None) -> GateResult:
    """:func:`run_checks`, raising when the gate fails (for flows: a failed gate stops them).

    Raises:
        QualityError: the gate failed (the message lists every failing expectation) or could
            not run. StoreError: ``db`` is not a usable store.
    """
    result = run_checks(db=db, out=out, params=params, questions=questions,
                        release_dir=release_dir)
    if not result.passed:
        raise QualityError(f"quality gate failed for {db}:\n{result.to_text()}")
    return result


def _ships_nemo_videos(root: Path) -> bool:
    """Whether a release holds rendered montages: then every NeMo question's video must exist.

    Raises:
        QualityError: ``questions.jsonl`` cannot be read.
    """
    for r in read_questions_jsonl(root / "questions.jsonl"):
        if isinstance(r, dict) and r.get("family") == "nemo" and isinstance(r.get("video"), str) \
                and (root / r["video"]).is_file():
            return True
    return False


def _release_gate(*, db: Path, root: Path, out: Path, params: Params,
                  families: frozenset[str], on_step: OnCount | None = None) -> GateResult:
    inputs = read_release(root, video_families=families, day=params.release.check_day(),
                          required_scopes=params.release.required_scopes)
    return run_gate(db=db, release_questions=None, out_dir=out, params=params.quality,
                    release=inputs, on_step=on_step)


def previous_release(out_root: Path, *, name: str) -> Path | None:
    """The release under ``out_root`` to write ``name``'s changelog against, or None.

    That is the release (a folder with a ``manifest.json``) built last, by the build time
    in its ``build.json`` (see :mod:`needleforge.release.history`), not by name: a name
    such as ``sample`` says nothing of when it was built.

    Raises:
        ReleaseError: a release's ``build.json`` is malformed.
    """
    latest = latest_release(out_root, exclude=name)
    return latest.path if latest is not None else None


def earlier_releases(out_root: Path, *, name: str) -> list[Path]:
    """Every release under ``out_root`` other than ``name`` (folders with a
    ``manifest.json``), oldest build first: the ``earlier`` of a refresh's release.

    Raises:
        ReleaseError: a release's ``build.json`` is malformed.
    """
    return [b.path for b in releases_by_build_time(out_root, exclude=name)]


def release_store(*, db: Path, name: str, out_root: Path, render_dir: Path | None,
                  params: Params, previous: Path | None, vnbench_dir: Path | None = None,
                  earlier: Sequence[Path] = (), overwrite: bool = False,
                  on_gate: Callable[[GateResult], None] | None = None,
                  failures: Sequence[StageFailure] = (),
                  inputs: Fingerprint | None = None,
                  on_step: OnCount | None = None) -> ReleaseReport:
    """Build ``out_root/name`` from ``db`` (+ the VNBench folder), gated by every GX suite.

    The gate runs on the finished release before it is moved into place: the store suites,
    the release's questions (VNBench rows included) and its ``sources.json`` licences; its
    Data Docs land in ``<release>/quality``. ``earlier`` lists earlier releases whose
    sources are flagged as contamination. ``on_gate`` sees the gate's result (a report).
    ``failures``, ``inputs`` and ``on_step``: see :func:`needleforge.release.build_release`.

    Raises:
        ReleaseError: see :func:`needleforge.release.build_release`.
        QualityError: the gate failed (every failing expectation is listed); no release is
            written and an existing one is left as it was.
    """
    def gate(root: Path, families: frozenset[str]) -> GateResult:
        result = _release_gate(db=db, root=root, out=root, params=params, families=families)
        if on_gate is not None:
            on_gate(result)
        if not result.passed:
            raise QualityError(f"release {name} failed its quality gate:\n{result.to_text()}")
        return result

    return build_release(db=db, name=name, out_root=out_root, render_dir=render_dir,
                         params=params, previous=previous, overwrite=overwrite,
                         vnbench_dir=vnbench_dir, earlier=earlier, gate=gate,
                         failures=failures, inputs=inputs, on_step=on_step)


def vnbench_store(*, db: Path, out: Path, cache_dir: Path | None, params: Params,
                  on_step: OnCount | None = None) -> VNBenchResult:
    """Build, render and export a VNBench set from ``db``'s videos into ``out``.
    ``on_step(done, total)``: each haystack screened and each sample rendered
    (:func:`~needleforge.vnbench.build_vnbench`).

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
                           embedder=embedder, on_step=on_step)
    write_jsonl(result.questions, path=out / "questions.jsonl")
    write_vnbench_json(result.vnbench_json, path=out / "vnbench.json")
    return result


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
    called after each video (a progress bar). ``run_jobs`` runs the planned jobs, by default
    on ``runner.workers`` threads of this process (:func:`~needleforge.represent.
    run_on_threads`; one after another with 1 worker or 1 job); the represent flow passes one
    that fans them out as tasks. Either way each worker has its own backends and this
    process alone writes the store, in job order.

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
                                  objects=models is not None, workers=workers,
                                  registry=default_registry())
        return
    for job in jobs:
        yield run_job(job, scene_params=scene_params, object_params=object_params,
                      models=models)
