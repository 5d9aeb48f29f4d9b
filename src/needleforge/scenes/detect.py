"""Shot detection with PySceneDetect, returning scenes that tile the decodable video.

Why this wrapper: PySceneDetect reports cuts in its own timecode type, returns no scenes for a
cut-free video unless asked, and silently stops early on a truncated file. Here every video
gives scenes that tile ``[0, end]`` (one scene when there is no cut), ``end`` is the probed (or
given) duration, and a decode that stops short is *recorded* in
:attr:`SceneDetection.decode_error` with the scenes up to the failure kept, instead of raising.

Works with the scenedetect 0.6 and 0.7 APIs (``open_video`` + ``SceneManager``); the package is
imported lazily because it pulls in OpenCV (~0.4 s), which subtitle-only callers never need.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import av

from needleforge.errors import MediaError
from needleforge.media.decode import VideoReader
from needleforge.media.probe import probe
from needleforge.params import SceneParams
from needleforge.records import Scene
from needleforge.scenes.palette import colourless
from needleforge.scenes.tiling import TIME_DECIMALS, check_tiling, scenes_from_bounds, tile_cuts

#: A decode may end this many frames (or END_TOLERANCE_S, whichever is larger) before the
#: probed duration without counting as a failure: container and stream durations often
#: disagree by a frame or two (edit lists, B-frame delay, a longer audio track).
END_TOLERANCE_FRAMES = 3
END_TOLERANCE_S = 0.25


@dataclasses.dataclass(frozen=True, slots=True)
class SceneDetection:
    """The scenes of one video and how the decode went.

    ``scenes`` tile ``[0, end_s]``; ``end_s`` is the expected duration when the whole video
    decoded, else the end of the last decoded frame. ``decode_error`` is None on success and
    otherwise says where and why decoding stopped. ``detector`` records the backend, detector
    and settings used (provenance for the ``scenes`` table).
    """

    video_id: str
    scenes: tuple[Scene, ...]
    decode_error: str | None
    end_s: float
    expected_duration_s: float
    frames_read: int
    detector: str

    def __post_init__(self) -> None:
        if any(s.video_id != self.video_id for s in self.scenes):
            raise ValueError(f"scenes of another video than {self.video_id!r}")
        if self.scenes:
            check_tiling(self.scenes, end_s=self.end_s)
        elif self.decode_error is None:
            raise ValueError(f"{self.video_id}: no scenes needs a decode_error saying why")

    @property
    def complete(self) -> bool:
        """True when the whole video decoded (no recorded failure)."""
        return self.decode_error is None


@dataclasses.dataclass(frozen=True, slots=True)
class _Run:
    """What one SceneManager pass produced, before tiling."""

    cuts_s: list[float]
    frames_read: int
    last_frame_s: float | None
    error: str | None


#: The share of sampled frames that must be colourless for a video to be black-and-white.
COLOURLESS_SHARE = 0.75


def detect_scenes(
    path: Path,
    *,
    video_id: str,
    params: SceneParams,
    duration_s: float | None = None,
) -> SceneDetection:
    """Detect hard cuts in ``path`` and return scenes tiling the video.

    ``duration_s`` (e.g. the ingested ``MediaInfo.duration_s``) fixes where the last scene
    ends; by default the file is probed. Raises :class:`MediaError` when the file cannot be
    opened at all (missing, not media, no video stream) and ``ValueError`` for a blank
    ``video_id`` or a non-positive ``duration_s``. A decode that fails or stops early does not
    raise: the scenes up to the failure are returned with ``decode_error`` set.
    """
    if not video_id.strip():
        raise ValueError(f"video_id = {video_id!r} must not be blank")
    if duration_s is not None and not (math.isfinite(duration_s) and duration_s > 0):
        raise ValueError(f"duration_s = {duration_s!r} must be finite and > 0")
    info = probe(path)
    expected_s = duration_s if duration_s is not None else info.duration_s
    luma_only = (colourless_video(path, duration_s=expected_s) if params.luma_only == "auto"
                 else params.luma_only)
    video = _open_video(path, params)
    fps = float(video.frame_rate)
    # a colour video may still hold grey shots: their cuts are scored on brightness too
    grey_cuts = params.luma_only == "auto" and not luma_only
    manager, description = _make_manager(params, fps=fps, luma_only=luma_only,
                                         grey_cuts=grey_cuts)
    run = _run_manager(manager, video, fps=fps)
    description = f"{video.BACKEND_NAME} {description}"
    if run.last_frame_s is None:
        why = run.error or "no frame could be decoded"
        return SceneDetection(video_id, (), f"{path}: {why}", 0.0, expected_s, 0, description)
    end_s, error = _end_and_error(run, run.last_frame_s, fps=fps, expected_s=expected_s)
    bounds = tile_cuts(run.cuts_s, end_s=end_s)
    scenes = scenes_from_bounds(bounds, video_id=video_id, fps=fps)
    return SceneDetection(
        video_id=video_id,
        scenes=scenes,
        decode_error=None if error is None else f"{path}: {error}",
        end_s=bounds[-1][1],
        expected_duration_s=expected_s,
        frames_read=run.frames_read,
        detector=description,
    )


def _end_and_error(
    run: _Run, last_frame_s: float, *, fps: float, expected_s: float
) -> tuple[float, str | None]:
    """Where the scenes end, and the failure to record (None when the video decoded whole).

    A decode that ends more than the tolerance before ``expected_s`` is a failure even when
    no exception was seen: PySceneDetect's backends stop quietly at the end of a truncated
    file. After a failure the scenes end with the last decoded frame.
    """
    decoded_end_s = round(last_frame_s + 1.0 / fps, TIME_DECIMALS)
    error = run.error
    tolerance_s = max(END_TOLERANCE_FRAMES / fps, END_TOLERANCE_S)
    if error is None and decoded_end_s < expected_s - tolerance_s:
        error = (
            f"decoding stopped at {decoded_end_s:.3f} s of {expected_s:.3f} s "
            f"after {run.frames_read} frames (truncated or corrupt file)"
        )
    return (expected_s if error is None else min(decoded_end_s, expected_s)), error


def _open_video(path: Path, params: SceneParams) -> Any:
    """Open ``path`` with the configured PySceneDetect backend; :class:`MediaError` if not."""
    import scenedetect

    # PyAV's own log callback would print every "partial file" line of a truncated file;
    # failures are reported through SceneDetection.decode_error instead.
    options: dict[str, Any] = {"suppress_output": True} if params.backend == "pyav" else {}
    try:
        return scenedetect.open_video(str(path), backend=params.backend, **options)
    except (scenedetect.VideoOpenFailure, OSError) as err:
        raise MediaError(f"{path}: PySceneDetect cannot open the video ({err})") from None


def colourless_video(path: Path, *, duration_s: float, samples: int = 8) -> bool:
    """Whether ``path`` is black-and-white: at least :data:`COLOURLESS_SHARE` of ``samples``
    frames spread over its ``duration_s`` are colourless
    (:func:`~needleforge.scenes.palette.colourless`). A video that cannot be read is not."""
    seen: list[bool] = []
    try:
        with VideoReader(path) as reader:
            facts = reader.facts
            size = (160, max(2, round(160 * facts.height / max(facts.width, 1))))
            for i in range(samples):
                # sample times count from the container's zero, not the stream start
                t_s = max((i + 0.5) * duration_s / samples - facts.start_s, 0.0)
                frame = reader.keyframe_at_or_before(t_s)
                if frame is not None:
                    seen.append(colourless(frame.rgb(size=size)))
    except (MediaError, ValueError):
        return False
    return bool(seen) and sum(seen) >= COLOURLESS_SHARE * len(seen)


def _make_manager(params: SceneParams, *, fps: float, luma_only: bool, grey_cuts: bool = False
                  ) -> tuple[Any, str]:
    """A SceneManager with the configured detector and downscale, and a one-line description;
    with ``grey_cuts``, also :class:`~needleforge.scenes.grey_cuts.GreyCutDetector`.

    ``min_scene_len`` is given in frames, which both the 0.6 (frames only) and 0.7 (frames,
    seconds or strings) APIs accept.
    """
    import scenedetect

    min_len = round(params.min_scene_len_s * fps)
    threshold = params.effective_threshold()
    detector: Any
    if params.detector == "content":
        detector = scenedetect.ContentDetector(
            threshold=threshold, min_scene_len=min_len, luma_only=luma_only
        )
    else:
        detector = scenedetect.AdaptiveDetector(
            adaptive_threshold=threshold,
            min_scene_len=min_len,
            min_content_val=params.min_content_val,
            luma_only=luma_only,
        )
    manager = scenedetect.SceneManager()
    manager.add_detector(detector)
    if grey_cuts:
        from needleforge.scenes.grey_cuts import GreyCutDetector

        content = params.detector == "content"  # else the adaptive ratio: use Content's default
        manager.add_detector(GreyCutDetector(threshold=threshold if content else 27.0,
                                             min_scene_len=min_len))
    if params.downscale is None:
        manager.auto_downscale = True
        scale = "auto"
    else:
        manager.auto_downscale = False  # before setting downscale, or it warns and ignores it
        manager.downscale = params.downscale
        scale = str(params.downscale)
    description = (
        f"scenedetect {scenedetect.__version__} {params.detector} threshold={threshold} "
        f"min_scene_len={min_len}f luma_only={luma_only} downscale={scale}"
        + (" grey-cuts=luma" if grey_cuts else "")
    )
    return manager, description


def _run_manager(manager: Any, video: Any, *, fps: float) -> _Run:
    """Run detection; on a decode exception keep the cuts seen so far and record the error.

    The callback sees every cut as it is found, so cuts survive an exception raised from the
    decode thread (after which ``get_scene_list`` knows nothing).
    """
    seen: list[float] = []

    def on_cut(_frame: Any, at: Any) -> None:
        seen.append(_seconds(at, fps))

    error: str | None = None
    try:
        frames_read = int(manager.detect_scenes(video=video, callback=on_cut))
        scene_list = manager.get_scene_list(start_in_scene=True)
        cuts_s = [_seconds(start, fps) for start, _end in scene_list[1:]]
    except (av.FFmpegError, OSError) as err:
        # The PyAV backend skips a few corrupt packets itself and raises only on I/O or
        # persistent decoder failure; OpenCV's backend just stops (caught by the end check).
        error = f"decoding failed at {_seconds(video.position, fps):.3f} s: {err}"
        frames_read = int(video.frame_number)
        cuts_s = seen
    last_frame_s = _seconds(video.position, fps) if frames_read > 0 else None
    return _Run(cuts_s=cuts_s, frames_read=frames_read, last_frame_s=last_frame_s, error=error)


def _seconds(timecode: Any, fps: float) -> float:
    """Seconds of a PySceneDetect position: a FrameTimecode (0.6/0.7) or a frame number."""
    if isinstance(timecode, int):
        return timecode / fps
    seconds = getattr(timecode, "seconds", None)  # 0.7 property (PTS based)
    if seconds is None:
        seconds = timecode.get_seconds()  # 0.6 method
    return float(seconds)
