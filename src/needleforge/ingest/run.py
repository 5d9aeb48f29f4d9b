"""Authorized ingest: manifest rows in, ``Video`` records and ``IngestRejection`` records out.

Three steps, so the Prefect flow can fan the expensive middle one out:

1. :func:`plan_ingest` — parse the manifest, check authorization (licence present, unexpired,
   granting every required scope), resolve paths (no escaping the manifest's folder), drop
   duplicate rows. Cheap; whole-manifest problems raise :class:`ManifestError`.
2. :func:`process_row` — check the file, probe it (PyAV), hash it (sha256), place it and its
   subtitle sidecar in the content-addressed store. Returns a record, never raises for a bad
   file: one bad source must not stop the others. A store that cannot be written (read-only,
   disk full) is not a bad source: it raises :class:`~needleforge.errors.OutputError`.
3. :func:`finish_ingest` — refuse a row repeating an earlier accepted row: the same file
   (``duplicate_row``) or the same content under another name (``duplicate_content``).

Nothing here writes DuckDB; the caller stores the result in one transaction
(:meth:`needleforge.store.Store.record_ingest`), so a crash leaves the store as it was.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from needleforge.errors import ProbeError
from needleforge.ingest.media_store import LinkMode, place, sha256_file
from needleforge.ingest.source_manifest import ManifestRow, RowProblem, read_manifest
from needleforge.media.outputs import writing
from needleforge.media.probe import probe
from needleforge.params import IngestParams
from needleforge.records import IngestRejection, RejectionReason, Video, video_id_for

_PROBE_REASONS: dict[str, RejectionReason] = {
    "missing": "missing_file",
    "empty": "empty_file",
    "unreadable": "unreadable",
    "not_media": "not_video",
    "no_video": "no_video_stream",
    "undecodable": "unreadable",
    "no_duration": "unreadable",
}


@dataclasses.dataclass(frozen=True, slots=True)
class RowJob:
    """An authorized manifest row whose paths resolved inside the manifest's folder."""

    manifest: str
    row: ManifestRow
    source: Path
    subtitles: Path | None


@dataclasses.dataclass(frozen=True, slots=True)
class Accepted:
    """A row whose file passed every check, with the video record it became."""

    manifest: str
    row: int
    source: str
    video: Video


@dataclasses.dataclass(frozen=True, slots=True)
class IngestResult:
    """What an ingest produced: accepted videos and refused rows, in manifest order."""

    videos: tuple[Video, ...]
    rejections: tuple[IngestRejection, ...]


def rejection(
    manifest: str, *, row: int, source: str, reason: RejectionReason, detail: str
) -> IngestRejection:
    """A refusal with an id stable across reruns (manifest, row, source and reason)."""
    key = f"{manifest}\0{row}\0{source}\0{reason}".encode()
    return IngestRejection(
        rejection_id=f"r{hashlib.sha256(key).hexdigest()[:16]}",
        manifest_path=manifest, row=row, source_path=source, reason=reason, detail=detail,
    )


def plan_ingest(
    manifest_path: Path, *, params: IngestParams
) -> list[RowJob | IngestRejection]:
    """Parse and authorize every row of ``manifest_path`` (see module docstring, step 1)."""
    manifest = str(manifest_path.resolve())
    root = manifest_path.resolve().parent
    today = params.today()
    required = tuple(params.required_scopes)
    out: list[RowJob | IngestRejection] = []
    for entry in read_manifest(manifest_path):
        if isinstance(entry, RowProblem):
            out.append(rejection(manifest, row=entry.row, source=entry.path,
                                 reason=entry.reason, detail=entry.detail))
            continue
        out.append(_authorize_row(entry, manifest=manifest, root=root, today=today,
                                  required=required))
    return out


def _authorize_row(
    entry: ManifestRow, *, manifest: str, root: Path, today: dt.date, required: tuple[str, ...]
) -> RowJob | IngestRejection:
    where = f"row {entry.row} ({entry.path})"

    def refuse(reason: RejectionReason, message: str) -> IngestRejection:
        return rejection(manifest, row=entry.row, source=entry.path, reason=reason,
                         detail=f"{where}: {message}")

    auth = entry.authorization
    if not auth.is_valid_on(today):
        return refuse("expired", f"licence {auth.licence_id} expired on "
                      f"{auth.valid_until.isoformat()} (checked on {today.isoformat()})")
    missing = auth.missing_scopes(required)
    if missing:
        return refuse("out_of_scope", f"licence {auth.licence_id} grants {list(auth.scope)} "
                      f"but ingest requires {list(missing)}")
    source = _inside(root, entry.path)
    if source is None:
        return refuse("path_escape", f"path resolves outside the manifest folder {root}")
    subtitles: Path | None = None
    if entry.subtitles is not None:
        subtitles = _inside(root, entry.subtitles)
        if subtitles is None:
            return refuse("path_escape", f"subtitles {entry.subtitles!r} resolve outside the "
                          f"manifest folder {root}")
    return RowJob(manifest=manifest, row=entry, source=source, subtitles=subtitles)


