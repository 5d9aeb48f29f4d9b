"""Find the ffmpeg binary and run ffmpeg-python graphs with errors that name the input.

Discovery order: ``$NEEDLEFORGE_FFMPEG``, then ``ffmpeg`` on ``PATH``, then the binary bundled
with ``imageio-ffmpeg`` (which has drawtext, libass, overlay, concat and libx264, but no
ffprobe: probing goes through PyAV, see :mod:`needleforge.media.probe`).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import ffmpeg

from needleforge.errors import MediaError

ENV_VAR = "NEEDLEFORGE_FFMPEG"


@functools.cache
def _discover(env_value: str | None, path_value: str | None) -> str:
    if env_value:
        candidate = Path(env_value)
        if not (candidate.is_file() and os.access(candidate, os.X_OK)):
            raise MediaError(f"${ENV_VAR} = {env_value!r} is not an executable file")
        return str(candidate)
    on_path = shutil.which("ffmpeg", path=path_value)
    if on_path:
        return on_path
    try:
        import imageio_ffmpeg
    except ImportError:  # pragma: no cover - it is a declared dependency
        raise MediaError(
            "no ffmpeg found: set $NEEDLEFORGE_FFMPEG, put ffmpeg on PATH, "
            "or install imageio-ffmpeg"
        ) from None
    try:
        return str(imageio_ffmpeg.get_ffmpeg_exe())
    except RuntimeError as err:
        raise MediaError(f"imageio-ffmpeg has no usable ffmpeg binary: {err}") from None


def ffmpeg_binary() -> str:
    """Path of the ffmpeg executable to use (see module docstring for the order).

    Raises :class:`MediaError` when ``$NEEDLEFORGE_FFMPEG`` points at a non-executable or no
    binary can be found at all.
    """
    return _discover(os.environ.get(ENV_VAR), os.environ.get("PATH"))


def run_ffmpeg(stream: Any, *, what: str, overwrite: bool = True) -> None:
    """Run an ffmpeg-python output stream quietly.

    ``what`` names the job in the error (usually the output file), and the error carries the
    last lines of ffmpeg's stderr, which say what went wrong.
    """
    try:
        ffmpeg.run(
            stream,
            cmd=ffmpeg_binary(),
            capture_stdout=True,
            capture_stderr=True,
            overwrite_output=overwrite,
        )
    except ffmpeg.Error as err:
        tail = _stderr_tail(err.stderr)
        raise MediaError(f"ffmpeg failed for {what}: {tail}") from None


def run_ffmpeg_args(args: Sequence[str], *, what: str) -> None:
    """Run ffmpeg with raw arguments (for the few graphs ffmpeg-python cannot express)."""
    cmd = [ffmpeg_binary(), "-hide_banner", "-nostdin", "-loglevel", "error", "-y", *args]
    proc = subprocess.run(cmd, capture_output=True, check=False)
    if proc.returncode != 0:
        raise MediaError(f"ffmpeg failed for {what}: {_stderr_tail(proc.stderr)}")


def _stderr_tail(stderr: bytes | None, n_lines: int = 6) -> str:
    if not stderr:
        return "(no message)"
    lines = stderr.decode("utf-8", errors="replace").strip().splitlines()
    return " | ".join(line.strip() for line in lines[-n_lines:])
