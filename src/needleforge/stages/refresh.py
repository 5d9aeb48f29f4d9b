"""The scheduled refresh's decisions: what to check before any work, when to release at all.

The refresh flow (``flows/refresh.py``) wires the stages; this module holds what it decides,
so the CLI, tests and the flow share one policy:

- **Checks before any work** (:func:`preflight`): the manifest exists and parses, the params
  load, the release name is valid and free, the model backends the params name can start
  (:mod:`needleforge.runtime.preflight`: a model server answers, a checkpoint is one), and — when
  publishing — the repository, tag and DVC remote are usable. A scheduled run with a bad
  input fails in seconds, naming it; a dead model server fails the run even when nothing
  turns out to be new, so it is found on the next run, not on the one that needs it.
- **One refresh per store** (:func:`store_lock`): an exclusive lock file beside the DuckDB
  store; a second refresh started meanwhile fails at once, naming the holder, and touches
  nothing.
- **Release only what is new** (:func:`decide`): the store's usable source videos, the params
  and the code are fingerprinted (:mod:`needleforge.release.history`) and compared with the
  release built last. Same fingerprint: nothing is released; the run succeeds when nothing
  failed, and fails naming the failures when new sources were refused or failed (nothing new
  succeeded). ``force`` releases anyway.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import fcntl
import os
from collections.abc import Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from needleforge.errors import RefreshError
from needleforge.ingest import read_manifest
from needleforge.params import Params, load_params
from needleforge.records.failures import StageFailure, summarize
from needleforge.release.build import RELEASE_NAME_RE
from needleforge.release.history import BuildInfo, Fingerprint, fingerprint, latest_release
from needleforge.review.verdict_file import read_verdict_file
from needleforge.runtime.preflight import check_nemo, check_objects
from needleforge.store import Store

#: How the refresh names a release when no name is given (UTC, to the minute).
NAME_FORMAT = "%Y.%m.%d-%H%M"
#: The default name when a refresh earlier in the same minute took :data:`NAME_FORMAT`'s
#: (sorts after it and before the next minute's).
NAME_FORMAT_SECONDS = "%Y.%m.%d-%H%M%S"


@dataclasses.dataclass(frozen=True, slots=True)
class RefreshPlan:
    """A refresh's checked inputs (see :func:`preflight`)."""

    manifest: Path
    db: Path
    releases: Path
    name: str
    params: Params
    params_path: Path | None
    publish_repo: Path | None
    remote: str | None
    force: bool
    #: The human verdict file the release records first (:mod:`needleforge.review.verdict_file`).
    human_verdicts: Path | None = None


def preflight(*, manifest: Path, db: Path, releases: Path, name: str | None,
              params_path: Path | None, publish_repo: Path | None = None,
              remote: str | None = None, force: bool = False,
              human_verdicts: Path | None = None) -> RefreshPlan:
    """Check every input of a refresh before any work starts; returns the plan.

    Raises:
        RefreshError: the manifest is missing (the message says where it was looked for and
            how to set it), or the release name is invalid or taken.
        ManifestError: the manifest cannot be parsed as a whole.
        ConfigError: the params file is bad.
        ReleaseError: publishing was asked and the repository, tag or DVC remote is not
            usable (see :func:`needleforge.release.publish.check_publish`).
        BackendError: a model backend of the params cannot start: a dead model server, a
            missing checkpoint or sidecar Python (:mod:`needleforge.runtime.preflight`), checked
            here and not after ingesting and representing the new sources.
        VerdictError: the human verdict file has a line that is not a verdict (a missing
            file holds none).
    """
    if not manifest.is_file():
        raise RefreshError(
            f"manifest {manifest} does not exist (looked in {Path.cwd()}). Pass the manifest "
            "of your sources: `python -m flows.refresh MANIFEST`, or for the deployment "
            "`prefect deployment run refresh/weekly-refresh -p manifest=PATH` (or edit "
            "`manifest:` in prefect.yaml); `make demo` builds data/studio/manifest.yaml.")
    read_manifest(manifest)  # whole-file problems raise ManifestError now, not after work
    params = load_params(params_path)
    check_objects(params.objects)
    check_nemo(params.nemo)
    if name is None:
        now = dt.datetime.now(dt.UTC)
        name = now.strftime(NAME_FORMAT)
        if (releases / name).exists():
            # A refresh earlier this minute released under the default name; this one may
            # find nothing new (and say so) or release under the second.
            name = now.strftime(NAME_FORMAT_SECONDS)
    if not RELEASE_NAME_RE.fullmatch(name):
        raise RefreshError(f"release name {name!r} must match {RELEASE_NAME_RE.pattern}")
    if (releases / name).exists():
        raise RefreshError(f"release {releases / name} already exists: pass another name "
                           "(--name), or wait a minute for the next default name")
    if publish_repo is not None:
        from needleforge.release.publish import check_publish

        check_publish(releases / name, repo=publish_repo, tag=name, remote=remote,
                      built=False)
    if human_verdicts is not None:
        read_verdict_file(human_verdicts)  # a bad line stops the run now, not at the release
    return RefreshPlan(manifest, db, releases, name, params, params_path, publish_repo,
                       remote, force, human_verdicts)


