"""The normalized scene-clip cache: every used scene of a source is encoded once.

A cached clip is a raw H.264 (Annex B) stream ``<key>.h264`` plus an index ``<key>.json``. The
stream has the render profile's frame rate and size, yuv420p BT.709 limited range, **a
keyframe (IDR, with its SPS/PPS) exactly every second** (no scene-cut keyframes), **no
B-frames** (decode order = display order) and an access-unit delimiter before every frame.
The index records the profile and the byte offset and keyframe flag of every frame, so a
montage takes any whole-second-aligned run of frames by byte slicing: no probing, no decoding
(:mod:`needleforge.media.join`). x264 runs single-threaded with ``stitchable`` headers and
bitexact flags, so the same inputs give the same bytes on one machine (not across x86
instruction sets at the profile's presets: see :mod:`needleforge.studio.encode`), and clips of
different content share identical SPS/PPS.

**Frame selection.** A clip of ``[start_s, end_s)`` has
``N = frame_at(end_s - start_s)`` (:func:`~needleforge.records.span.frame_at`: half up) frames
(duration ``N / fps``). Clip frame ``k`` shows the source frame on screen at
``t_k = start_s + k / fps``: the last source frame whose timestamp is ``<= t_k + 1 ms`` (the
millisecond absorbs float rounding of frame-aligned scene bounds). When the source runs at the
profile rate and ``start_s`` is on a frame, clip frame ``k`` is exactly source frame
``start_s * fps + k``. Past the end of the source the last frame is held.

**Keys.** sha256 of (source content hash, or path + size + mtime when none is known; start;
end; the profile minus ``workers``; :data:`CACHE_VERSION`) → ``<root>/<key[:2]>/<key>.h264``
(with ``<key>.json``, and ``<key>.m4a`` when the profile keeps audio). Files are written under
temporary names and renamed into place, the stream last, so a present ``.h264`` means a
complete clip.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
import os
import re
import signal
import subprocess
import tempfile
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

import av

from needleforge.errors import MediaError, OutputError
from needleforge.media.ffmpeg import ffmpeg_binary
from needleforge.media.outputs import scratch_path
from needleforge.params import RenderParams
from needleforge.records import frame_at

#: Bump when the encoding recipe changes, so old clips are not reused under new rules.
CACHE_VERSION = 2
#: Tolerance added to sample times (see module docstring, "Frame selection").
SELECT_EPS_S = 0.001
#: How far before a clip's start the decoder seeks, so the frame on screen at the start exists.
_SEEK_MARGIN_S = 1.0
AUDIO_RATE_HZ = 48_000
#: Access-unit delimiter (4-byte start code + NAL type 9) that x264 writes before every frame.
_AUD = b"\x00\x00\x00\x01\x09"
#: Length of that delimiter NAL with its start code (start code, header, one payload byte).
AUD_BYTES = 6
_NAL_START = re.compile(rb"\x00\x00\x01(.)", re.DOTALL)
_NAL_IDR = 5
#: ffmpeg messages meaning it could not create or write its output (not a decoding problem).
_WRITE_FAILURES = ("Error opening output", "File too large", "No space left on device",
                   "Disk quota exceeded", "Read-only file system")
#: ffmpeg before 6.0 says only ``<output>: Permission denied`` when it cannot open its output.
_OPEN_REFUSED = "Permission denied"


def video_encoder_options(profile: RenderParams) -> dict[str, str]:
    """ffmpeg output options shared by cached clips and fresh pieces (same stream parameters)."""
    return {
        "c:v": "libx264", "preset": profile.preset, "crf": str(profile.crf),
        "pix_fmt": "yuv420p", "g": str(profile.fps), "keyint_min": str(profile.fps),
        "sc_threshold": "0", "bf": "0", "threads": "1", "x264-params": "stitchable=1:aud=1",
        "color_primaries": "bt709", "color_trc": "bt709", "colorspace": "bt709",
        "color_range": "tv", "fflags": "+bitexact", "flags:v": "+bitexact",
        "map_metadata": "-1", "map_chapters": "-1", "f": "h264",
    }


def audio_encoder_options() -> dict[str, str]:
    """ffmpeg output options of normalized audio (AAC 48 kHz stereo)."""
    return {"c:a": "aac", "b:a": "128k", "ar": str(AUDIO_RATE_HZ), "ac": "2",
            "fflags": "+bitexact", "flags:a": "+bitexact", "map_metadata": "-1"}


def as_args(options: dict[str, str]) -> list[str]:
    """``{"c:v": "libx264"}`` → ``["-c:v", "libx264"]``."""
    return [item for key, value in options.items() for item in (f"-{key}", value)]


def normalize_steps(profile: RenderParams) -> list[tuple[str, dict[str, str]]]:
    """Filters from timestamps (0 = first wanted instant) to profile frames, in order.

    ``fps`` with ``round=up`` is sample-and-hold: output slot ``k`` takes the last input
    frame with timestamp ``<= k / fps``. Then the picture is fitted inside the frame keeping
    its display aspect (anamorphic sources are squared first) and padded with black, and the
    last frame is held if the input ends early (the caller caps the frame count).
    """
    w, h = str(profile.width), str(profile.height)
    return [
        ("fps", {"fps": str(profile.fps), "round": "up", "start_time": "0"}),
        ("scale", {"w": "trunc(iw*sar/2)*2", "h": "ih"}),
        ("scale", {"w": w, "h": h, "force_original_aspect_ratio": "decrease",
                   "force_divisible_by": "2", "out_color_matrix": "bt709", "out_range": "tv"}),
        ("pad", {"w": w, "h": h, "x": "(ow-iw)/2", "y": "(oh-ih)/2", "color": "black"}),
        ("setsar", {"sar": "1"}),
        ("format", {"pix_fmts": "yuv420p"}),
        ("tpad", {"stop": "-1", "stop_mode": "clone"}),
    ]


def normalize_filter(profile: RenderParams) -> str:
    """:func:`normalize_steps` as one ``-vf`` filter-chain string."""
    return ",".join(
        f"{name}=" + ":".join(f"{key}={value}" for key, value in options.items())
        for name, options in normalize_steps(profile)
    )


def run_ffmpeg_measured(
    args: Sequence[str], *, what: str, stdin_chunks: Iterable[bytes] | None = None
) -> float:
    """Run ffmpeg with ``args`` and return the CPU seconds (user + system) it used.

    The CPU time is that one child's, read with :func:`os.wait4`, so concurrent calls from
    several threads are each measured exactly. ``stdin_chunks`` are written to its stdin.
    Raises :class:`MediaError` naming ``what`` with the tail of ffmpeg's messages on failure,
    or :class:`~needleforge.errors.OutputError` naming the output folder (the last argument's)
    when ffmpeg could not open or write its output (read-only folder, disk full).
    """
    cmd = [ffmpeg_binary(), "-hide_banner", "-nostdin", "-loglevel", "error", "-y", *args]
    with tempfile.TemporaryFile() as err:
        stdin = subprocess.PIPE if stdin_chunks is not None else subprocess.DEVNULL
        proc = subprocess.Popen(cmd, stdin=stdin, stdout=subprocess.DEVNULL, stderr=err)
        if stdin_chunks is not None and proc.stdin is not None:
            # A broken pipe means ffmpeg stopped reading: its exit status and messages say why.
            with contextlib.suppress(BrokenPipeError):
                for chunk in stdin_chunks:
                    proc.stdin.write(chunk)
            with contextlib.suppress(BrokenPipeError):
                proc.stdin.close()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            lines = err.read().decode("utf-8", errors="replace").strip().splitlines()
            tail = " | ".join(line.strip() for line in lines[-6:]) or "(no message)"
            if args and proc.returncode == -signal.SIGXFSZ:
                # subprocess restores SIGXFSZ's default action, so a write past a file-size
                # limit kills ffmpeg silently instead of failing with EFBIG.
                raise OutputError(f"ffmpeg failed for {what}: cannot write to "
                                  f"{Path(args[-1]).parent}: file too large (killed by "
                                  "SIGXFSZ: the file-size limit, ulimit -f, was reached)")
            if args and (any(marker in tail for marker in _WRITE_FAILURES)
                         or f"{args[-1]}: {_OPEN_REFUSED}" in tail):
                folder = Path(args[-1]).parent
                raise OutputError(f"ffmpeg failed for {what}: cannot write to {folder} "
                                  f"(read-only or full?): {tail}")
            raise MediaError(f"ffmpeg failed for {what}: {tail}")
    return usage.ru_utime + usage.ru_stime


@dataclasses.dataclass(frozen=True, slots=True)
class ClipIndex:
    """Where each frame of a cached stream lies, and the profile it was encoded with.

    Frame ``k`` is the bytes ``offsets[k]:offsets[k + 1]`` of the stream (starting with its
    6-byte access-unit delimiter); ``keyframes`` lists the frames that are IDR pictures.
    """

    fps: int
    width: int
    height: int
    offsets: tuple[int, ...]
    keyframes: tuple[int, ...]

    @property
    def n_frames(self) -> int:
        return len(self.offsets) - 1

    def matches(self, profile: RenderParams) -> bool:
        """True when the stream can be joined with others of ``profile`` by stream copy."""
        return (self.fps, self.width, self.height) == (profile.fps, profile.width,
                                                      profile.height)


def index_path(clip: Path) -> Path:
    """The index file of a cached stream (``<clip>.json``)."""
    return clip.with_suffix(".json")


def index_stream(data: bytes, *, profile: RenderParams) -> ClipIndex:
    """Index an Annex B stream written with :func:`video_encoder_options` (AUD per frame)."""
    offsets = []
    at = data.find(_AUD)
    while at >= 0:
        offsets.append(at)
        at = data.find(_AUD, at + len(_AUD))
    offsets.append(len(data))
    keyframes: list[int] = []
    frame = 0
    for nal in _NAL_START.finditer(data):
        while frame + 1 < len(offsets) - 1 and nal.start() >= offsets[frame + 1]:
            frame += 1
        if nal.group(1)[0] & 0x1F == _NAL_IDR and (not keyframes or keyframes[-1] != frame):
            keyframes.append(frame)
    return ClipIndex(fps=profile.fps, width=profile.width, height=profile.height,
                     offsets=tuple(offsets), keyframes=tuple(keyframes))


def read_index(clip: Path) -> ClipIndex:
    """The index of cached stream ``clip``; raise :class:`MediaError` when it is missing."""
    try:
        data = json.loads(index_path(clip).read_text("utf-8"))
        return ClipIndex(fps=int(data["fps"]), width=int(data["width"]),
                         height=int(data["height"]), offsets=tuple(data["offsets"]),
                         keyframes=tuple(data["keyframes"]))
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise MediaError(f"{clip}: not a cached clip (its index {index_path(clip).name} is "
                         f"missing or unreadable: {err})") from None


def finish_clip(tmp: Path, final: Path, *, profile: RenderParams, n_frames: int,
                what: str) -> None:
    """Check a freshly encoded stream, write its index and move both into place.

    Raises :class:`MediaError` naming ``what`` when the stream does not hold ``n_frames``
    frames with a keyframe on every whole second (and nowhere else).
    """
    index = index_stream(tmp.read_bytes(), profile=profile)
    if index.n_frames != n_frames:
        raise MediaError(f"{what}: encoded {index.n_frames} frames, expected {n_frames}")
    if index.keyframes != tuple(range(0, n_frames, profile.fps)):
        raise MediaError(f"{what}: keyframes at frames {index.keyframes[:5]}…, expected one "
                         f"every {profile.fps} frames")
    record = {"version": CACHE_VERSION, "fps": index.fps, "width": index.width,
              "height": index.height, "offsets": index.offsets, "keyframes": index.keyframes}
    tmp_index = tmp.with_suffix(".json")
    tmp_index.write_text(json.dumps(record, separators=(",", ":")), "utf-8")
    tmp_index.replace(index_path(final))
    tmp.replace(final)  # last: a present stream means a complete clip


@dataclasses.dataclass(frozen=True, slots=True)
class ClipSpec:
    """``[start_s, end_s)`` of ``source``; ``source_id`` is its content hash when known."""

    source: Path
    start_s: float
    end_s: float
    source_id: str | None = None

    def __post_init__(self) -> None:
        if not (math.isfinite(self.start_s) and self.start_s >= 0):
            raise ValueError(f"{self.start_s = } must be finite and >= 0")
        if not (math.isfinite(self.end_s) and self.end_s > self.start_s):
            raise ValueError(f"{self.end_s = } must be > start_s = {self.start_s}")


@dataclasses.dataclass(frozen=True, slots=True)
class ClipResult:
    """A clip ready in the cache; ``cpu_s`` is the encode's CPU time (0 on a hit)."""

    path: Path
    hit: bool
    cpu_s: float
    n_frames: int


class SceneClipCache:
    """Encode-once store of normalized clips under ``root`` (thread-safe).

    ``hits`` and ``misses`` count :meth:`ensure` calls that found / encoded a clip.
    """

    def __init__(self, root: Path, *, profile: RenderParams) -> None:
        self.root = root
        self.profile = profile
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        self._key_locks: dict[str, threading.Lock] = {}

    def key(self, spec: ClipSpec) -> str:
        """The content key of ``spec`` under this profile (see module docstring).

        Raises :class:`MediaError` when no ``source_id`` is given and the source is missing.
        """
        source = spec.source_id
        if source is None:
            try:
                stat = spec.source.stat()
            except OSError as err:
                raise MediaError(f"{spec.source}: cannot read source ({err.strerror})") from None
            source = f"{spec.source.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"
        payload = {"v": CACHE_VERSION, "source": source, "start_s": round(spec.start_s, 6),
                   "end_s": round(spec.end_s, 6),
                   "profile": self.profile.model_dump(mode="json", exclude={"workers"})}
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()

    def path_for(self, spec: ClipSpec) -> Path:
        """Where the clip of ``spec`` lives (whether or not it exists yet)."""
        key = self.key(spec)
        return self.root / key[:2] / f"{key}.h264"

    def ensure(self, spec: ClipSpec) -> ClipResult:
        """The clip of ``spec``, encoded now unless already cached.

        Raises :class:`MediaError` naming the source when it is missing, cannot be decoded,
        or yields a clip with the wrong number of frames.
        """
        path = self.path_for(spec)
        n_frames = frame_at(spec.end_s - spec.start_s, rate=self.profile.fps)
        with self._lock:
            key_lock = self._key_locks.setdefault(path.stem, threading.Lock())
        with key_lock:
            if path.is_file():
                with self._lock:
                    self.hits += 1
                return ClipResult(path=path, hit=True, cpu_s=0.0, n_frames=n_frames)
            cpu_s = self._encode(spec, path, n_frames)
            with self._lock:
                self.misses += 1
            return ClipResult(path=path, hit=False, cpu_s=cpu_s, n_frames=n_frames)

    def _encode(self, spec: ClipSpec, path: Path, n_frames: int) -> float:
        if not spec.source.is_file():
            raise MediaError(f"{spec.source}: source video not found")
        if n_frames < 1:
            raise MediaError(f"{spec.source} [{spec.start_s}, {spec.end_s}): shorter than "
                             f"half a frame at {self.profile.fps} fps")
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp_video = scratch_path(path, ".h264")
        tmp_audio = tmp_video.with_suffix(".m4a")
        what = f"scene clip {spec.source} [{spec.start_s:.3f}, {spec.end_s:.3f})"
        try:
            args = _clip_args(spec, self.profile, n_frames, tmp_video, tmp_audio)
            cpu_s = run_ffmpeg_measured(args, what=what)
            if self.profile.audio:
                tmp_audio.replace(path.with_suffix(".m4a"))
            finish_clip(tmp_video, path, profile=self.profile, n_frames=n_frames, what=what)
        finally:
            tmp_video.unlink(missing_ok=True)
            tmp_video.with_suffix(".json").unlink(missing_ok=True)
            tmp_audio.unlink(missing_ok=True)
        return cpu_s


def _has_audio(path: Path) -> bool:
    try:
        with av.open(str(path)) as container:
            return bool(container.streams.audio)
    except (av.FFmpegError, OSError) as err:
        raise MediaError(f"{path}: cannot open source ({err})") from None


def _clip_args(
    spec: ClipSpec, profile: RenderParams, n_frames: int, video_out: Path, audio_out: Path
) -> list[str]:
    """ffmpeg arguments encoding ``spec`` (and its audio sidecar when the profile keeps it)."""
    seek_s = max(0.0, spec.start_s - _SEEK_MARGIN_S)
    lead_s = spec.start_s - seek_s
    duration_s = n_frames / profile.fps
    read_s = lead_s + duration_s + _SEEK_MARGIN_S
    silent = profile.audio and not _has_audio(spec.source)
    args = ["-f", "lavfi", "-i", f"anullsrc=r={AUDIO_RATE_HZ}:cl=stereo"] if silent else []
    src = 1 if silent else 0
    args += ["-ss", f"{seek_s:.6f}", "-t", f"{read_s:.6f}", "-i", str(spec.source)]
    vf = f"setpts=PTS-{lead_s + SELECT_EPS_S:.6f}/TB,{normalize_filter(profile)}"
    args += ["-map", f"{src}:v:0", "-vf", vf, "-frames:v", str(n_frames),
             *as_args(video_encoder_options(profile)), str(video_out)]
    if not profile.audio:
        return args
    tail = f"apad,atrim=end={duration_s:.6f}"
    if silent:
        args += ["-map", "0:a:0", "-af", tail]
    else:
        args += ["-map", "0:a:0", "-af",
                 f"atrim=start={lead_s:.6f},asetpts=PTS-STARTPTS,aresample={AUDIO_RATE_HZ},"
                 f"aformat=channel_layouts=stereo,{tail}"]
    return [*args, *as_args(audio_encoder_options()), "-f", "ipod", str(audio_out)]
