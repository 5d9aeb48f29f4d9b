"""``releases/index.json``: which release folder each published tag pins, kept in git.

Why a file in git: a consumer holds only a tag (``needleforge pull --rev v3``), while a
refresh publishes ``releases/<UTC date-time>``; the tag alone does not say which folder of
that commit is *the* release (every earlier one is there too). :func:`publish` appends an
entry (tag, folder, release name, manifest sha256) and commits it with the tag, so the index
at any revision names the release published there, and the ones before it.

The index sits at a fixed path at the repository root (whatever folder releases are written
to), so a consumer needs nothing but the tag to find it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from needleforge.errors import ReleaseError

INDEX_PATH = "releases/index.json"
_FORMAT = 1


@dataclasses.dataclass(frozen=True, slots=True)
class IndexEntry:
    """One published release: its tag, folder (repo-relative, POSIX), name and manifest hash."""

    tag: str
    path: str
    name: str
    manifest_sha256: str

    def to_dict(self) -> dict[str, str]:
        return dataclasses.asdict(self)


def parse_index(text: str, *, where: str) -> list[IndexEntry]:
    """The entries of an index file's ``text`` in publish order.

    Raises:
        ReleaseError: naming ``where`` when the text is not an index.
    """
    try:
        doc = json.loads(text)
        rows: Sequence[Mapping[str, Any]] = doc["releases"]
        return [IndexEntry(str(r["tag"]), str(r["path"]), str(r["name"]),
                           str(r["manifest_sha256"])) for r in rows]
    except (json.JSONDecodeError, KeyError, TypeError) as err:
        raise ReleaseError(f"{where}: not a needleforge release index ({err})") from None


def read_index(repo: Path) -> list[IndexEntry]:
    """The index of the working tree of ``repo`` ([] when there is none).

    Raises:
        ReleaseError: the file exists but is not an index.
    """
    path = repo / INDEX_PATH
    if not path.is_file():
        return []
    return parse_index(path.read_text(encoding="utf-8"), where=str(path))


def with_entry(entries: Sequence[IndexEntry], entry: IndexEntry) -> list[IndexEntry]:
    """``entries`` with ``entry`` appended, replacing an earlier entry of the same tag (a
    publish retried after a failed attempt)."""
    return [e for e in entries if e.tag != entry.tag] + [entry]


def write_index(repo: Path, entries: Sequence[IndexEntry]) -> Path:
    """Write the index under ``repo`` atomically (temporary file, then rename); returns it.

    Raises:
        ReleaseError: the file cannot be written.
    """
    path = repo / INDEX_PATH
    doc = {"format": _FORMAT, "releases": [e.to_dict() for e in entries]}
    tmp: Path | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=".index.", suffix=".tmp", dir=path.parent)
        tmp = Path(name)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(doc, indent=2) + "\n")
        tmp.replace(path)
    except OSError as err:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        raise ReleaseError(f"cannot write the release index {path} ({err})") from None
    return path


def find(entries: Sequence[IndexEntry], rev: str) -> IndexEntry | None:
    """The entry published as ``rev`` when it is a tag of the index, else the last entry (the
    release published at or before that commit); None for an empty index."""
    for entry in entries:
        if entry.tag == rev:
            return entry
    return entries[-1] if entries else None
