"""``vnbench:`` of ``params.yaml``: VideoNIAH samples, their needles and haystacks."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from needleforge.params.base import ParamsSection as _Section

#: The nine VNBench subtasks (seed 000, Table 1), named as the scorer groups them (ret/ord/cnt).
VNBenchTask = Literal["ret_edit1", "ret_insert1", "ret_insert2", "ord_edit1", "ord_insert1",
                      "ord_insert2", "cnt_edit1", "cnt_edit2", "cnt_insert1"]
_VNBENCH_TASKS: tuple[VNBenchTask, ...] = (
    "ret_edit1", "ret_insert1", "ret_insert2", "ord_edit1", "ord_insert1", "ord_insert2",
    "cnt_edit1", "cnt_edit2", "cnt_insert1",
)

_FFMPEG_COLOUR = r"^(#|0x)?[A-Za-z0-9]{1,32}(@(0(\.[0-9]+)?|1(\.0+)?))?$"


class VNBenchParams(_Section):
    """VNBench generation (``needleforge vnbench``): VideoNIAH needles in haystacks (seed 000).

    Each of ``samples_per_subtask`` haystacks (whole seconds of an ingested video, length drawn
    from ``[min_haystack_s, max_haystack_s]``) carries one sample of every task in ``tasks``,
    as in the paper (nine samples per haystack). ``include_long`` adds retrieval and ordering
    on ``long_samples`` haystacks of ``[long_min_s, long_max_s]``; ``include_act`` adds
    retrieval, ordering and counting of inserted action clips (``clip_needle_s`` long).
    Counting-E1 and Counting-I place ``count_min``..``count_max`` needles; wrong counting
    options are drawn from a normal around the truth with ``count_sigma``. A needle image is
    dropped for a haystack when its embedding similarity to any of ``filter_frames`` sampled
    haystack frames exceeds ``similarity_threshold`` (``embedder`` names the backend).
    Image needles come from folders ``<category>/<label>/<image>`` (``image_set_dirs``), the
    package-built set (``builtin_images``) and, optionally, Debian's Tux Paint stamps
    (``tuxpaint_dir``); level-1 (common) and level-2 (hard) subtasks draw from the categories
    listed. ``font_path`` (default: matplotlib's DejaVu Sans) draws subtitles ``text_size_frac``
    of the frame height tall in ``text_colour`` with a ``border_colour`` outline.
    ``reuse_source_gops`` (default): splice a sample from its source's own GOPs (only those
    holding a needle, each at most ``max_gop_s`` long, re-encoded) when the source matches the
    render profile; otherwise, or when false, render from a cached clip of the haystack.
    """

    seed: int = 0
    samples_per_subtask: Annotated[int, Field(ge=1, le=100_000)] = 10
    tasks: list[VNBenchTask] = Field(default_factory=lambda: list(_VNBENCH_TASKS))
    min_haystack_s: Annotated[int, Field(ge=4, le=36_000)] = 10
    max_haystack_s: Annotated[int, Field(ge=4, le=36_000)] = 180
    include_long: bool = False
    long_samples: Annotated[int, Field(ge=1, le=100_000)] = 2
    long_min_s: Annotated[int, Field(ge=10, le=36_000)] = 600
    long_max_s: Annotated[int, Field(ge=10, le=36_000)] = 1800
    include_act: bool = False
    clip_needle_s: Annotated[int, Field(ge=1, le=10)] = 2
    count_min: Annotated[int, Field(ge=1, le=50)] = 1
    count_max: Annotated[int, Field(ge=1, le=50)] = 5
    count_sigma: Annotated[float, Field(gt=0, le=50)] = 2.0
    similarity_threshold: Annotated[float, Field(ge=-1, le=1)] = 0.7
    filter_frames: Annotated[int, Field(ge=1, le=256)] = 8
    embedder: Annotated[str, Field(min_length=1)] = "embedded"
    embedder_options: dict[str, str | int | float | bool] = Field(default_factory=dict)
    builtin_images: bool = True
    image_set_dirs: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)
    tuxpaint_dir: Annotated[str, Field(min_length=1)] | None = None
    level1_categories: list[Annotated[str, Field(min_length=1)]] = Field(
        default_factory=lambda: ["fruit", "animal", "object"])
    level2_categories: list[Annotated[str, Field(min_length=1)]] = Field(
        default_factory=lambda: ["landmark"])
    builtin_clips: bool = True
    clip_set_dirs: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)
    font_path: Annotated[str, Field(min_length=1)] | None = None
    text_size_frac: Annotated[float, Field(gt=0, le=0.5)] = 0.07
    text_colour: Annotated[str, Field(pattern=_FFMPEG_COLOUR)] = "white"
    border_colour: Annotated[str, Field(pattern=_FFMPEG_COLOUR)] = "black"
    reuse_source_gops: bool = True
    max_gop_s: Annotated[float, Field(ge=1, le=30)] = 4.0

    @model_validator(mode="after")
    def _ranges(self) -> VNBenchParams:
        pairs = (("min_haystack_s", "max_haystack_s"), ("long_min_s", "long_max_s"),
                 ("count_min", "count_max"))
        for low_name, high_name in pairs:
            low, high = getattr(self, low_name), getattr(self, high_name)
            if high < low:
                raise ValueError(f"{high_name} = {high} must be >= {low_name} = {low}")
        if not self.tasks and not (self.include_long or self.include_act):
            raise ValueError("tasks is empty and neither include_long nor include_act is set")
        repeated = sorted({t for t in self.tasks if self.tasks.count(t) > 1})
        if repeated:
            raise ValueError(f"tasks lists {repeated} more than once")
        return self
