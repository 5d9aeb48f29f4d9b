"""``studio:`` of ``params.yaml``: the sample corpus and its programs."""

from __future__ import annotations

import datetime as dt
from typing import Annotated

from pydantic import Field, model_validator

from needleforge.params.base import ParamsSection as _Section


class ProgramParams(_Section):
    """One synthetic program: a series of videos sharing backgrounds and shooting style."""

    name: Annotated[str, Field(min_length=1, pattern=r"^[a-z0-9][a-z0-9_-]*$")]
    n_videos: Annotated[int, Field(ge=1, le=50)] = 2
    video_duration_s: Annotated[float, Field(gt=0, le=7200)] = 60.0
    min_scene_s: Annotated[float, Field(gt=0)] = 4.0
    max_scene_s: Annotated[float, Field(gt=0)] = 12.0
    subtitles: bool = True

    @model_validator(mode="after")
    def _scene_range(self) -> ProgramParams:
        if self.max_scene_s < self.min_scene_s:
            raise ValueError(
                f"max_scene_s = {self.max_scene_s} must be >= min_scene_s = {self.min_scene_s}"
            )
        if self.min_scene_s > self.video_duration_s:
            raise ValueError(
                f"min_scene_s = {self.min_scene_s} exceeds video_duration_s = "
                f"{self.video_duration_s}"
            )
        return self


class StudioParams(_Section):
    """The embedded sample corpus built by ``needleforge studio``."""

    seed: int = 0
    width: Annotated[int, Field(ge=64, le=1920, multiple_of=2)] = 640
    height: Annotated[int, Field(ge=64, le=1080, multiple_of=2)] = 360
    fps: Annotated[float, Field(gt=0, le=60)] = 25.0
    real_clips: list[str] = Field(
        default_factory=lambda: ["bikes", "bigbuckbunny", "carphone", "city"]
    )
    programs: list[ProgramParams] = Field(
        default_factory=lambda: [ProgramParams(name="studio-a", n_videos=2)]
    )
    rights_holder: str = "needleforge sample studio"
    licence_id: str = "needleforge-sample-1.0"
    scope: list[str] = Field(default_factory=lambda: ["benchmark", "research"])
    valid_until: dt.date = dt.date(2099, 12, 31)
    published_at: dt.date = dt.date(2026, 1, 1)

    @model_validator(mode="after")
    def _unique_programs(self) -> StudioParams:
        names = [p.name for p in self.programs]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"program names must be unique; repeated: {dupes}")
        return self
