"""The render stage: montage plans become mp4 files (DESIGN, "Rendering — the performance core").

Every scene a montage uses is encoded **once** into the normalized scene-clip cache
(:mod:`needleforge.media.cache`), over ``params.workers`` threads (each encode is one
single-threaded ffmpeg child); each montage is then joined from those clips by stream copy
(:func:`needleforge.media.join.render_montage`), so the encode cost grows with the source
hours used, not with the montage hours produced.

A segment ``[src_start_s, src_end_s)`` of scene ``S`` becomes the part
``(clip of S, offset = src_start_s - S.start_s, duration = src_end_s - src_start_s)``, joined
as frames (:func:`needleforge.media.join.plan_pieces`). The offset must fall on a whole second
(the planner guarantees it: the clip has a keyframe there) and the segment's frames inside its
scene's clip; both are checked in frames (:func:`~needleforge.records.span.frame_at`) for
every montage before anything is encoded. Outputs are ``<out_dir>/<montage_id>.mp4`` with a
sidecar ``<montage_id>.json`` holding the plan hash (plan, scene bounds, source hashes,
profile): a montage whose video and sidecar match is skipped. The first failure stops the
stage; montages finished before it stay and are skipped by the rerun.

A montage whose every question the verifier refused is not rendered: no release can ship it
(:func:`shippable`, under the release's own rule ``release.require_all_verdicts``).

The render flow (``flows/render.py``) makes the same :func:`plan_render` and spreads its two
waves over a task runner in batches (:func:`batches`, :func:`encode_clips`,
:func:`join_montages`, :func:`batch_counts`); the same inputs give the same bytes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import TypeVar

from needleforge.errors import MediaError
from needleforge.media.cache import CACHE_VERSION, ClipResult, ClipSpec, SceneClipCache
from needleforge.media.join import RenderedVideo, plan_pieces, render_montage
from needleforge.media.outputs import sweep_scratch, write_text_atomic, writing
from needleforge.params import Params, ReleaseParams, RenderParams
from needleforge.records import (
    Montage,
    Question,
    Scene,
    Verification,
    Video,
    frame_at,
    verdicts_pass,
)
from needleforge.runtime.progress import OnCount, Steps
from needleforge.store import Store

_T = TypeVar("_T")
_U = TypeVar("_U")


@dataclasses.dataclass(frozen=True, slots=True)
class MontageRender:
    """One montage's outcome.

    ``cache_misses`` counts the scene clips first encoded for this montage in this run and
    ``encode_cpu_s`` their ffmpeg CPU seconds; ``cache_hits`` the clips it reused (cached
    before, or encoded for an earlier montage of the run). ``join_cpu_s`` is the CPU time of
    the stream-copy join, ``wall_s`` the wall time of the join and its verification. A
    skipped montage (already rendered from the same plan) has zeros.
    """

    montage_id: str
    path: Path
    duration_s: float
    n_frames: int
    skipped: bool
    cache_hits: int
    cache_misses: int
    encode_cpu_s: float
    join_cpu_s: float
    wall_s: float


@dataclasses.dataclass(frozen=True, slots=True)
class RenderReport:
    """What a render run did.

    ``cache_hits``/``cache_misses`` count the distinct scene clips the run needed that were
    already cached / that it encoded; ``encode_cpu_s`` is those encodes' ffmpeg CPU seconds
    and ``join_cpu_s`` the joins' (muxing thread + any ffmpeg child); ``wall_s`` the whole run.
    ``refused`` names the store's montages not rendered because the verifier refused every
    question on them (:func:`shippable`).
    """

    montages: tuple[MontageRender, ...]
    cache_hits: int
    cache_misses: int
    encode_cpu_s: float
    join_cpu_s: float
    wall_s: float
    refused: tuple[str, ...] = ()

    @property
    def cpu_s(self) -> float:
        """All ffmpeg CPU seconds of the run (cache encodes + joins)."""
        return self.encode_cpu_s + self.join_cpu_s


@dataclasses.dataclass(frozen=True, slots=True)
class MontageJob:
    """A montage to render: its pieces as clip specs, and its plan hash."""

    montage: Montage
    specs: tuple[tuple[ClipSpec, float, float], ...]  # (clip, offset_s, duration_s)
    plan_hash: str


def render_montages(
    montages: Sequence[Montage],
    *,
    scenes_by_id: Mapping[str, Scene],
    videos_by_id: Mapping[str, Video],
    out_dir: Path,
    cache_dir: Path,
    params: RenderParams,
    on_step: OnCount | None = None,
) -> RenderReport:
    """Render every montage to ``<out_dir>/<montage_id>.mp4`` (see module docstring).

    ``on_step(done, total)`` is called as each scene clip is ready and each montage joined
    (``total``: the clips the montages to render need, and those montages).

    Raises :class:`MediaError` naming the montage and segment when a segment's scene or video
    is unknown, crosses its scene's end, or starts at a non-integer offset into its scene,
    or when two montages share an id;
    naming the video id and path when a source file that must be encoded is missing; and
    naming the montage when ffmpeg fails or an output does not match its plan.
    Raises :class:`~needleforge.errors.OutputError` naming the path when ``out_dir`` or
    ``cache_dir`` cannot be written (read-only, disk full); finished montages stay.
    """
    start = time.perf_counter()
    plan = plan_render(montages, scenes_by_id=scenes_by_id, videos_by_id=videos_by_id,
                       out_dir=out_dir, cache_dir=cache_dir, params=params)
    cache = SceneClipCache(cache_dir, profile=params)
    step = Steps(len(plan.owners) + len(plan.todo), on_step)
    with writing(out_dir, what="render"):
        clips = _parallel(cache.ensure, list(plan.owners), workers=params.workers,
                          on_done=step)
        renders = _parallel(lambda job: _render_one(job, clips, out_dir=out_dir, params=params),
                            plan.todo, workers=params.workers, on_done=step)
    rows = {job.montage.montage_id: _row(job, renders[job], clips, plan.owners)
            for job in plan.todo}
    results = tuple(rows.get(j.montage.montage_id) or _skipped(j, out_dir) for j in plan.jobs)
    return RenderReport(
        montages=results,
        cache_hits=sum(1 for r in clips.values() if r.hit),
        cache_misses=sum(1 for r in clips.values() if not r.hit),
        encode_cpu_s=sum(r.cpu_s for r in clips.values()),
        join_cpu_s=sum(r.join_cpu_s for r in results),
        wall_s=time.perf_counter() - start,
    )


@dataclasses.dataclass(frozen=True, slots=True)
class RenderPlan:
    """What a render run must do, checked before anything is encoded.

    ``jobs`` are every montage in the given order; ``todo`` those not current; ``owners``
    every scene clip ``todo`` needs, in order of first use, with the montage using it first.
    """

    jobs: tuple[MontageJob, ...]
    todo: tuple[MontageJob, ...]
    owners: dict[ClipSpec, str]


def plan_render(
    montages: Sequence[Montage],
    *,
    scenes_by_id: Mapping[str, Scene],
    videos_by_id: Mapping[str, Video],
    out_dir: Path,
    cache_dir: Path,
    params: RenderParams,
) -> RenderPlan:
    """Check every montage's plan and sources, create ``out_dir``, sweep the scratch files of
    a killed earlier run, and list the montages and clips still to make.

    The first step of :func:`render_montages` and of the render flow, which encode and join
    what it lists (in a thread pool, or in batches of tasks: :func:`batches`).

    Raises:
        MediaError: see :func:`render_montages` (repeated ids, a bad segment, a missing
            source). OutputError: ``out_dir`` or ``cache_dir`` cannot be written.
    """
    ids = [m.montage_id for m in montages]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise MediaError(f"montage ids must be unique (one output file each); repeated: "
                         f"{repeated}")
    jobs = [montage_job(m, scenes_by_id=scenes_by_id, videos_by_id=videos_by_id, params=params)
            for m in montages]
    with writing(out_dir, what="render"):
        out_dir.mkdir(parents=True, exist_ok=True)
        # Scratch files of a killed earlier run: never let a truncated file outlive it.
        sweep_scratch(out_dir)
        sweep_scratch(cache_dir, recursive=True)
        todo = [j for j in jobs if not is_current(j, out_dir)]
        owners = first_users(todo)
        check_sources(owners, cache=SceneClipCache(cache_dir, profile=params),
                      videos_by_id=videos_by_id)
    return RenderPlan(jobs=tuple(jobs), todo=tuple(todo), owners=owners)


#: Batches per worker in each wave of a render fanned out over a task runner: enough to
#: balance uneven clips, few enough that task overhead (one API round trip each) stays small
#: next to an encode.
BATCHES_PER_WORKER = 3


def batches(items: Sequence[_T], *, workers: int) -> list[list[_T]]:
    """``items`` dealt round-robin into at most ``workers * BATCHES_PER_WORKER`` batches.

    How the render flow fans a :class:`RenderPlan` out: one task per batch of clips to
    encode (:func:`encode_clips`), then one per batch of montages to join
    (:func:`join_montages`).
    """
    n = min(len(items), max(1, workers) * BATCHES_PER_WORKER)
    return [list(items[i::n]) for i in range(n)]


def batch_sources(
    montages: Sequence[Montage], *, scenes_by_id: Mapping[str, Scene],
    videos_by_id: Mapping[str, Video],
) -> tuple[dict[str, Scene], dict[str, Video]]:
    """Only the scenes and videos ``montages`` use: what a batch ships to its worker."""
    scene_ids = {s.scene_id for m in montages for s in m.segments}
    used = {i: scenes_by_id[i] for i in scene_ids}
    return used, {s.video_id: videos_by_id[s.video_id] for s in used.values()}


def encode_clips(specs: Sequence[ClipSpec], *, cache_dir: Path,
                 params: RenderParams) -> list[ClipResult]:
    """Make sure each clip of ``specs`` is in the scene-clip cache, one after another (a
    batch of the first wave); a clip cached already is a hit.

    Raises:
        MediaError: a source cannot be encoded. OutputError: the cache cannot be written.
    """
    cache = SceneClipCache(cache_dir, profile=params)
    return [cache.ensure(spec) for spec in specs]


def join_montages(
    montages: Sequence[Montage], *, scenes_by_id: Mapping[str, Scene],
    videos_by_id: Mapping[str, Video], out_dir: Path, cache_dir: Path, params: RenderParams,
) -> RenderReport:
    """:func:`render_montages` of ``montages`` on one thread (a batch of the second wave:
    their clips are cached, so each montage is a stream-copy join).

    Raises:
        See :func:`render_montages`.
    """
    return render_montages(montages, scenes_by_id=scenes_by_id, videos_by_id=videos_by_id,
                           out_dir=out_dir, cache_dir=cache_dir,
                           params=params.model_copy(update={"workers": 1}))


def batch_counts(plan: RenderPlan, clips: Iterable[ClipResult],
                 joined: Iterable[RenderReport]) -> dict[str, int]:
    """What a render in batches did: montages planned, joined and already current; clips
    encoded and found cached in the first wave, and clips the joins still had to encode
    (``join_misses``: 0 unless the cache lost a clip between the waves)."""
    made, reports = list(clips), list(joined)
    return {"montages": len(plan.jobs), "rendered": sum(len(r.montages) for r in reports),
            "skipped": len(plan.jobs) - len(plan.todo),
            "clips_encoded": sum(1 for c in made if not c.hit),
            "clips_cached": sum(1 for c in made if c.hit),
            "join_misses": sum(r.cache_misses for r in reports)}


def montage_job(
    montage: Montage,
    *,
    scenes_by_id: Mapping[str, Scene],
    videos_by_id: Mapping[str, Video],
    params: RenderParams,
) -> MontageJob:
    """Check a montage's segments against their scenes and turn them into clip pieces.

    Raises:
        MediaError: a segment names a scene or video that is not stored, or its frames do not
            lie inside its scene's clip starting on a whole second (where the clip has a
            keyframe).
    """
    fps = params.fps
    specs: list[tuple[ClipSpec, float, float]] = []
    facts: list[list[object]] = []
    for seg in montage.segments:
        where = f"montage {montage.montage_id}, segment {seg.position}"
        scene = scenes_by_id.get(seg.scene_id)
        if scene is None or scene.video_id != seg.video_id:
            raise MediaError(f"{where}: scene {seg.scene_id} of video {seg.video_id} is not "
                             "among the stored scenes")
        video = videos_by_id.get(scene.video_id)
        if video is None:
            raise MediaError(f"{where}: video {scene.video_id} is not among the stored videos")
        offset_s = seg.src_start_s - scene.start_s
        first = frame_at(offset_s, rate=fps)
        if first < 0 or frame_at(seg.src_end_s - scene.start_s, rate=fps) > frame_at(
                scene.duration_s, rate=fps):
            raise MediaError(f"{where}: [{seg.src_start_s}, {seg.src_end_s}) crosses the "
                             f"bounds of scene {scene.scene_id} [{scene.start_s}, "
                             f"{scene.end_s}); a segment must lie inside one scene")
        if first % fps:
            raise MediaError(f"{where}: starts {offset_s:.3f} s into scene {scene.scene_id}; "
                             "segments must start a whole number of seconds into their scene "
                             "(where the cached clip has a keyframe)")
        spec = ClipSpec(source=Path(video.stored_path), start_s=scene.start_s,
                        end_s=scene.end_s, source_id=video.sha256)
        specs.append((spec, float(first // fps), seg.duration_s))
        facts.append([scene.scene_id, scene.start_s, scene.end_s, video.sha256])
    plan = [seg.to_dict() for seg in montage.segments]
    payload = {"engine": CACHE_VERSION, "id": montage.montage_id, "plan": plan, "scenes": facts,
               "profile": params.model_dump(mode="json", exclude={"workers"})}
    plan_hash = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()
    return MontageJob(montage=montage, specs=tuple(specs), plan_hash=plan_hash)


def _paths(job: MontageJob, out_dir: Path) -> tuple[Path, Path]:
    base = out_dir / job.montage.montage_id
    return base.with_suffix(".mp4"), base.with_suffix(".json")


def is_current(job: MontageJob, out_dir: Path) -> bool:
    """True when the montage's video exists and its sidecar records the same plan hash."""
    video, sidecar = _paths(job, out_dir)
    if not (video.is_file() and sidecar.is_file()):
        return False
    try:
        return bool(json.loads(sidecar.read_text("utf-8")).get("plan_hash") == job.plan_hash)
    except (OSError, ValueError, AttributeError):
        return False  # an unreadable sidecar means "render again"


