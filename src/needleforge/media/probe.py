"""Probe media files with PyAV: duration, frame rate, size, codecs, audio, rotation.

imageio-ffmpeg ships no ffprobe, so probing reads the container with PyAV directly, and decodes
the first video frame: a header that parses is no proof the stream decodes, and the frame also
carries the display rotation (degrees counter-clockwise, as FFmpeg's display matrix states it).
Every failure becomes a :class:`ProbeError` that names the file, says what is wrong, and has a
one-word ``kind``: ``missing``, ``empty``, ``not_media``, ``no_video``, ``undecodable`` or
``no_duration``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import av

from needleforge.errors import ProbeError
from needleforge.media.decode import stream_facts
from needleforge.records import MediaInfo


def probe(path: Path) -> MediaInfo:
    """Read the media facts of ``path``.

    Raises :class:`ProbeError` when the file is missing, empty, not a media container, has no
    video stream (audio-only), cannot decode its first frame, or reports no usable duration,
    frame rate or frame size.
    """
    if not path.is_file():
        raise ProbeError(f"{path}: file not found", kind="missing")
    if path.stat().st_size == 0:
        raise ProbeError(f"{path}: file is empty (0 bytes)", kind="empty")
    try:
        container = av.open(str(path), metadata_errors="ignore")
    except PermissionError as err:
        raise ProbeError(f"{path}: cannot read file ({err.strerror})", kind="unreadable") from None
    except (av.FFmpegError, UnicodeDecodeError, ValueError) as err:
        raise ProbeError(f"{path}: not a readable media file ({err})", kind="not_media") from None
    with container:
        if not container.streams.video:
            kinds: list[str] = sorted({str(s.type) for s in container.streams}) or ["none"]
            raise ProbeError(
                f"{path}: no video stream (streams: {', '.join(kinds)})", kind="no_video"
            )
        video = container.streams.video[0]
        audio = container.streams.audio[0] if container.streams.audio else None
        facts = stream_facts(container, video)
        if facts.duration_s is None:
            raise ProbeError(f"{path}: container reports no duration", kind="no_duration")
        duration_s, width, height = facts.duration_s, facts.width, facts.height
        rate = video.average_rate or video.base_rate or video.guessed_rate
        if not rate or rate <= 0:
            raise ProbeError(f"{path}: video stream has no frame rate", kind="no_duration")
        rotation = _first_frame_rotation(container, path)
        fps = float(rate)
        n_frames = int(video.frames) if video.frames else round(duration_s * fps)
        if duration_s <= 0:
            raise ProbeError(f"{path}: video has no positive duration", kind="no_duration")
        if width <= 0 or height <= 0:
            raise ProbeError(f"{path}: video stream has no frame size", kind="not_media")
        return MediaInfo(
            duration_s=round(duration_s, 6),
            fps=round(fps, 6),
            width=width,
            height=height,
            video_codec=str(video.codec_context.name),
            n_frames=n_frames,
            audio_codec=str(audio.codec_context.name) if audio is not None else None,
            rotation_deg=rotation,
            container=str(container.format.name),
        )


def _first_frame_rotation(container: Any, path: Path) -> int:
    """Decode the first video frame; return its display rotation (0/90/180/270)."""
    try:
        frame = next(container.decode(video=0), None)
    except (av.FFmpegError, ValueError) as err:
        raise ProbeError(
            f"{path}: video stream does not decode ({err})", kind="undecodable"
        ) from None
    if frame is None:
        raise ProbeError(f"{path}: video stream has no decodable frame", kind="undecodable")
    container.seek(0)
    return round(float(frame.rotation or 0) / 90.0) * 90 % 360
