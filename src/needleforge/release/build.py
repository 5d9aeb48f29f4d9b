"""Build a release folder from the store: questions, plans, videos, exports, card, manifest.

``releases/<name>/`` holds::

    questions.jsonl  questions.parquet  montages.jsonl  videos/<montage_id>.mp4 (optional)
    exports/  plots/  card.md  card.html  CHANGELOG.md  manifest.json

Why a temporary folder: the whole release is written next to its target and renamed into
place at the end, so a failed or interrupted build never leaves a half-written release (and a
replaced release stays intact until its successor is complete). Every check that can fail on
the inputs (nothing to release, a missing render, an unreadable previous release) runs before
anything is written.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from needleforge.config import Params, ReleaseParams
from needleforge.errors import ReleaseError
from needleforge.records import (
    Montage,
    ObjectTrack,
    Question,
    Scene,
    SceneTag,
    Verification,
    Video,
)
from needleforge.release import changelog, exports, manifest
from needleforge.release.answers import (
    Selection,
    montage_record,
    question_record,
    select_questions,
)
from needleforge.release.card import CardInputs, write_card
from needleforge.release.files import (
    place_file,
    sha256_file,
    write_json,
    write_jsonl,
    write_questions_parquet,
)
from needleforge.store import Store

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_SHOWN_IDS = 10


@dataclasses.dataclass(frozen=True, slots=True)
class ReleaseReport:
    """What a build wrote: counts, what was left out and why, and the manifest's hash."""

    name: str
    path: Path
    n_questions: int
    n_montages: int
    n_videos: int
    n_files: int
    failed: tuple[str, ...]
    unverified: tuple[str, ...]
    manifest_sha256: str
    changes: Mapping[str, Any]


@dataclasses.dataclass(frozen=True, slots=True)
class _StoreData:
    videos: list[Video]
    scenes: list[Scene]
    tags: list[SceneTag]
    objects: list[ObjectTrack]
    montages: list[Montage]
    questions: list[Question]
    verifications: list[Verification]


@dataclasses.dataclass(frozen=True, slots=True)
class _Content:
    selection: Selection
    records: list[dict[str, Any]]
    montages: list[Montage]
    montage_records: list[dict[str, Any]]
    sources: list[Video]


def _read_store(db: Path) -> _StoreData:
    with Store(db, read_only=True) as store:
        return _StoreData(store.videos(), store.scenes(), store.scene_tags(), store.objects(),
                          store.montages(), store.questions(), store.verifications())


def _content(data: _StoreData, params: ReleaseParams) -> _Content:
    """Select the questions, derive their answers and gather their montages and sources."""
    selection = select_questions(data.questions, data.verifications,
                                 include_unverified=params.include_unverified,
                                 require_all_verdicts=params.require_all_verdicts)
    if not selection.released:
        raise ReleaseError(f"nothing to release: of {len(data.questions)} questions, "
                           f"{len(selection.failed)} failed verification and "
                           f"{len(selection.unverified)} were never verified")
    montages = {m.montage_id: m for m in data.montages}
    by_montage: dict[str, list[str]] = defaultdict(list)
    records = []
    for question, verdicts in selection.released:
        if question.montage_id not in montages:
            raise ReleaseError(f"question {question.question_id}: montage "
                               f"{question.montage_id} is not in the store")
        records.append(question_record(question, montages[question.montage_id], verdicts))
        by_montage[question.montage_id].append(question.question_id)
    videos = {v.video_id: v for v in data.videos}
    used = [montages[m] for m in sorted(by_montage)]
    plans = [montage_record(m, question_ids=by_montage[m.montage_id], videos=videos)
             for m in used]
    source_ids = sorted({s.video_id for m in used for s in m.segments})
    return _Content(selection, records, used, plans, [videos[v] for v in source_ids])


def _find_renders(render_dir: Path, montages: Sequence[Montage]) -> dict[str, Path]:
    """``montage_id → <render_dir>/<montage_id>.mp4`` for every montage, all present."""
    if not render_dir.is_dir():
        raise ReleaseError(f"render folder {render_dir} does not exist")
    paths = {m.montage_id: render_dir / f"{m.montage_id}.mp4" for m in montages}
    missing = sorted(mid for mid, p in paths.items() if not p.is_file())
    if missing:
        shown = ", ".join(missing[:_SHOWN_IDS])
        more = f" and {len(missing) - _SHOWN_IDS} more" if len(missing) > _SHOWN_IDS else ""
        raise ReleaseError(f"{len(missing)} released montage(s) have no render in "
                           f"{render_dir}: {shown}{more} (render them, or release plans only)")
    return paths


def _counts(content: _Content, n_videos: int) -> dict[str, Any]:
    per: dict[str, Counter[str]] = defaultdict(Counter)
    for r in content.records:
        per[r["family"]][r["bucket"]] += 1
    return {
        "questions": len(content.records), "montages": len(content.montages),
        "videos": n_videos, "source_videos": len(content.sources),
        "questions_by_family_bucket": {f: dict(sorted(c.items())) for f, c in sorted(per.items())},
        "excluded": {"failed": len(content.selection.failed),
                     "unverified": len(content.selection.unverified)},
    }