def lock_path(db: Path) -> Path:
    """The lock file of the store ``db`` (beside it)."""
    return db.with_name(db.name + ".refresh-lock")


@contextlib.contextmanager
def store_lock(db: Path) -> Iterator[Path]:
    """Hold the refresh lock of ``db`` for the block (released on exit, or by the OS when the
    process dies, so a killed refresh never blocks the next one).

    Raises:
        RefreshError: another process holds it; the message names its pid and start time.
    """
    path = lock_path(db)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "unknown"
            raise RefreshError(f"another refresh is running on store {db} ({holder}; lock "
                               f"{path}): wait for it to finish") from None
        os.ftruncate(fd, 0)
        started = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        os.pwrite(fd, f"pid {os.getpid()} since {started}".encode(), 0)
        try:
            yield path
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def known_videos(db: Path) -> frozenset[str]:
    """Ids of the videos the store holds before this run (empty for a new store): a video
    of these that fails to represent again is old news, not a new failure."""
    if not db.exists():
        return frozenset()
    with Store(db) as store:
        return frozenset(v.video_id for v in store.videos())


def represent_failures(result: Mapping[str, Any], *, known: Collection[str]
                       ) -> list[StageFailure]:
    """The represent flow's failures, ``new`` only for videos this run ingested."""
    ids = list(result.get("failed_videos", []))
    out = []
    for video_id, data in zip(ids, result.get("failures", []), strict=True):
        failure = StageFailure.from_dict(data)
        out.append(dataclasses.replace(failure, new=video_id not in known))
    return out


@dataclasses.dataclass(frozen=True, slots=True)
class RefreshDecision:
    """Whether to go on to a release, and why (``failed``: stop and fail the run)."""

    go: bool
    failed: bool
    reason: str
    inputs: Fingerprint
    previous: str | None


def decide(plan: RefreshPlan, *, previous: BuildInfo | None,
           failures: Sequence[StageFailure], failed_videos: Collection[str] = ()
           ) -> RefreshDecision:
    """Release or not (module docstring), from the store's videos less ``failed_videos``."""
    with Store(plan.db, read_only=True) as store:
        shas = [v.sha256 for v in store.videos() if v.video_id not in failed_videos]
    current = fingerprint(shas, plan.params)
    prev = previous.path.name if previous is not None else None
    new = [f for f in failures if f.new]
    if plan.force and shas:
        return RefreshDecision(True, False, "forced (--force)", current, prev)
    if not shas:
        return RefreshDecision(False, True, "no usable source video in the store" +
                               (f"; {len(new)} source(s) failed" if new else ""), current, prev)
    if previous is None or previous.inputs is None:
        why = "first release" if previous is None else \
            f"release {prev} records no inputs fingerprint"
        return RefreshDecision(True, False, why, current, prev)
    changes = current.differences(previous.inputs)
    if changes:
        return RefreshDecision(True, False, f"since {prev}: " + ", ".join(changes), current, prev)
    if new:
        return RefreshDecision(False, True, f"nothing new succeeded since release {prev}: "
                               f"{len(new)} new source(s) were refused or failed", current, prev)
    return RefreshDecision(False, False, f"nothing new since release {prev}: no new authorized "
                           "source, params and code unchanged", current, prev)


def previous_build(plan: RefreshPlan, previous: Path | None) -> BuildInfo | None:
    """The release to compare with: ``previous`` when given, else the one built last.

    Raises:
        ReleaseError: a release's ``build.json`` is malformed.
    """
    if previous is not None:
        from needleforge.release.history import read_build_info

        return read_build_info(previous)
    return latest_release(plan.releases, exclude=plan.name)


def failure_error(reason: str, failures: Sequence[StageFailure]) -> RefreshError:
    """The error that fails a refresh which released nothing, naming every new failure
    (every failure when none is new)."""
    new = [f for f in failures if f.new] or list(failures)
    return RefreshError(f"refresh released nothing: {reason}:\n{summarize(new)}")