def first_users(jobs: Iterable[MontageJob]) -> dict[ClipSpec, str]:
    """Every clip the jobs need, in order of first use, with the montage that uses it first."""
    owners: dict[ClipSpec, str] = {}
    for job in jobs:
        for spec, _, _ in job.specs:
            owners.setdefault(spec, job.montage.montage_id)
    return owners


def check_sources(
    owners: Mapping[ClipSpec, str], *, cache: SceneClipCache, videos_by_id: Mapping[str, Video]
) -> None:
    """Fail before encoding anything when a source that must be encoded has vanished."""
    by_path = {Path(v.stored_path): v.video_id for v in videos_by_id.values()}
    for spec, montage_id in owners.items():
        if not cache.path_for(spec).is_file() and not spec.source.is_file():
            raise MediaError(f"video {by_path.get(spec.source, '?')}: source file "
                             f"{spec.source} not found (needed by montage {montage_id})")


def _parallel(fn: Callable[[_T], _U], items: Sequence[_T], *, workers: int,
              on_done: Callable[[], None] | None = None) -> dict[_T, _U]:
    """``{item: fn(item)}`` over a thread pool; the first exception cancels the rest.
    ``on_done()`` is called on this thread as each item finishes."""
    if not items:
        return {}
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures: dict[Future[_U], _T] = {pool.submit(fn, item): item for item in items}
        try:
            for future in as_completed(futures):
                error = future.exception()
                if error is not None:
                    raise error
                if on_done is not None:
                    on_done()
        finally:
            for future in futures:
                future.cancel()  # those not started yet (none, once all finished)
    return {item: future.result() for future, item in futures.items()}