def _inside(root: Path, relative: str) -> Path | None:
    """``root / relative`` resolved (symlinks too), or None when it leaves ``root``."""
    resolved = (root / relative).resolve()
    return resolved if resolved.is_relative_to(root) else None


def process_row(
    job: RowJob, *, media_dir: Path, link_mode: LinkMode
) -> Accepted | IngestRejection:
    """Probe, hash and store one authorized row (see module docstring, step 2).

    Raises:
        OutputError: ``media_dir`` cannot be written (read-only, disk full), naming it.
    """
    entry = job.row

    def refuse(reason: RejectionReason, message: str) -> IngestRejection:
        return rejection(job.manifest, row=entry.row, source=entry.path, reason=reason,
                         detail=f"row {entry.row} ({entry.path}): {message}")

    if job.source.is_dir():
        return refuse("not_video", "is a directory, not a video file")
    try:
        media = probe(job.source)
    except ProbeError as err:
        return refuse(_PROBE_REASONS.get(err.kind, "unreadable"), _strip_path(str(err)))
    subtitle_stored: str | None = None
    try:
        sub_sha: str | None = None
        if job.subtitles is not None:
            problem = _check_subtitles(job.subtitles)
            if problem:
                return refuse("bad_subtitles", problem)
            sub_sha = sha256_file(job.subtitles)
        sha = sha256_file(job.source)
        size = job.source.stat().st_size
    except OSError as err:
        return refuse("unreadable", f"cannot read the file ({err.strerror or err})")
    # A failure to write the media store is not the row's fault: it stops the whole ingest
    # (nothing is recorded) instead of refusing good rows.
    with writing(media_dir, what=f"ingest of row {entry.row} ({entry.path}) into the store"):
        if job.subtitles is not None and sub_sha is not None:
            subtitle_stored = str(place(job.subtitles, media_dir=media_dir, sha256=sub_sha,
                                        mode=link_mode))
        stored = place(job.source, media_dir=media_dir, sha256=sha, mode=link_mode)
    video = Video(
        video_id=video_id_for(sha), sha256=sha, program=entry.program, title=entry.title,
        source_path=str(job.source), stored_path=str(stored), size_bytes=size, media=media,
        authorization=entry.authorization, subtitle_path=subtitle_stored,
    )
    return Accepted(manifest=job.manifest, row=entry.row, source=entry.path, video=video)


def _check_subtitles(path: Path) -> str | None:
    """A reason the sidecar is unusable, or None. Cue syntax is checked by the scenes stage."""
    if not path.is_file():
        return f"subtitle sidecar {path.name} not found"
    if path.suffix.lower() not in (".srt", ".vtt"):
        return f"subtitle sidecar {path.name}: unsupported format (use .srt or .vtt)"
    try:
        path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as err:
        return f"subtitle sidecar {path.name} is not UTF-8 (byte offset {err.start})"
    return None


def _strip_path(message: str) -> str:
    """Probe errors start with the full path; the rejection already names the row's path."""
    head, sep, tail = message.partition(": ")
    return tail if sep and head.startswith("/") else message


def finish_ingest(results: Iterable[Accepted | IngestRejection]) -> IngestResult:
    """Refuse rows repeating an earlier accepted row (step 3); keep manifest order.

    Only accepted rows count as "earlier": a row refused for, say, a broken subtitle file
    does not make a later, correct row with the same video a duplicate.
    """
    videos: list[Video] = []
    rejections: list[IngestRejection] = []
    first: dict[str, Accepted] = {}
    for result in results:
        if isinstance(result, IngestRejection):
            rejections.append(result)
            continue
        earlier = first.setdefault(result.video.sha256, result)
        if earlier is not result:
            rejections.append(_duplicate(result, earlier))
            continue
        videos.append(result.video)
    return IngestResult(videos=tuple(videos), rejections=tuple(rejections))


def _duplicate(result: Accepted, earlier: Accepted) -> IngestRejection:
    where = f"row {result.row} ({result.source})"
    if result.video.source_path == earlier.video.source_path:
        return rejection(result.manifest, row=result.row, source=result.source,
                         reason="duplicate_row", detail=f"{where}: same file as row {earlier.row}")
    return rejection(
        result.manifest, row=result.row, source=result.source, reason="duplicate_content",
        detail=f"{where}: same content (sha256 {result.video.sha256[:12]}…) as row "
               f"{earlier.row} ({earlier.source})",
    )


def ingest(manifest_path: Path, *, media_dir: Path, params: IngestParams) -> IngestResult:
    """Run the three steps; rows are probed and hashed on ``params.workers`` threads.

    Raises:
        ManifestError: the manifest as a whole is unusable. OutputError: ``media_dir`` cannot
            be written (read-only, disk full); nothing is returned for the caller to store.
    """
    planned = plan_ingest(manifest_path, params=params)
    media_dir = media_dir.absolute()  # the records name files wherever they are read

    def run(item: RowJob | IngestRejection) -> Accepted | IngestRejection:
        if isinstance(item, IngestRejection):
            return item
        return process_row(item, media_dir=media_dir, link_mode=params.link_mode)

    with ThreadPoolExecutor(max_workers=params.workers) as pool:
        return finish_ingest(list(pool.map(run, planned)))
