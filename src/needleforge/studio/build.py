"""``build_studio``: the whole sample corpus, from parameters to files on disk.

Output under ``out_dir``::

    clips/<name>.<ext>                       real clips, byte-for-byte package copies
    clips/carphone_distorted.mp4             refused by design: expired licence
    programs/<program>/<program>-eNN.mp4     synthetic videos (and .srt sidecars)
    programs/sample-restricted/...-e01.mp4   refused by design: scope lacks "benchmark"
    manifest.yaml                            authorization manifest (see .manifest)
    ground_truth.json                        scenes, cuts and objects (see .truth)

The same parameters give byte-identical files (see :mod:`needleforge.studio.encode`).
Synthetic videos render in parallel, one single-threaded encoder per core.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

from needleforge.config import StudioParams
from needleforge.errors import StudioError
from needleforge.media.outputs import writing
from needleforge.studio.assets import (
    BACKDROPS,
    CUTOUTS,
    EXPIRED_CLIP,
    REAL_PROGRAM,
    RealClip,
    locate,
    select_clips,
)
from needleforge.studio.clips import clip_duration_s, copy_clip
from needleforge.studio.encode import render_video
from needleforge.studio.images import ImageBank, distinct_pairs
from needleforge.studio.manifest import ManifestRow, write_manifest
from needleforge.studio.plan import PlanRequest, VideoPlan, plan_video
from needleforge.studio.subtitles import narrate, write_srt
from needleforge.studio.truth import video_entry, write_ground_truth

#: Program of the small synthetic clip whose licence grants research only.
RESTRICTED_PROGRAM = "sample-restricted"
RESERVED_PROGRAMS = (REAL_PROGRAM, RESTRICTED_PROGRAM)
EXPIRED_ON = dt.date(2020, 1, 1)
#: The real clips' licences do not expire; this far date stands for "no expiry".
PERPETUAL = dt.date(2099, 12, 31)
#: Uses the real clips' licences grant us.
REAL_SCOPE = ("benchmark", "research")
_RESTRICTED_SCOPE = ("research",)


@dataclasses.dataclass(frozen=True, slots=True)
class RefusedRow:
    """A manifest row written to be refused by the ingest, and why."""

    path: str
    reason: Literal["expired", "out_of_scope"]
    detail: str


@dataclasses.dataclass(frozen=True, slots=True)
class StudioReport:
    """What :func:`build_studio` wrote. Paths are absolute; seconds are media durations."""

    out_dir: Path
    manifest_path: Path
    ground_truth_path: Path
    clip_paths: tuple[Path, ...]
    video_paths: tuple[Path, ...]
    subtitle_paths: tuple[Path, ...]
    refused: tuple[RefusedRow, ...]
    n_scenes: int
    n_objects: int
    real_clip_s: float
    synthetic_s: float

    @property
    def written(self) -> tuple[Path, ...]:
        """Every file of the corpus, refused-by-design media included."""
        refused = tuple(self.out_dir / r.path for r in self.refused)
        return (
            *self.clip_paths,
            *self.video_paths,
            *self.subtitle_paths,
            *refused,
            self.manifest_path,
            self.ground_truth_path,
        )

    @property
    def total_s(self) -> float:
        return self.real_clip_s + self.synthetic_s


@dataclasses.dataclass(frozen=True, slots=True)
class _Job:
    plan: VideoPlan
    video: Path
    srt: Path | None


def build_studio(params: StudioParams, out_dir: Path) -> StudioReport:
    """Build the sample corpus described by ``params`` under ``out_dir``.

    Raises :class:`StudioError` for an unknown real-clip name, a program using a reserved
    name, a package file that is not installed, or a failed render. Files of an earlier
    build are overwritten; nothing outside ``out_dir`` is touched. Raises
    :class:`~needleforge.errors.OutputError` naming the path when ``out_dir`` cannot be
    written (read-only, disk full).
    """
    clips = select_clips(list(params.real_clips))
    _check_programs(params)
    _preflight(clips)
    out_dir = out_dir.resolve()
    with writing(out_dir, what="studio"):
        return _build(params, out_dir, clips)


def _build(params: StudioParams, out_dir: Path, clips: list[RealClip]) -> StudioReport:
    (out_dir / "clips").mkdir(parents=True, exist_ok=True)
    # Outputs are written as ``*.partial*`` and renamed; a killed build leaves some behind.
    for stale in [*out_dir.glob("*.partial*"), *out_dir.glob("*/*.partial*")]:
        stale.unlink(missing_ok=True)
    clip_paths = [copy_clip(c, clips_dir=out_dir / "clips") for c in clips]
    expired_path = copy_clip(EXPIRED_CLIP, clips_dir=out_dir / "clips")
    bank = ImageBank(width=params.width, height=params.height)
    distinct = distinct_pairs([bank.backdrop(b) for b in BACKDROPS])
    jobs = [
        _job(req, subtitles=subs, out_dir=out_dir, distinct=distinct)
        for req, subs in _requests(params)
    ]
    _render_all(jobs, bank)
    entries = [_finish(job, seed=params.seed, out_dir=out_dir) for job in jobs]
    truth_path = out_dir / "ground_truth.json"
    write_ground_truth(entries, seed=params.seed, path=truth_path)
    programs, restricted = jobs[:-1], jobs[-1]
    refused = _refused(expired_path, restricted, out_dir=out_dir)
    rows = _rows(params, clips, clip_paths, programs, out_dir=out_dir)
    rows += _refused_rows(params, expired_path, restricted, refused, out_dir=out_dir)
    manifest_path = out_dir / "manifest.yaml"
    write_manifest(rows, path=manifest_path)
    return StudioReport(
        out_dir=out_dir,
        manifest_path=manifest_path,
        ground_truth_path=truth_path,
        clip_paths=tuple(clip_paths),
        video_paths=tuple(j.video for j in programs),
        subtitle_paths=tuple(j.srt for j in programs if j.srt is not None),
        refused=refused,
        n_scenes=sum(len(j.plan.scenes) for j in programs),
        n_objects=sum(len(j.plan.objects) for j in programs),
        real_clip_s=round(sum(clip_duration_s(p) for p in clip_paths), 6),
        synthetic_s=round(sum(j.plan.duration_s for j in programs), 6),
    )


def _preflight(clips: list[RealClip]) -> None:
    """Find every package file before writing anything, so a missing one fails fast."""
    sources = [c.source for c in (*clips, EXPIRED_CLIP)]
    sources += [b.source for b in BACKDROPS] + [c.source for c in CUTOUTS]
    for source in sources:
        locate(source)


def _check_programs(params: StudioParams) -> None:
    clash = sorted({p.name for p in params.programs} & set(RESERVED_PROGRAMS))
    if clash:
        raise StudioError(
            f"programs: name(s) {clash} are reserved for the studio's own rows "
            f"({', '.join(RESERVED_PROGRAMS)}); choose another name"
        )


def _requests(params: StudioParams) -> list[tuple[PlanRequest, bool]]:
    """One plan request per episode of every program, then the restricted clip (last)."""
    requests = [
        (
            _request(
                params,
                program.name,
                episode,
                scene_s=(program.video_duration_s, program.min_scene_s, program.max_scene_s),
            ),
            program.subtitles,
        )
        for program in params.programs
        for episode in range(1, program.n_videos + 1)
    ]
    restricted = _request(params, RESTRICTED_PROGRAM, 1, scene_s=(6.0, 2.0, 4.0))
    return [*requests, (restricted, False)]


def _request(
    params: StudioParams, program: str, episode: int, *, scene_s: tuple[float, float, float]
) -> PlanRequest:
    """A plan request; ``scene_s`` is (video duration, shortest scene, longest scene)."""
    duration_s, min_scene_s, max_scene_s = scene_s
    return PlanRequest(
        seed=params.seed,
        program=program,
        episode=episode,
        duration_s=duration_s,
        min_scene_s=min_scene_s,
        max_scene_s=max_scene_s,
        fps=params.fps,
        width=params.width,
        height=params.height,
    )


def _job(
    request: PlanRequest,
    *,
    subtitles: bool,
    out_dir: Path,
    distinct: frozenset[tuple[int, int]],
) -> _Job:
    plan = plan_video(request, backdrops=BACKDROPS, cutouts=CUTOUTS, distinct=distinct)
    folder = out_dir / "programs" / plan.program
    folder.mkdir(parents=True, exist_ok=True)
    srt = folder / f"{plan.stem}.srt" if subtitles else None
    return _Job(plan=plan, video=folder / f"{plan.stem}.mp4", srt=srt)


def _render_all(jobs: list[_Job], bank: ImageBank) -> None:
    """Render every job; one single-threaded x264 per core keeps the output deterministic."""
    workers = max(1, min(len(jobs), os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(render_video, j.plan, bank=bank, out=j.video) for j in jobs]
        for future in futures:
            future.result()


def _finish(job: _Job, *, seed: int, out_dir: Path) -> dict[str, Any]:
    """Write the job's subtitles (removing a stale sidecar) and return its ground-truth entry."""
    cues = narrate(job.plan, seed=seed) if job.srt is not None else {}
    if job.srt is not None:
        write_srt([c for scene in job.plan.scenes for c in cues[scene.index]], path=job.srt)
    else:
        job.video.with_suffix(".srt").unlink(missing_ok=True)
    return video_entry(
        job.plan,
        path=_rel(job.video, out_dir),
        subtitles_path=_rel(job.srt, out_dir) if job.srt is not None else None,
        cues=cues,
    )


