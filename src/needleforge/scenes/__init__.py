"""Scenes stage: shot detection, subtitle sidecars and keyframes.

Pure functions that read media and return records; the flow (or CLI) writes them to DuckDB.
PySceneDetect (and with it OpenCV) is imported only when :func:`detect_scenes` runs.
"""

from needleforge.scenes.detect import SceneDetection, detect_scenes
from needleforge.scenes.keyframes import KeyframeSampler, keyframe_times, sample_keyframes
from needleforge.scenes.subtitles import (
    Cue,
    attach_subtitles,
    clean_cue_text,
    decode_subtitle_bytes,
    parse_subtitles,
    read_subtitles,
    subtitle_text_for,
)
from needleforge.scenes.tiling import check_tiling, frames_between, scenes_from_bounds, tile_cuts

__all__ = [
    "Cue",
    "KeyframeSampler",
    "SceneDetection",
    "attach_subtitles",
    "check_tiling",
    "clean_cue_text",
    "decode_subtitle_bytes",
    "detect_scenes",
    "frames_between",
    "keyframe_times",
    "parse_subtitles",
    "read_subtitles",
    "sample_keyframes",
    "scenes_from_bounds",
    "subtitle_text_for",
    "tile_cuts",
]