def _render_one(
    job: MontageJob, clips: Mapping[ClipSpec, ClipResult], *, out_dir: Path, params: RenderParams
) -> tuple[RenderedVideo, float]:
    """Join one montage, then write its sidecar; returns the video and the wall seconds."""
    start = time.perf_counter()
    video, sidecar = _paths(job, out_dir)
    pieces = plan_pieces([(clips[spec].path, offset_s, duration_s)
                          for spec, offset_s, duration_s in job.specs],
                         profile=params, name=job.montage.montage_id)
    rendered = render_montage(pieces, video, profile=params, name=job.montage.montage_id)
    record = {"montage_id": job.montage.montage_id, "plan_hash": job.plan_hash,
              "n_frames": rendered.n_frames, "duration_s": rendered.duration_s,
              "profile": params.model_dump(mode="json", exclude={"workers"})}
    write_text_atomic(sidecar, json.dumps(record, indent=2, sort_keys=True) + "\n",
                      what=f"montage {job.montage.montage_id}")
    return rendered, time.perf_counter() - start


def _row(
    job: MontageJob,
    outcome: tuple[RenderedVideo, float],
    clips: Mapping[ClipSpec, ClipResult],
    owners: Mapping[ClipSpec, str],
) -> MontageRender:
    rendered, wall_s = outcome
    used = dict.fromkeys(spec for spec, _, _ in job.specs)
    mine = [s for s in used if owners[s] == job.montage.montage_id and not clips[s].hit]
    return MontageRender(
        montage_id=job.montage.montage_id, path=rendered.path, duration_s=rendered.duration_s,
        n_frames=rendered.n_frames, skipped=False, cache_hits=len(used) - len(mine),
        cache_misses=len(mine), encode_cpu_s=sum(clips[s].cpu_s for s in mine),
        join_cpu_s=rendered.cpu_s, wall_s=wall_s,
    )