def _rel(path: Path, out_dir: Path) -> str:
    return path.relative_to(out_dir).as_posix()


def _rows(
    params: StudioParams,
    clips: list[RealClip],
    clip_paths: list[Path],
    programs: list[_Job],
    *,
    out_dir: Path,
) -> list[ManifestRow]:
    """Authorized rows: the real clips with their own rights, then the synthetic episodes."""
    rows = [
        ManifestRow(
            path=_rel(path, out_dir),
            program=REAL_PROGRAM,
            title=clip.title,
            rights_holder=clip.rights_holder,
            licence_id=clip.licence_id,
            scope=REAL_SCOPE,
            valid_until=PERPETUAL,
            published_at=clip.published_at,
            comment=clip.note,
        )
        for clip, path in zip(clips, clip_paths, strict=True)
    ]
    rows += [
        ManifestRow(
            path=_rel(job.video, out_dir),
            program=job.plan.program,
            title=f"{job.plan.program} episode {job.plan.episode}",
            rights_holder=params.rights_holder,
            licence_id=params.licence_id,
            scope=tuple(params.scope),
            valid_until=params.valid_until,
            published_at=params.published_at,
            subtitles=_rel(job.srt, out_dir) if job.srt is not None else None,
        )
        for job in programs
    ]
    return rows


