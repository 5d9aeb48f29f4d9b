"""Real clips: copied byte-for-byte from installed packages into ``clips/``.

A copy is skipped when the destination already holds the same bytes, so re-running a build
rewrites nothing that did not change.
"""

from __future__ import annotations

import filecmp
import shutil
from pathlib import Path

from needleforge.errors import MediaError, StudioError
from needleforge.media.probe import probe
from needleforge.studio.assets import RealClip, locate


def copy_clip(clip: RealClip, *, clips_dir: Path) -> Path:
    """Copy ``clip`` to ``clips_dir / clip.filename`` and return that path.

    Raises :class:`StudioError` naming the package and file when it is not installed.
    """
    source = locate(clip.source)
    target = clips_dir / clip.filename
    if target.is_file() and filecmp.cmp(source, target, shallow=False):
        return target
    tmp = target.with_name(f"{target.name}.partial")
    shutil.copyfile(source, tmp)
    tmp.replace(target)
    return target


def clip_duration_s(path: Path) -> float:
    """Duration of a copied clip (PyAV probe); raises :class:`StudioError` if unreadable."""
    try:
        return probe(path).duration_s
    except MediaError as err:
        raise StudioError(f"real clip {path.name} cannot be probed: {err}") from None