def _skipped(job: MontageJob, out_dir: Path) -> MontageRender:
    video, sidecar = _paths(job, out_dir)
    record = json.loads(sidecar.read_text("utf-8"))
    return MontageRender(
        montage_id=job.montage.montage_id, path=video,
        duration_s=float(record.get("duration_s", job.montage.duration_s)),
        n_frames=int(record.get("n_frames", 0)), skipped=True, cache_hits=0, cache_misses=0,
        encode_cpu_s=0.0, join_cpu_s=0.0, wall_s=0.0,
    )


@dataclasses.dataclass(frozen=True, slots=True)
class RenderInputs:
    """What rendering reads from a store: the montages to render, and the scenes and videos
    by id; ``refused``: the ids of the montages left out (:func:`shippable`)."""

    montages: list[Montage]
    scenes_by_id: dict[str, Scene]
    videos_by_id: dict[str, Video]
    refused: tuple[str, ...] = ()


def render_inputs(*, db: Path, release: ReleaseParams) -> RenderInputs:
    """Read what :func:`render_store` and the render flow render: the montages a release
    could ship (:func:`shippable` under ``release``'s rule), their scenes and videos
    (read-only: rendering writes files, never DuckDB).

    Raises:
        StoreError: ``db`` is not a usable store.
    """
    with Store(db, read_only=True) as store:
        montages, refused = shippable(store.montages(), store.questions(),
                                      store.verifications(), release=release)
        return RenderInputs(montages=montages, refused=refused,
                            scenes_by_id={s.scene_id: s for s in store.scenes()},
                            videos_by_id={v.video_id: v for v in store.videos()})


