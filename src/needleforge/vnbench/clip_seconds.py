"""Whole seconds of cached clips as raw H.264 bytes, decoding them to RGB frames, and the
same frames read from a haystack's source.

A cached clip (:mod:`needleforge.media.cache`) has an IDR keyframe, with its SPS/PPS, at the
start of every second and an index of every frame's byte offset, so the bytes of seconds
``k, k+1, …`` taken from the index form a stream that decodes on its own. Edited needles are
drawn on such a slice; tests compare decoded frames with the cache. The needle filter reads
its sampled seconds from the haystack's source instead (:func:`source_frames_at`), through the
cache's normalization but with no encode, so screening needs no cached clip.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

import av
import numpy as np

from needleforge.backends.base import RGBImage
from needleforge.errors import MediaError
from needleforge.media.cache import SELECT_EPS_S, normalize_filter, read_index, run_ffmpeg_measured
from needleforge.media.decode import VideoReader
from needleforge.params import RenderParams

#: How far before a sampled instant the decoder seeks (as the clip cache does), so the frame
#: on screen at that instant has been decoded.
_SEEK_MARGIN_S = 1.0
#: Seconds read per ffmpeg run (one input each): bounds the decoders open at once.
_SECONDS_PER_RUN = 8


def second_bytes(clip: Path, *, seconds: Sequence[int], first_frame_only: bool = False
                 ) -> bytes:
    """The coded frames of whole ``seconds`` of cached ``clip``, concatenated in that order.

    With ``first_frame_only`` each second contributes its keyframe alone.

    Raises:
        MediaError: when ``clip`` is not a cached clip or a second lies outside it.
    """
    index = read_index(clip)
    fps = index.fps
    chunks = []
    with clip.open("rb") as stream:
        for second in seconds:
            first = second * fps
            last = first + (1 if first_frame_only else fps)
            if second < 0 or last > index.n_frames:
                raise MediaError(f"{clip}: second {second} lies outside the clip's "
                                 f"{index.n_frames / fps:.3f} s")
            stream.seek(index.offsets[first])
            chunks.append(stream.read(index.offsets[last] - index.offsets[first]))
    return b"".join(chunks)


def decode_h264(data: bytes) -> list[RGBImage]:
    """Decode a raw H.264 (Annex B) stream to RGB frames in display order.

    Raises:
        MediaError: when the bytes do not decode.
    """
    codec = av.CodecContext.create("h264", "r")
    frames: list[RGBImage] = []
    try:
        # parse(None) flushes the parser's last access unit; decode(None) the decoder.
        for packet in [*codec.parse(data), *codec.parse(None), None]:
            for frame in codec.decode(packet):
                frames.append(np.asarray(frame.to_ndarray(format="rgb24"), dtype=np.uint8))
    except av.FFmpegError as err:
        raise MediaError(f"cannot decode H.264 data ({err})") from None
    return frames


def keyframes_at(clip: Path, *, seconds: Sequence[int]) -> list[RGBImage]:
    """The first frame of each of ``seconds`` of cached ``clip`` (decoding keyframes only).

    Raises:
        MediaError: when a second lies outside the clip or the data do not decode.
    """
    frames = decode_h264(second_bytes(clip, seconds=seconds, first_frame_only=True))
    if len(frames) != len(seconds):
        raise MediaError(f"{clip}: decoded {len(frames)} keyframes for {len(seconds)} seconds")
    return frames


def decode_file(path: Path) -> list[RGBImage]:
    """Every frame of a video file (mp4, or a cached ``.h264`` clip) as RGB, in order.

    Raises:
        MediaError: when the file is missing, cannot be opened or decoded.
    """
    if path.suffix == ".h264":
        return decode_h264(path.read_bytes())
    with VideoReader(path) as reader:
        return [frame.rgb() for frame in reader.frames()]


def source_frames_at(source: Path, *, start_s: float, seconds: Sequence[int],
                     profile: RenderParams) -> list[RGBImage]:
    """The frame on screen at ``start_s + k`` of ``source`` for each ``k`` of ``seconds``,
    fitted into the profile's frame like a cached clip's frame ``k * fps``, but not encoded.

    Why: the needle filter then screens a haystack without its cached clip, which a sample
    spliced from the source's GOPs never needs. Each second is an input of its own seeking
    to just before it, so a long haystack costs a GOP a second, not a decode of it all; the
    cache's filters (:func:`~needleforge.media.cache.normalize_filter`) pick and fit the frame.

    Raises:
        MediaError: naming ``source`` when ffmpeg cannot read it or yields no frame.
    """
    frames: list[RGBImage] = []
    with tempfile.TemporaryDirectory(prefix="vnbench-frames.") as tmp:
        for first in range(0, len(seconds), _SECONDS_PER_RUN):
            chunk = seconds[first: first + _SECONDS_PER_RUN]
            outs = [Path(tmp) / f"frame{first + j}.rgb" for j in range(len(chunk))]
            run_ffmpeg_measured(_frames_args(source, start_s=start_s, seconds=chunk,
                                             profile=profile, outs=outs),
                                what=f"haystack frames of {source} at {start_s:g} s + "
                                     f"{list(chunk)} s")
            frames += [_raw_rgb(out, profile=profile, source=source) for out in outs]
    return frames


def _frames_args(source: Path, *, start_s: float, seconds: Sequence[int],
                 profile: RenderParams, outs: Sequence[Path]) -> list[str]:
    """ffmpeg arguments writing the frame at ``start_s + k`` (each ``k``) as raw RGB, one
    output each; timestamps are set as the cache sets them (see ``media.cache``)."""
    inputs, graph, outputs = [], [], []
    for j, (second, out) in enumerate(zip(seconds, outs, strict=True)):
        at = start_s + second
        seek_s = max(0.0, at - _SEEK_MARGIN_S)
        lead_s = at - seek_s
        read_s = lead_s + 2 / profile.fps + _SEEK_MARGIN_S
        inputs += ["-ss", f"{seek_s:.6f}", "-t", f"{read_s:.6f}", "-i", str(source)]
        graph.append(f"[{j}:v:0]setpts=PTS-{lead_s + SELECT_EPS_S:.6f}/TB,"
                     f"{normalize_filter(profile)},"
                     f"scale=in_color_matrix=bt709:in_range=tv,format=rgb24[o{j}]")
        outputs += ["-map", f"[o{j}]", "-frames:v", "1", "-f", "rawvideo", str(out)]
    return [*inputs, "-filter_complex", ";".join(graph), *outputs]


def _raw_rgb(path: Path, *, profile: RenderParams, source: Path) -> RGBImage:
    shape = (profile.height, profile.width, 3)
    data = path.read_bytes() if path.is_file() else b""
    if len(data) != shape[0] * shape[1] * 3:
        raise MediaError(f"{source}: ffmpeg gave {len(data)} bytes for a {shape[1]}x{shape[0]} "
                         "frame (no frame at that time?)")
    return np.frombuffer(data, dtype=np.uint8).reshape(shape).copy()
