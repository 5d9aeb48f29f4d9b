"""``scenes:`` of ``params.yaml``: shot detection and keyframes."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from needleforge.params.base import ParamsSection as _Section


class SceneParams(_Section):
    """Shot detection (PySceneDetect) and keyframe sampling for ``needleforge scenes``.

    ``threshold`` is the detector's own scale: ContentDetector compares the weighted HSV(+edge)
    frame difference against it (default 27.0); AdaptiveDetector compares the ratio of that
    difference to its rolling average (default 3.0). ``None`` picks the detector's default.
    ``downscale`` is the integer factor frames shrink by before scoring; ``None`` lets
    PySceneDetect choose from the frame width (fast, and accurate for hard cuts).
    ``luma_only`` scores brightness alone; ``"auto"`` does so for a black-and-white video
    (:func:`~needleforge.scenes.detect.colourless_video`), where hue and saturation carry
    nothing and the HSV average divides every cut by three (a 1906 film intercut with a grey
    fish tank: 0 of 12 cuts found in HSV, 11 in brightness); for a colour video it adds a
    brightness-only pass between colourless frames (:mod:`~needleforge.scenes.grey_cuts`), so
    the cuts between grey shots cut into colour footage are found too.
    """

    detector: Literal["content", "adaptive"] = "content"
    threshold: Annotated[float, Field(gt=0, le=255)] | None = None
    min_content_val: Annotated[float, Field(ge=0, le=255)] = 15.0
    min_scene_len_s: Annotated[float, Field(ge=0, le=60)] = 0.6
    luma_only: bool | Literal["auto"] = "auto"
    downscale: Annotated[int, Field(ge=1, le=64)] | None = None
    backend: Literal["pyav", "opencv"] = "pyav"
    keyframe_fps: Annotated[float, Field(gt=0, le=60)] = 1.0
    keyframe_max_per_scene: Annotated[int, Field(ge=1)] | None = None
    keyframe_offset_s: Annotated[float, Field(ge=0, le=2)] = 0.1
    keyframe_max_side_px: Annotated[int, Field(ge=16, le=4096)] | None = None

    def effective_threshold(self) -> float:
        """The threshold handed to the detector: the configured one or the detector default."""
        if self.threshold is not None:
            return self.threshold
        return 27.0 if self.detector == "content" else 3.0