def _refused(expired: Path, restricted: _Job, *, out_dir: Path) -> tuple[RefusedRow, ...]:
    return (
        RefusedRow(
            _rel(expired, out_dir),
            "expired",
            f"licence valid_until {EXPIRED_ON.isoformat()} is in the past",
        ),
        RefusedRow(
            _rel(restricted.video, out_dir),
            "out_of_scope",
            f"scope {list(_RESTRICTED_SCOPE)} lacks 'benchmark'",
        ),
    )


def _refused_rows(
    params: StudioParams,
    expired: Path,
    restricted: _Job,
    refused: tuple[RefusedRow, ...],
    *,
    out_dir: Path,
) -> list[ManifestRow]:
    """The two rows an ingest must refuse, each with a comment saying so and why."""
    why = {r.path: f"REFUSED BY DESIGN ({r.reason}): {r.detail}." for r in refused}
    expired_rel, restricted_rel = _rel(expired, out_dir), _rel(restricted.video, out_dir)
    return [
        ManifestRow(
            path=expired_rel,
            program=REAL_PROGRAM,
            title=EXPIRED_CLIP.title,
            rights_holder=EXPIRED_CLIP.rights_holder,
            licence_id=EXPIRED_CLIP.licence_id,
            scope=REAL_SCOPE,
            valid_until=EXPIRED_ON,
            comment=why[expired_rel] + "\nShows the ingest refusing an expired licence.",
        ),
        ManifestRow(
            path=restricted_rel,
            program=RESTRICTED_PROGRAM,
            title="Research-only sample",
            rights_holder=params.rights_holder,
            licence_id=params.licence_id,
            scope=_RESTRICTED_SCOPE,
            valid_until=params.valid_until,
            published_at=params.published_at,
            comment=why[restricted_rel] + "\nShows the ingest refusing a use not granted.",
        ),
    ]