def shippable(montages: Sequence[Montage], questions: Iterable[Question],
              verifications: Iterable[Verification], *,
              release: ReleaseParams) -> tuple[list[Montage], tuple[str, ...]]:
    """``montages`` less those no release can ship, and the ids of those (sorted).

    A montage is left out when it has questions and the verifiers refused every one of them
    under the release's rule (:func:`~needleforge.records.verdicts_pass` with
    ``release.require_all_verdicts``, as :func:`~needleforge.release.answers.select_questions`
    decides): a release ships a montage only with a released question. A question no
    verifier judged keeps its montage (it may yet be judged, or let in by
    ``release.include_unverified``), and so does a montage without questions. In the sample
    store these are the montages whose every question failed NeMo's self-verification.
    """
    verdicts: dict[str, list[Verification]] = {}
    for verdict in verifications:
        verdicts.setdefault(verdict.question_id, []).append(verdict)
    asked: dict[str, list[bool]] = {}  # montage id -> whether each question was refused
    for question in questions:
        mine = verdicts.get(question.question_id, [])
        asked.setdefault(question.montage_id, []).append(
            bool(mine) and not verdicts_pass(mine, require_all=release.require_all_verdicts))
    refused = {m.montage_id for m in montages if asked.get(m.montage_id)
               and all(asked[m.montage_id])}
    return [m for m in montages if m.montage_id not in refused], tuple(sorted(refused))


def render_store(*, db: Path, out: Path, cache_dir: Path | None, params: Params,
                 on_step: OnCount | None = None) -> RenderReport:
    """Render every montage of ``db`` a release could ship (:func:`shippable`) to
    ``out/<montage_id>.mp4`` (current ones are skipped). ``on_step(done, total)``: each scene
    clip encoded and each montage joined.

    Raises:
        StoreError: ``db`` is not a usable store. MediaError: a plan cannot be rendered.
    """
    inputs = render_inputs(db=db, release=params.release)
    report = render_montages(inputs.montages, scenes_by_id=inputs.scenes_by_id,
                             videos_by_id=inputs.videos_by_id, out_dir=out,
                             cache_dir=cache_dir or out / ".cache", params=params.render,
                             on_step=on_step)
    return dataclasses.replace(report, refused=inputs.refused)
