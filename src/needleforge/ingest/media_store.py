"""Content hashing and the content-addressed media store.

Every ingested file lives at ``<media_dir>/<sha[:2]>/<sha><suffix>``. Files arrive through a
temporary name and an atomic rename, so an interrupted ingest never leaves a half-written file
under a final name; a file already present under its hash is not touched again.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Literal

LinkMode = Literal["hardlink", "copy", "symlink"]
_CHUNK = 1 << 20


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file's bytes, read in 1 MiB chunks (constant memory)."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def stored_path_for(media_dir: Path, sha256: str, suffix: str) -> Path:
    """Where content with this hash lives in the store (suffix kept for tools that sniff it)."""
    return media_dir / sha256[:2] / f"{sha256}{suffix.lower()}"


def place(source: Path, *, media_dir: Path, sha256: str, mode: LinkMode) -> Path:
    """Put ``source`` into the content-addressed store and return its stored path.

    ``hardlink`` falls back to a copy when the store is on another filesystem. Raises
    ``OSError`` when neither works (the caller turns it into a rejection).
    """
    target = stored_path_for(media_dir, sha256, source.suffix)
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=".incoming-", dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        tmp.unlink()
        if mode == "symlink":
            tmp.symlink_to(source.resolve())
        elif mode == "hardlink":
            try:
                os.link(source, tmp)
            except OSError:
                shutil.copy2(source, tmp)
        else:
            shutil.copy2(source, tmp)
        tmp.replace(target)
    finally:
        if tmp.exists() or tmp.is_symlink():
            tmp.unlink()
    return target