def _write_data(root: Path, content: _Content, renders: Mapping[str, Path],
                params: ReleaseParams) -> None:
    write_jsonl(root / "questions.jsonl", content.records)
    write_questions_parquet(root / "questions.parquet", content.records)
    write_jsonl(root / "montages.jsonl", content.montage_records)
    if renders:
        (root / "videos").mkdir()
        for mid, src in sorted(renders.items()):
            place_file(src, root / "videos" / f"{mid}.mp4", mode=params.link_mode)


def _write_release(
    root: Path, *, name: str, data: _StoreData, content: _Content,
    renders: Mapping[str, Path], params: Params,
    previous: tuple[str, list[dict[str, Any]]] | None,
) -> tuple[changelog.Changelog, str]:
    """Write every file of the release into ``root``; returns the changelog and manifest hash."""
    _write_data(root, content, renders, params.release)
    exports.write_exports(root, content.records, release_name=name)
    changes = changelog.compare(content.records, name=name, previous=previous)
    (root / "CHANGELOG.md").write_text(changes.to_markdown(), encoding="utf-8")
    code = manifest.code_version()
    backends = manifest.store_backends(tags=data.tags, objects=data.objects,
                                       questions=data.questions,
                                       verifications=data.verifications)
    write_card(root, content.records, CardInputs(
        name=name, params=params.release,
        released=[q for q, _ in content.selection.released], montages=content.montages,
        videos_included=bool(renders),
        excluded={"failed": len(content.selection.failed),
                  "unverified": len(content.selection.unverified)},
        code=code, backends=backends, questions=data.questions,
        verifications=data.verifications, objects=data.objects, tags=data.tags,
        scenes=data.scenes, videos=content.sources))
    doc = manifest.build_manifest(
        name=name, params=params, counts=_counts(content, len(renders)), code=code,
        backends=backends, seed_info=manifest.seeds(params, content.montages),
        files=manifest.file_entries(root))
    write_json(root / "manifest.json", doc)
    return changes, sha256_file(root / "manifest.json")


def _swap_into_place(tmp: Path, target: Path) -> None:
    """Rename the finished release to ``target``, replacing (then deleting) an old one."""
    old = None
    if target.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
        target.rename(old / target.name)
    try:
        tmp.rename(target)
    except OSError as exc:
        if old is not None:
            (old / target.name).rename(target)  # put the previous release back
        raise ReleaseError(f"cannot move the new release into {target}: {exc}") from exc
    if old is not None:
        shutil.rmtree(old)


def _write_atomically(
    target: Path, write: Callable[[Path], tuple[changelog.Changelog, str]]
) -> tuple[changelog.Changelog, str, int]:
    """Run ``write`` on a temporary folder beside ``target``, then move it into place.

    On any failure the temporary folder is removed and ``target`` is left as it was.
    Returns what ``write`` returned and the number of files written.
    """
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".partial",
                                dir=target.parent))
    tmp.chmod(0o755)  # mkdtemp makes it private; a release is meant to be read by others
    done = False
    try:
        changes, digest = write(tmp)
        n_files = sum(1 for p in tmp.rglob("*") if p.is_file())
        _swap_into_place(tmp, target)
        done = True
    finally:
        if not done:
            shutil.rmtree(tmp, ignore_errors=True)
    return changes, digest, n_files


def build_release(
    *,
    db: Path,
    name: str,
    out_root: Path,
    render_dir: Path | None,
    params: Params,
    previous: Path | None = None,
    overwrite: bool = False,
) -> ReleaseReport:
    """Build ``out_root/name/`` from the store ``db`` (layout: see the module docstring).

    ``params`` is the whole params file: its ``release`` section decides what ships, and all
    of it is recorded in the manifest. Videos are taken from ``render_dir`` (``<id>.mp4``)
    when it is given and ``params.release.include_videos``; otherwise the release holds plans
    only. ``previous`` is the release to write the changelog against.

    Raises:
        ReleaseError: a bad name; ``out_root/name`` exists and ``overwrite`` is False; no
            question passed verification; a question's montage, a montage's source video or a
            released montage's render is missing; the previous release cannot be read.
        StoreError: the store cannot be opened.
    """
    if not _NAME_RE.fullmatch(name):
        raise ReleaseError(f"release name {name!r} must match {_NAME_RE.pattern}")
    target = out_root / name
    if target.exists() and not overwrite:
        raise ReleaseError(f"release {target} already exists (pass overwrite=True to replace)")
    data = _read_store(db)
    content = _content(data, params.release)
    prev = changelog.read_previous(previous) if previous is not None else None
    renders: dict[str, Path] = {}
    if render_dir is not None and params.release.include_videos:
        renders = _find_renders(render_dir, content.montages)
    out_root.mkdir(parents=True, exist_ok=True)
    changes, digest, n_files = _write_atomically(target, lambda root: _write_release(
        root, name=name, data=data, content=content, renders=renders, params=params,
        previous=prev))
    return ReleaseReport(
        name=name, path=target, n_questions=len(content.records),
        n_montages=len(content.montages), n_videos=len(renders), n_files=n_files,
        failed=content.selection.failed, unverified=content.selection.unverified,
        manifest_sha256=digest, changes=changes.to_dict())
