"""Whole seconds of cached clips as raw H.264 bytes, and decoding them to RGB frames.

A cached clip (:mod:`needleforge.media.cache`) has an IDR keyframe, with its SPS/PPS, at the
start of every second and an index of every frame's byte offset, so the bytes of seconds
``k, k+1, …`` taken from the index form a stream that decodes on its own. Edited needles are
drawn on such a slice; the needle filter decodes one keyframe per sampled second; tests
compare decoded frames with the cache.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import av
import numpy as np
import numpy.typing as npt

from needleforge.errors import MediaError
from needleforge.media.cache import read_index

RGB = npt.NDArray[np.uint8]


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


def decode_h264(data: bytes) -> list[RGB]:
    """Decode a raw H.264 (Annex B) stream to RGB frames in display order.

    Raises:
        MediaError: when the bytes do not decode.
    """
    codec = av.CodecContext.create("h264", "r")
    frames: list[RGB] = []
    try:
        # parse(None) flushes the parser's last access unit; decode(None) the decoder.
        for packet in [*codec.parse(data), *codec.parse(None), None]:
            for frame in codec.decode(packet):
                frames.append(np.asarray(frame.to_ndarray(format="rgb24"), dtype=np.uint8))
    except av.FFmpegError as err:
        raise MediaError(f"cannot decode H.264 data ({err})") from None
    return frames


def keyframes_at(clip: Path, *, seconds: Sequence[int]) -> list[RGB]:
    """The first frame of each of ``seconds`` of cached ``clip`` (decoding keyframes only).

    Raises:
        MediaError: when a second lies outside the clip or the data do not decode.
    """
    frames = decode_h264(second_bytes(clip, seconds=seconds, first_frame_only=True))
    if len(frames) != len(seconds):
        raise MediaError(f"{clip}: decoded {len(frames)} keyframes for {len(seconds)} seconds")
    return frames


def decode_file(path: Path) -> list[RGB]:
    """Every frame of a video file (mp4, or a cached ``.h264`` clip) as RGB, in order.

    Raises:
        MediaError: when the file cannot be opened or decoded.
    """
    if path.suffix == ".h264":
        return decode_h264(path.read_bytes())
    try:
        with av.open(str(path)) as container:
            return [np.asarray(f.to_ndarray(format="rgb24"), dtype=np.uint8)
                    for f in container.decode(video=0)]
    except (av.FFmpegError, OSError) as err:
        raise MediaError(f"{path}: cannot decode ({err})") from None
