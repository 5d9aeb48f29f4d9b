"""Find the ffmpeg binary (one discovery, with a floor) and run it with errors naming the input.

Discovery order, each candidate judged by :mod:`needleforge.media.ffmpeg_probe` (version at or
above the floor, every feature the project uses):

1. ``$NEEDLEFORGE_FFMPEG``: the user is explicit, so one that is missing, not executable,
   below the floor or lacking a feature is an error naming it, its version and what is
   missing. Never silently replaced.
2. the binary bundled with ``imageio-ffmpeg``, **the pinned encoder**: pyproject pins the
   package's exact version, so every machine encodes the same frames to the same bytes (the
   x264 settings already hold the instruction set, :mod:`needleforge.media.h264`). It has
   drawtext, libass, overlay, concat and libx264, but no ffprobe: probing goes through PyAV,
   see :mod:`needleforge.media.probe`.
3. ``ffmpeg`` on ``PATH``, only where the bundle has no binary for this platform or its binary
   fails the probe; a one-line warning (logged once per process) says so, since what it
   encodes differs byte for byte from a build with the pinned encoder.

Why the bundle before ``PATH``: a distribution's ffmpeg (Debian 12's 5.1.9, gained by a
machine mid-session) gave the real-footage programs other bytes, so other video ids, and every
verdict keyed on them went stale; a release should not depend on what else a machine has
installed. Every caller (the stages, the tests' fixtures, the benchmarks) goes through
:func:`find_ffmpeg` (or :func:`ffmpeg_binary`, its path), so they all run the same binary.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import shutil
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import ffmpeg

from needleforge.errors import MediaError
from needleforge.media.ffmpeg_probe import FLOOR_TEXT, probe_ffmpeg

ENV_VAR = "NEEDLEFORGE_FFMPEG"
FfmpegSource = Literal["env", "path", "bundled"]
_log = logging.getLogger(__name__)
_lock = threading.Lock()


@dataclasses.dataclass(frozen=True, slots=True)
class FfmpegChoice:
    """The ffmpeg in use: its path, its version word, where it came from and why it won."""

    path: str
    version: str
    source: FfmpegSource
    why: str

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "version": self.version, "source": self.source,
                "why": self.why}


def find_ffmpeg() -> FfmpegChoice:
    """The ffmpeg to use (see the module docstring for the order and the floor).

    Probing costs one ffmpeg run per binary per process; the choice is cached per value of
    ``$NEEDLEFORGE_FFMPEG`` and ``PATH``.

    Raises:
        MediaError: when ``$NEEDLEFORGE_FFMPEG`` is set to an unusable binary, or when neither
            imageio-ffmpeg nor ``PATH`` offers one that passes (naming each and why).
    """
    with _lock:
        return _discover(os.environ.get(ENV_VAR), os.environ.get("PATH"))


def ffmpeg_binary() -> str:
    """Path of the ffmpeg executable to use: :func:`find_ffmpeg`'s (same errors)."""
    return find_ffmpeg().path


@functools.cache
def _discover(env_value: str | None, path_value: str | None) -> FfmpegChoice:
    """The choice for these values of the variable and ``PATH`` (cached on them, so a test
    or a user that changes either gets a fresh discovery)."""
    if env_value:
        return _from_env(env_value)
    try:
        bundled, bundle_version = _bundled()
    except MediaError as err:
        passed_over = str(err)
    else:
        found = probe_ffmpeg(bundled)
        if found.usable:
            return FfmpegChoice(found.path, found.version or "unknown", "bundled",
                                f"the pinned encoder, bundled with imageio-ffmpeg "
                                f"{bundle_version}; meets the floor {FLOOR_TEXT} and has every "
                                "feature used")
        passed_over = f"the imageio-ffmpeg binary {found.problem()}"
    on_path = shutil.which("ffmpeg", path=path_value)
    if on_path is None:
        raise MediaError(f"no usable ffmpeg: {passed_over}, and there is no ffmpeg on PATH; "
                         f"install ffmpeg {FLOOR_TEXT} or newer with libx264 and set "
                         f"${ENV_VAR} to it")
    found = probe_ffmpeg(on_path)
    if not found.usable:
        raise MediaError(f"no usable ffmpeg: {passed_over}; the ffmpeg on PATH "
                         f"{found.problem()}; install ffmpeg {FLOOR_TEXT} or newer with "
                         f"libx264 and set ${ENV_VAR} to it")
    _notice_once(f"needleforge: not using the pinned encoder: {passed_over}; using the ffmpeg "
                 f"on PATH ({on_path}), whose videos differ byte for byte from the pinned one's")
    return FfmpegChoice(on_path, found.version or "unknown", "path",
                        f"first ffmpeg on PATH, since {passed_over}; meets the floor "
                        f"{FLOOR_TEXT} and has every feature used")


def _from_env(env_value: str) -> FfmpegChoice:
    """``$NEEDLEFORGE_FFMPEG``'s binary, or a MediaError saying why it cannot be used."""
    candidate = Path(env_value)
    if not (candidate.is_file() and os.access(candidate, os.X_OK)):
        raise MediaError(f"${ENV_VAR} = {env_value!r} is not an executable file")
    found = probe_ffmpeg(candidate)
    if not found.usable:
        raise MediaError(f"${ENV_VAR} = {env_value!r} cannot be used: {found.problem()}; "
                         f"needleforge needs ffmpeg {FLOOR_TEXT} or newer with libx264 "
                         f"(unset ${ENV_VAR} to use the one bundled with imageio-ffmpeg)")
    return FfmpegChoice(str(candidate), found.version or "unknown", "env",
                        f"${ENV_VAR} is set; meets the floor {FLOOR_TEXT} and has every "
                        "feature used")


def _bundled() -> tuple[str, str]:
    """imageio-ffmpeg's binary and the package's version."""
    try:
        import imageio_ffmpeg
    except ImportError:  # pragma: no cover - it is a declared dependency
        raise MediaError(
            "imageio-ffmpeg is not installed (set $NEEDLEFORGE_FFMPEG, or install "
            "needleforge's pinned imageio-ffmpeg)"
        ) from None
    try:
        return str(imageio_ffmpeg.get_ffmpeg_exe()), str(imageio_ffmpeg.__version__)
    except RuntimeError as err:
        raise MediaError(f"imageio-ffmpeg has no usable ffmpeg binary: {err}") from None


@functools.cache
def _notice_once(message: str) -> None:
    """Log ``message`` as a warning the first time only (cached on the message)."""
    _log.warning(message)


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
