"""Render a :class:`~needleforge.studio.plan.VideoPlan` to H.264 by piping raw frames to ffmpeg.

Why piping rather than one ffmpeg filter graph (looped stills, ``overlay`` with time
expressions, ``concat``): on the 2-core build machine a 60 s 640x360 video with six scenes
took 3.0 s piped versus 4.6 s as a filter graph with the same encoder settings, because the
graph re-scales and converts every looped still per frame while numpy only copies a cached
backdrop and pastes the sprites. Piping also makes the ground truth exact by construction:
the pixels are placed by the same integer arithmetic the ground truth is computed from, and
it scales to long programs without an ffmpeg input per scene.

Byte-identical output for the same seed: single-threaded x264 (its output depends on the
thread count, which would otherwise follow the machine's cores), a fixed GOP of one second
with scene-cut keyframes off, and ``+bitexact`` muxer and encoder flags with metadata
dropped (no encoder version or creation time in the container).

Those settings give the same bytes on one machine, not on every machine: x264's default
analysis picks different intra modes with SIMD (its 4x4/8x8 intra searches have SSSE3+
shortcuts that score modes differently from the C code) and its macroblock tree sums floats
in SIMD order, and swscale's default RGB->YUV conversion rounds differently with AVX2. So the
same seed encoded on an AVX2 and an AVX-512 machine differs, and any hash of the video (and
every id derived from it) with it. ``portable=True`` encodes with :data:`PORTABLE_X264` and
:data:`PORTABLE_SWS_FLAGS`: ultrafast's analysis (no 4x4/8x8 intra search, no macroblock tree)
with CABAC, deblocking, B-frames, hex motion search, sub-pixel refinement, 8x8 transforms,
adaptive quantization and weighted prediction put back, and bit-exact colour conversion.
Measured on real footage: the same bytes with x264 limited to C, SSE2, SSSE3, SSE4.2, AVX and
AVX2 and with swscale's SIMD forced off, at 1.6x the size of the default settings for the
same quality (PSNR 47.9 vs 48.2 dB) and 0.8x the encode time. (Same ffmpeg build assumed:
another x264 version is another encoder.)
"""

from __future__ import annotations

import contextlib
import subprocess
import tempfile
from collections.abc import Iterable, Iterator
from fractions import Fraction
from pathlib import Path
from typing import IO

import ffmpeg

from needleforge.errors import StudioError
from needleforge.media.ffmpeg import ffmpeg_binary
from needleforge.studio.images import ImageBank, Rgb
from needleforge.studio.plan import ObjectPlan, VideoPlan

#: x264 settings: ``veryfast`` is the best speed/size trade-off measured here (``ultrafast``
#: doubles file size on textured backdrops, ``fast`` costs 1.7x the time).
X264_PRESET = "veryfast"
X264_CRF = 20
#: x264 options on top of ``-preset ultrafast`` whose output does not depend on the CPU's
#: instruction set (see the module docstring); used with ``portable=True``.
PORTABLE_X264 = ("cabac=1:deblock=0,0:bframes=3:b-adapt=1:rc-lookahead=10:me=hex:subme=2:"
                 "8x8dct=1:aq-mode=1:weightp=1:ref=1")
#: swscale flags for the RGB->YUV conversion with ``portable=True``: the same result with or
#: without SIMD.
PORTABLE_SWS_FLAGS = "bilinear+accurate_rnd+bitexact"


def frame_rate(fps: float) -> Fraction:
    """``fps`` as the exact fraction ffmpeg is given (``29.97`` -> ``2997/100``)."""
    return Fraction(fps).limit_denominator(1001)


