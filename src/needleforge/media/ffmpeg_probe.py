"""Is this ffmpeg binary good enough? Its version against the floor, and the features we use.

**The floor is ffmpeg 5.1.** Why that number, found by running the suite on real binaries:

- 5.1 (Debian 12's ``apt-get install ffmpeg``) passes every test that runs ffmpeg, as the
  bundled 9.0.2 does (CI repeats a smoke set on it: ``.ci/smoke-distro-ffmpeg``).
- 4.2.2 (the static build older ``imageio-ffmpeg`` wheels ship) cannot build the normalizing
  filter chain every cached clip goes through (``scale`` has no ``force_divisible_by``), and
  the tests' fixtures use ``-fps_mode``, which first appeared in 5.1. Nothing between 4.2 and
  5.1 has been tried, so it is not trusted.
- What differs between 5.1 and newer releases was made version-independent instead of being
  raised into the floor: subtitle text reaches ``drawtext`` through a ``textfile`` with
  ``expansion=none`` (no escaping rules at all, see :mod:`needleforge.vnbench.text`; before
  6.1 drawtext lays glyphs at whole-pixel advances without HarfBuzz, so a line is drawn a
  few pixels narrower, with the same characters); the tests write display rotation into the
  mp4 header instead of using ``-display_rotation`` (6.0+); odd-sized and 1x1 fixtures
  convert to 4:4:4 before 5.1's ``color`` source sizes its chroma planes; a refused output
  is recognized by ``<path>: Permission denied``, all 5.1 prints.

A version number alone does not say what a build contains (a distribution can leave libx264
out), so the probe also runs one tiny job through every lavfi source, filter option and
encoder option the project and its tests use. Both answers come from one subprocess: the
banner ffmpeg prints before the job carries the version. Results are cached per binary path,
size and modification time, so a process pays for one probe per binary.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import re
import subprocess
import tempfile
from pathlib import Path

#: The oldest ffmpeg release the project accepts (see the module docstring for why).
FLOOR: tuple[int, int] = (5, 1)
FLOOR_TEXT = ".".join(map(str, FLOOR))
_PROBE_TIMEOUT_S = 60.0
#: Text of the drawtext check: every character that filtergraph or expansion parsing eats.
_PROBE_TEXT = "100% %{pts} \\n 'q': a,b [x]"
_VERSION_LINE = re.compile(r"^ffmpeg version (\S+)", re.MULTILINE)
_VERSION_NUMBER = re.compile(r"^n?(\d+)\.(\d+)(?:\.(\d+))?")
#: ffmpeg's own words for a missing piece → what we say about the binary.
_MISSING_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"Unknown encoder '([^']+)'"), "has no {0} encoder"),
    (re.compile(r"No such filter: '([^']+)'"), "has no {0} filter"),
    (re.compile(r"\[Parsed_([a-z0-9]+?)_\d+ @ [^\]]*\] Option '([^']+)' not found"),
     "has no option {1} in its {0} filter"),
    (re.compile(r"Option '([^']+)' not found"), "has no filter option {0}"),
    (re.compile(r"Unrecognized option '([^']+)'"), "has no -{0} option"),
)


@dataclasses.dataclass(frozen=True, slots=True)
class FfmpegProbe:
    """What one run of a binary told us.

    ``version`` is the word after ``ffmpeg version`` in its banner (None: it printed none);
    ``missing`` lists what keeps it from being used, each a clause about the binary
    (``"has no libx264 encoder"``); empty when it is usable.
    """

    path: str
    version: str | None
    missing: tuple[str, ...]

    @property
    def usable(self) -> bool:
        return not self.missing

    @property
    def version_text(self) -> str:
        """``"version 5.1.9-0+deb12u1"``, or ``"no version"`` for use in messages."""
        return f"version {self.version}" if self.version else "no version"

    def problem(self) -> str:
        """``"/usr/bin/ffmpeg (version 4.4.2) is older than the floor 5.1; has no …"``."""
        return f"{self.path} ({self.version_text}) " + ("; ".join(self.missing) or "is usable")


def parse_version(banner: str) -> str | None:
    """The version word of an ffmpeg banner (``5.1.9-0+deb12u1``, ``n9.0.2-17-g…``,
    ``N-113000-g…`` for an unreleased build), or None when there is no banner."""
    match = _VERSION_LINE.search(banner)
    return match.group(1) if match else None


def version_tuple(version: str) -> tuple[int, int, int] | None:
    """``(5, 1, 9)`` from ``5.1.9-0+deb12u1``; None for a build named by a git snapshot
    (``N-113000-g…``, ``git-2024-…``), whose age the number cannot tell."""
    match = _VERSION_NUMBER.match(version)
    if match is None:
        return None
    major, minor, patch = match.groups()
    return int(major), int(minor), int(patch or 0)


def below_floor(version: str) -> bool:
    """Whether a released ``version`` is older than :data:`FLOOR` (a snapshot never is:
    the feature check judges it)."""
    number = version_tuple(version)
    return number is not None and number[:2] < FLOOR


def probe_ffmpeg(path: str | Path) -> FfmpegProbe:
    """Run ``path`` once (cached per path, size and mtime) and judge it against the floor.

    A binary that cannot be run at all is reported in ``missing`` rather than raised, so
    discovery can pass it over; only the caller decides whether that is an error.
    """
    target = str(path)
    try:
        info = Path(target).stat()
    except OSError as err:
        return FfmpegProbe(target, None, (f"cannot be read ({err.strerror})",))
    return _probe_cached(target, info.st_size, info.st_mtime_ns)


@functools.cache
def _probe_cached(path: str, size: int, mtime_ns: int) -> FfmpegProbe:
    del size, mtime_ns  # cache key only: a replaced binary is probed again
    with tempfile.TemporaryDirectory(prefix="needleforge-ffprobe-") as work:
        textfile = Path(work) / "text.txt"
        textfile.write_bytes(_PROBE_TEXT.encode("utf-8"))
        try:
            proc = subprocess.run(probe_command(path, textfile=textfile, fontfile=_font()),
                                  capture_output=True, check=False, timeout=_PROBE_TIMEOUT_S)
        except (OSError, subprocess.SubprocessError) as err:
            return FfmpegProbe(path, None, (f"cannot be run ({err})",))
    stderr = proc.stderr.decode("utf-8", errors="replace")
    version = parse_version(stderr) or parse_version(proc.stdout.decode("utf-8", "replace"))
    missing: list[str] = []
    if version is None:
        missing.append("prints no 'ffmpeg version' banner (is it ffmpeg?)")
    elif below_floor(version):
        missing.append(f"is older than the floor {FLOOR_TEXT}")
    if proc.returncode != 0:
        missing.append(describe_failure(stderr, returncode=proc.returncode))
    return FfmpegProbe(path, version, tuple(missing))


def describe_failure(stderr: str, *, returncode: int) -> str:
    """What ffmpeg's messages say is missing (``"has no libx264 encoder"``), else their tail."""
    for pattern, words in _MISSING_PATTERNS:
        match = pattern.search(stderr)
        if match:
            return words.format(*match.groups())
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    tail = " | ".join(lines[-3:]) or "(no message)"
    return f"fails the feature check (exit status {returncode}: {tail})"


