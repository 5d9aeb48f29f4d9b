"""Media primitives: ffmpeg discovery and calls, probing and frame reading with PyAV."""

from needleforge.media.ffmpeg import FfmpegChoice, ffmpeg_binary, find_ffmpeg, run_ffmpeg
from needleforge.media.probe import probe

__all__ = ["FfmpegChoice", "ffmpeg_binary", "find_ffmpeg", "probe", "run_ffmpeg"]
