"""Media primitives: ffmpeg discovery and calls, probing with PyAV."""

from needleforge.media.ffmpeg import ffmpeg_binary, run_ffmpeg
from needleforge.media.probe import probe

__all__ = ["ffmpeg_binary", "probe", "run_ffmpeg"]