def probe_command(binary: str, *, textfile: Path, fontfile: Path | None) -> list[str]:
    """The feature check: every lavfi source, filter option and encoder option in use.

    The video chain is the scene-clip cache's normalizing chain (``media.cache``) after an
    overlay and a ``drawtext`` as VNBench draws subtitles; the audio chain is the clip
    sidecars'; the outputs use the cache's x264 options and ``-fps_mode`` (tests' fixtures).
    Output goes to the null muxer, so nothing is written.
    """
    size, rate, seconds = "96x54", "5", "0.4"
    lavfi = [f"testsrc2=size={size}:rate={rate}:duration={seconds}",
             f"color=c=black:size={size}:rate={rate}:duration={seconds}",
             f"nullsrc=size={size}:rate={rate}:duration={seconds}",
             f"sine=frequency=440:duration={seconds}"]
    inputs = [arg for source in lavfi for arg in ("-f", "lavfi", "-i", source)]
    inputs += ["-f", "lavfi", "-t", seconds, "-i", "anullsrc=r=48000:cl=stereo"]
    text = ""
    if fontfile is not None:
        text = (f"drawtext=textfile={_graph_path(textfile)}:fontfile={_graph_path(fontfile)}:"
                "expansion=none:fontsize=12:fontcolor=white:bordercolor=black:borderw=1:"
                "line_spacing=2:fix_bounds=1:x=(w-text_w)/2:y=h-text_h-2:"
                "enable='between(t,0,1)',")
    graph = (
        f"[0:v][1:v]overlay=x=0:y=0,{text}"
        "setpts=PTS-STARTPTS,fps=fps=5:round=up:start_time=0,"
        "scale=w=trunc(iw*sar/2)*2:h=ih,"
        "scale=w=64:h=36:force_original_aspect_ratio=decrease:force_divisible_by=2:"
        "out_color_matrix=bt709:out_range=tv,"
        "pad=w=64:h=36:x=(ow-iw)/2:y=(oh-ih)/2:color=black,setsar=sar=1,"
        "format=pix_fmts=yuv420p,tpad=stop=-1:stop_mode=clone[v];"
        "[2:v]geq=lum='16+2*N':cb=128:cr=128,format=yuv444p,nullsink;"
        "[3:a]atrim=start=0,asetpts=PTS-STARTPTS,aresample=48000,"
        "aformat=channel_layouts=stereo,apad,atrim=end=0.4[a];"
        "[4:a]aresample=async=1:first_pts=0,anullsink"
    )
    x264 = ["-c:v", "libx264", "-preset", "veryfast", "-crf", "23", "-pix_fmt", "yuv420p",
            "-g", rate, "-keyint_min", rate, "-sc_threshold", "0", "-bf", "0", "-threads", "1",
            "-x264-params", "stitchable=1:aud=1", "-fflags", "+bitexact",
            "-flags:v", "+bitexact", "-fps_mode", "cfr"]
    return [binary, "-nostdin", "-nostats", *inputs, "-filter_complex", graph,
            "-map", "[v]", "-frames:v", "2", *x264, "-map", "[a]", "-c:a", "aac",
            "-f", "null", "-"]


def _graph_path(path: Path) -> str:
    """``path`` escaped at both levels ffmpeg parses a graph (option value, then graph), as
    ffmpeg-python escapes the project's own drawtext paths."""
    option = "".join("\\" + c if c in "\\':=" else c for c in str(path))
    return "".join("\\" + c if c in "\\'[],;" else c for c in option)


def _font() -> Path | None:
    """The font VNBench draws with (matplotlib's DejaVu Sans), or None without matplotlib.

    Found the way :func:`needleforge.vnbench.text.default_font_path` finds it, without
    importing the ``vnbench`` package (numpy, the backends) for a version check.
    """
    spec = importlib.util.find_spec("matplotlib")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        return None
    path = Path(locations[0]) / "mpl-data" / "fonts" / "ttf" / "DejaVuSans.ttf"
    return path if path.is_file() else None
