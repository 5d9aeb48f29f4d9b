"""The nemo stage (NeMo stage 2): targets, written questions, negatives, short montages and
their self-verification, into the store; and the negative check's scans, which the generate
flow makes ahead of it, one task per video (:func:`scan_jobs`, :func:`record_scans`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from needleforge.backends import default_registry
from needleforge.backends.registry import Registry
from needleforge.nemo import (
    GenerationResult,
    VideoKeyframes,
    build_backends,
    build_probe,
    generate,
    index_tables,
    select_targets,
)
from needleforge.nemo.checks.negative_probe import ProbeCost
from needleforge.nemo.checks.negative_scan import TiledProbe
from needleforge.nemo.video_keyframes import VERIFY_PER_SCENE
from needleforge.params import Params
from needleforge.records import Scene, SceneScan, Video
from needleforge.runtime.progress import OnCount
from needleforge.store import Store


@dataclasses.dataclass(frozen=True, slots=True)
class GenerateOutcome:
    """What NeMo stage 2 did, and what its negative check (when on) cost."""

    result: GenerationResult
    probe_cost: ProbeCost | None


def generate_store(*, db: Path, params: Params,
                   on_step: OnCount | None = None) -> GenerateOutcome:
    """NeMo stage 2 into ``db``: targets, questions, negatives, short montages, verdicts.

    The short single-needle montages are replaced as a whole (one transaction), so a rerun
    writes the same rows. With ``nemo.check.negatives`` each negative candidate of an object
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
        probe = stored_probe(store, params, registry)
        try:
            with VideoKeyframes({v.video_id: v for v in videos},
                                per_scene=VERIFY_PER_SCENE) as keyframes:
                result = generate(videos=videos, scenes=store.scenes(),
                                  tags=store.scene_tags(), objects=store.objects(),
                                  params=params.nemo, describer=describer, verifier=verifier,
                                  keyframes=keyframes, probe=probe, on_step=on_step)
        finally:
            keep_scans(store, probe)
        store.record_generation(result.montages, result.questions, result.verifications,
                                replace_buckets=["short"])
    return GenerateOutcome(result, probe.cost if probe is not None else None)



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


def stored_probe(store: Store, params: Params, registry: Registry) -> TiledProbe | None:
    """The negative check ``params`` ask for (None when off), with the scans ``store``
    already holds for its configuration preloaded (label and instance scans)."""
    probe = build_probe(params.nemo, videos=store.videos(), registry=registry)
    if probe is not None:
        probe.preload(store.negative_scans())
    return probe


def keep_scans(store: Store, probe: TiledProbe | None) -> None:
    """Store the scans ``probe`` made and close it; runs even when the stage fails, since
    the scans are facts about the scenes and cost the most of the stage."""
    if probe is not None:
        try:
            store.record_negative_scans(probe.new_scans())
        finally:
            probe.close()
