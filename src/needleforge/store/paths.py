"""Where the files a store names are: absolute paths, never relative to a shell's folder.

A store keeps the path of every ingested video and subtitle sidecar. Kept as the ingest
command was given them (``--media-dir media`` → ``media/ab/ab….mp4``), they meant "relative
to the folder the ingest ran in", and every later stage run from another folder failed on
every video. So a path is written **absolute** and read back as it is, whatever the working
folder. Absolute rather than relative to the store file, because stores get copied on their
own (each DVC stage starts from a copy of the previous stage's store; benchmarks and tests
copy a represented store into a scratch folder): the copy must still find the media.

A project folder moved whole (or a DVC stage's store restored from the run cache into another
checkout) holds absolute paths to where it was. Media files are content-addressed
(``<media>/<sha[:2]>/<sha><suffix>``), so an absolute row whose file is gone is looked for
by its last folders beside the store file and up to :data:`MAX_UP` folders above it
(``data/db/x.duckdb`` finds ``data/media/ab/ab….mp4``); a name that is not a content hash is
never searched for.

Stores written before this rule hold paths relative to the folder their ingest ran in, or,
for a store that also went without a working folder, relative to the store file. A relative
path is read as relative to the store file's folder when that file exists, else as the old
meaning (relative to the working folder) when that file exists: run from the folder the
store was made in, an old store works as before, and opening it for writing rewrites those
rows as absolute paths (:meth:`StorePaths.legacy_fixes`), after which it works from
anywhere. A row whose file exists under neither reading is read as relative to the store
file, so the error that follows names the absolute path tried; ingesting its manifest again
records where the file is now.
"""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

#: How many folders above the store file's a moved media path is looked for.
MAX_UP = 2
#: The name of a file in the content-addressed media store (sha256 + suffix).
_HASHED = re.compile(r"[0-9a-f]{64}(\.[A-Za-z0-9]+)?")


@dataclasses.dataclass(frozen=True, slots=True)
class StorePaths:
    """The path rule of the store whose file is ``db`` (see the module docstring);
    ``root`` is the store file's folder, against which legacy relative rows are read."""

    root: Path

    @classmethod
    def of(cls, db: Path) -> StorePaths:
        """The rule for the store file ``db`` (relative ``db`` taken from the working folder,
        once, when the store is opened)."""
        return cls(_absolute(db).parent)

    def to_row(self, path: str) -> str:
        """What the store keeps for ``path``: its absolute form (a relative ``path`` is the
        caller's, taken from the working folder of the process that stores it)."""
        return str(_absolute(path))

    def from_row(self, kept: str) -> str:
        """The absolute path a stored value means (legacy rows as the module docstring says)."""
        path = Path(kept)
        if path.is_absolute():
            return kept if path.exists() else str(self._moved(path) or path)
        beside = Path(os.path.normpath(self.root / path))
        if beside.exists():
            return str(beside)
        legacy = _absolute(path)
        return str(legacy) if legacy.exists() else str(beside)

    def legacy_fixes(self, kept: str | None) -> str | None:
        """The absolute path to store instead of ``kept`` when it is a legacy relative row
        whose file is found (:meth:`from_row`); None when it needs no change or its file is
        found nowhere (then it is kept as it was, for a later run to find)."""
        if kept is None or Path(kept).is_absolute():
            return None
        found = self.from_row(kept)
        return found if Path(found).exists() else None

    def _moved(self, path: Path) -> Path | None:
        """Where a content-addressed file named by a stale absolute ``path`` is now: its
        last 2 or 3 path parts (``ab/<sha>.mp4``, ``media/ab/<sha>.mp4``) under the store's
        folder or one of its :data:`MAX_UP` parents; None when not found or not hashed."""
        if not _HASHED.fullmatch(path.name):
            return None
        for base in (self.root, *self.root.parents[:MAX_UP]):
            for depth in (3, 2):
                candidate = base.joinpath(*path.parts[-depth:])
                if candidate.is_file():
                    return candidate
        return None


def _absolute(path: str | Path) -> Path:
    """``path`` made absolute from the working folder, ``..`` and ``.`` folded (links kept:
    a media store reached through a link stays reached through it)."""
    return Path(os.path.normpath(Path(path).absolute()))