def encoder_command(*, width: int, height: int, fps: float, out: Path,
                    portable: bool = False) -> list[str]:
    """The ffmpeg command line that encodes rgb24 frames from stdin into ``out``
    (``portable``: the same bytes on any x86 instruction set, see the module docstring)."""
    rate = str(frame_rate(fps))
    x264 = f"threads=1:{PORTABLE_X264}" if portable else "threads=1"
    # an output option: ffmpeg ignores it among the global options after the output file
    sws = {"sws_flags": PORTABLE_SWS_FLAGS} if portable else {}
    gop = max(1, round(fps))
    source = ffmpeg.input(
        "pipe:", format="rawvideo", pix_fmt="rgb24", s=f"{width}x{height}", framerate=rate
    )
    encoded = ffmpeg.output(
        source,
        str(out),
        vcodec="libx264",
        preset="ultrafast" if portable else X264_PRESET,
        crf=X264_CRF,
        pix_fmt="yuv420p",
        g=gop,
        keyint_min=gop,
        sc_threshold=0,
        an=None,
        map_metadata=-1,
        fflags="+bitexact",
        **{"flags:v": "+bitexact", "x264-params": x264},
        **sws,
    ).global_args("-hide_banner", "-loglevel", "error")
    return list(ffmpeg.compile(encoded, cmd=ffmpeg_binary(), overwrite_output=True))


def iter_frames(plan: VideoPlan, *, bank: ImageBank) -> Iterator[memoryview]:
    """Every frame of ``plan`` as raw rgb24 bytes, in order.

    Raises :class:`StudioError` when a backdrop or cut-out image cannot be read.
    """
    for scene in plan.scenes:
        backdrop = bank.backdrop(scene.backdrop)
        sprites = [
            (obj, bank.sprite(obj.cutout, size_px=obj.size_px, mirrored=obj.mirrored))
            for obj in plan.objects
            if obj.scene_index == scene.index
        ]
        for frame in range(scene.start_frame, scene.end_frame):
            active = [(obj, sprite) for obj, sprite in sprites if obj.visible_at(frame)]
            yield _compose(backdrop, active, frame).data


def _compose(backdrop: Rgb, active: list[tuple[ObjectPlan, Rgb]], frame: int) -> Rgb:
    if not active:
        return backdrop
    canvas = backdrop.copy()
    for obj, sprite in active:
        x, y = obj.position_at(frame)
        height, width = sprite.shape[:2]
        canvas[y : y + height, x : x + width] = sprite
    return canvas


def render_video(plan: VideoPlan, *, bank: ImageBank, out: Path) -> None:
    """Encode ``plan`` into ``out`` (written to a ``.partial`` file, then renamed).

    Raises :class:`StudioError` naming ``out`` when ffmpeg fails (with its last messages) or
    an image cannot be read; no partial file is left behind.
    """
    encode_frames(iter_frames(plan, bank=bank), width=plan.width, height=plan.height,
                  fps=plan.fps, out=out)


def encode_frames(chunks: Iterable[bytes | memoryview], *, width: int, height: int, fps: float,
                  out: Path, portable: bool = False) -> None:
    """Pipe raw RGB frames (``width`` x ``height``) into the studio's encoder as ``out``
    (``portable``: with :func:`encoder_command`'s CPU-independent settings).

    The encoder writes a ``.partial`` file, renamed to ``out`` once complete. A closed pipe
    means ffmpeg died: its exit status and last messages are reported.

    Raises :class:`StudioError` naming ``out`` when ffmpeg fails; whatever ``chunks`` raises
    passes through. No partial file is left behind either way.
    """
    tmp = out.with_name(f"{out.stem}.partial{out.suffix}")
    command = encoder_command(width=width, height=height, fps=fps, out=tmp, portable=portable)
    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=errors
        )
        try:
            _feed(proc, chunks)
        except BaseException:
            proc.kill()
            proc.wait()
            tmp.unlink(missing_ok=True)
            raise
        if proc.wait() != 0:
            tmp.unlink(missing_ok=True)
            raise StudioError(f"ffmpeg failed rendering {out}: {_tail(errors)}")
    tmp.replace(out)


def _feed(proc: subprocess.Popen[bytes], chunks: Iterable[bytes | memoryview]) -> None:
    """Write every frame to ffmpeg's stdin; a closed pipe means ffmpeg died (reported later)."""
    if proc.stdin is None:  # pragma: no cover - Popen was given stdin=PIPE
        raise StudioError("ffmpeg encoder has no stdin pipe")
    try:
        for chunk in chunks:
            proc.stdin.write(chunk)
    except BrokenPipeError:
        pass
    finally:
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.close()


def _tail(stream: IO[bytes], n_lines: int = 6) -> str:
    stream.seek(0)
    lines = stream.read().decode("utf-8", errors="replace").strip().splitlines()
    return " | ".join(line.strip() for line in lines[-n_lines:]) or "(no message)"
