"""``render:`` of ``params.yaml``: the one output profile of clips and montages."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from needleforge.params.base import ParamsSection as _Section


class RenderParams(_Section):
    """Output profile of rendered montages and of the scene-clip cache (``render`` stage).

    Every cached scene clip, edited piece and montage is H.264 (libx264, yuv420p, BT.709
    limited range) at ``fps`` frames per second and ``width``x``height`` pixels, with a
    keyframe exactly every second and no B-frames, so montages are cut and joined by stream
    copy. ``fps`` is a whole number so that "every second" falls on a frame. A source of
    another aspect ratio is scaled to fit inside the frame and padded with black bars
    (letterbox or pillarbox): never stretched, never cropped. ``crf``/``preset`` are x264's.
    ``audio`` is off by default: video-language benchmarks feed models frames, and a kept
    soundtrack would need normalizing like the pictures (codec, rate, channels, silence for
    silent sources, joins at every cut); with ``audio: true`` montages carry AAC 48 kHz stereo.
    ``workers`` is how many single-threaded encoders run at once (single-threaded x264 keeps
    the bytes identical from run to run and machine to machine).
    """

    fps: Annotated[int, Field(ge=1, le=60)] = 25
    width: Annotated[int, Field(ge=16, le=3840, multiple_of=2)] = 640
    height: Annotated[int, Field(ge=16, le=2160, multiple_of=2)] = 360
    crf: Annotated[int, Field(ge=0, le=51)] = 23
    preset: Literal[
        "ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower",
        "veryslow",
    ] = "veryfast"
    audio: bool = False
    workers: Annotated[int, Field(ge=1, le=64)] = 2
