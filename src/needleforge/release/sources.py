"""Which sources may reach a release: licence checks and contamination by content hash.

Authorization (the code check; the GX ``release_sources`` suite checks the shipped
``sources.json`` again). A source ships only when its licence is still valid on the release
day and grants every scope the release requires. Why exclusion by default rather than an
error: licences expire on their own schedule, and one expired source should cost its own
questions, not the whole scheduled release; every exclusion is listed with its reason in the
manifest, the card and the changelog. ``ReleaseParams.unauthorized = "error"`` turns it into a
build error instead.

Contamination. A source already used by an earlier release (same sha256, whatever its path or
id) may have leaked into models trained on that release. Earlier releases are read from their
``manifest.json`` (``sources``) or, for releases older than that list, their
``montages.jsonl`` plans; every match is flagged, and excluded when asked.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from needleforge.errors import ReleaseError
from needleforge.records import Video

MANIFEST = "manifest.json"
SOURCES_FILE = "sources.json"


@dataclasses.dataclass(frozen=True, slots=True)
class EarlierRelease:
    """An earlier release compared against: its name and the sha256 of every source it used."""

    name: str
    sha256s: frozenset[str]


def licence_problem(video: Video, *, day: dt.date, required_scopes: Sequence[str]) -> str | None:
    """Why ``video`` may not ship in a release on ``day``, or None when it may."""
    auth = video.authorization
    if not auth.is_valid_on(day):
        return (f"licence {auth.licence_id} of {auth.rights_holder} expired on "
                f"{auth.valid_until.isoformat()}, before the release day {day.isoformat()}")
    missing = auth.missing_scopes(tuple(required_scopes))
    if missing:
        return (f"licence {auth.licence_id} grants {list(auth.scope)}, not the required "
                f"scopes {list(missing)}")
    return None


def _sha256s_from_manifest(doc: Any, *, where: Path) -> frozenset[str] | None:
    if not isinstance(doc, dict):
        raise ReleaseError(f"earlier release {where}: manifest is not a JSON object")
    sources = doc.get("sources")
    if sources is None:
        return None
    if not isinstance(sources, list) or not all(
            isinstance(s, dict) and isinstance(s.get("sha256"), str) for s in sources):
        raise ReleaseError(f"earlier release {where}: 'sources' must be a list of objects "
                           "with a sha256")
    return frozenset(s["sha256"] for s in sources)


def _sha256s_from_plans(path: Path) -> frozenset[str]:
    """Source hashes of a release that predates ``manifest.sources``: its montage plans."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ReleaseError(f"earlier release {path.parent}: its manifest lists no sources and "
                           f"{path.name} cannot be read ({exc})") from exc
    found: set[str] = set()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            plan = json.loads(line)
            found.update(str(s["sha256"]) for s in plan["sources"])
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ReleaseError(f"{path}:{number}: not a montage plan with sources "
                               f"({exc})") from exc
    return frozenset(found)


def read_earlier(path: Path) -> EarlierRelease:
    """The sources of an earlier release, from its folder or its ``manifest.json`` itself.

    Raises:
        ReleaseError: the path does not exist, holds no readable manifest, or neither the
            manifest nor the montage plans beside it list source hashes.
    """
    manifest = path / MANIFEST if path.is_dir() else path
    if not manifest.is_file():
        raise ReleaseError(f"earlier release {path}: no {MANIFEST} there")
    try:
        doc = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReleaseError(f"earlier release {path}: cannot read {manifest.name} "
                           f"({exc})") from exc
    hashes = _sha256s_from_manifest(doc, where=path)
    if hashes is None:
        hashes = _sha256s_from_plans(manifest.parent / "montages.jsonl")
    name = doc.get("name") if isinstance(doc.get("name"), str) else manifest.parent.name
    return EarlierRelease(name=str(name), sha256s=hashes)


@dataclasses.dataclass(frozen=True, slots=True)
class SourcePolicy:
    """The verdict on every candidate source: why some may not ship, which were used before.

    ``unauthorized`` and ``excluded`` map video ids to a reason; ``contaminated`` maps video
    ids to the earlier releases (names, sorted) that used the same content.
    """

    unauthorized: Mapping[str, str]
    contaminated: Mapping[str, tuple[str, ...]]
    excluded: Mapping[str, str]


def assess(
    videos: Iterable[Video], *, day: dt.date, required_scopes: Sequence[str],
    earlier: Sequence[EarlierRelease], exclude_contaminated: bool,
) -> SourcePolicy:
    """Check every candidate source's licence on ``day`` and against the earlier releases."""
    unauthorized: dict[str, str] = {}
    contaminated: dict[str, tuple[str, ...]] = {}
    for v in sorted(videos, key=lambda v: v.video_id):
        problem = licence_problem(v, day=day, required_scopes=required_scopes)
        if problem is not None:
            unauthorized[v.video_id] = problem
        used = sorted({e.name for e in earlier if v.sha256 in e.sha256s})
        if used:
            contaminated[v.video_id] = tuple(used)
    excluded = dict(unauthorized)
    if exclude_contaminated:
        for vid, names in contaminated.items():
            excluded.setdefault(vid, f"contaminated: already used by {', '.join(names)}")
    return SourcePolicy(unauthorized, contaminated, dict(sorted(excluded.items())))


def source_entries(
    videos: Iterable[Video], *, families: Mapping[str, set[str]],
    contaminated: Mapping[str, tuple[str, ...]],
) -> list[dict[str, Any]]:
    """``sources.json`` / manifest rows: each shipped source's licence, use and earlier use."""
    return [{
        "video_id": v.video_id, "sha256": v.sha256, "program": v.program,
        "rights_holder": v.authorization.rights_holder,
        "licence_id": v.authorization.licence_id,
        "scope": sorted(v.authorization.scope),
        "valid_until": v.authorization.valid_until.isoformat(),
        "published_at": (v.authorization.published_at.isoformat()
                         if v.authorization.published_at else None),
        "families": sorted(families.get(v.video_id, set())),
        "earlier_releases": list(contaminated.get(v.video_id, ())),
    } for v in sorted(videos, key=lambda v: v.video_id)]


def excluded_entries(
    policy: SourcePolicy, *, videos: Mapping[str, Video], dropped: Mapping[str, list[str]],
) -> list[dict[str, Any]]:
    """Manifest rows of the excluded sources: id, hash, reason and the questions dropped."""
    return [{"video_id": vid, "sha256": videos[vid].sha256, "reason": reason,
             "questions_dropped": sorted(set(dropped.get(vid, [])))}
            for vid, reason in policy.excluded.items() if vid in videos]


def group_dropped(pairs: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """``(video_id, question_id)`` pairs grouped by video id."""
    out: dict[str, list[str]] = defaultdict(list)
    for vid, qid in pairs:
        out[vid].append(qid)
    return dict(out)
