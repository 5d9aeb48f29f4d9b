"""``expand:`` of ``params.yaml``: NeMo stage 3's buckets, caps and multi-needle questions."""

from __future__ import annotations

import math
from typing import Annotated

from pydantic import Field, model_validator

from needleforge.params.base import ParamsSection as _Section
from needleforge.records.questions import LONG_MIN_S, SHORT_MAX_S


class CellCaps(_Section):
    """How many expanded questions one bucket x needle-count row gets, per needle type.

    ``-1`` = as many as the verified short questions allow, ``0`` = none, ``N`` = at most N.
    """

    object: Annotated[int, Field(ge=-1)] = -1
    scene: Annotated[int, Field(ge=-1)] = -1


class BucketCaps(_Section):
    """Caps of one montage bucket: single-needle and multi-needle rows."""

    single: CellCaps = Field(default_factory=CellCaps)
    multi: CellCaps = Field(default_factory=CellCaps)


class ExpandParams(_Section):
    """NeMo Stage 3 (``needleforge expand``): short → medium → long, single → multi-needle.

    Medium montages draw their length uniformly from ``[medium_min_s, medium_max_s]`` (inside
    150–900 s) and long ones from ``[long_min_s, long_max_s]`` (past 900 s); a medium montage
    carries up to ``medium_targets`` targets of one video, a long one up to ``long_targets``
    of one program (seed 001, App. D.3: 8.11 QA per long montage). A target lasting more than
    ``min_multi_target_s`` may become a multi-needle question: cut on the whole-second grid
    into pieces of at least ``min_piece_s`` (at most ``max_pieces``; None = as many as fit).
    ``short_multi``/``medium``/``long`` cap the questions of each row and needle type.
    """

    seed: int = 0
    medium_min_s: Annotated[float, Field(ge=SHORT_MAX_S, le=LONG_MIN_S)] = SHORT_MAX_S
    medium_max_s: Annotated[float, Field(ge=SHORT_MAX_S, le=LONG_MIN_S)] = LONG_MIN_S
    long_min_s: Annotated[float, Field(gt=LONG_MIN_S)] = 930.0
    long_max_s: Annotated[float, Field(gt=LONG_MIN_S)] = 1800.0
    medium_targets: Annotated[int, Field(ge=1, le=64)] = 1
    long_targets: Annotated[int, Field(ge=1, le=64)] = 8
    short_multi: CellCaps = Field(default_factory=CellCaps)
    medium: BucketCaps = Field(default_factory=BucketCaps)
    long: BucketCaps = Field(default_factory=BucketCaps)
    min_piece_s: Annotated[float, Field(gt=0, le=60)] = 2.0
    min_multi_target_s: Annotated[float, Field(gt=0)] = 6.0
    max_pieces: Annotated[int, Field(ge=2)] | None = None

    @model_validator(mode="after")
    def _ranges(self) -> ExpandParams:
        for name in ("medium", "long"):
            low, high = getattr(self, f"{name}_min_s"), getattr(self, f"{name}_max_s")
            if high < low:
                raise ValueError(f"{name}_max_s = {high} must be >= {name}_min_s = {low}")
        # The first piece is a whole number of seconds (cuts fall on keyframes), the last
        # takes the rest: a target must fit both, or multi-needle could never split it.
        fit = math.ceil(self.min_piece_s - 1e-9) + self.min_piece_s
        if self.min_multi_target_s < fit:
            raise ValueError(f"min_multi_target_s = {self.min_multi_target_s} must be >= "
                             f"{fit} (two pieces of min_piece_s = {self.min_piece_s}, the "
                             f"first a whole number of seconds)")
        return self
