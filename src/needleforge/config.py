"""Typed parameters: one pydantic model per ``params.yaml`` section, and their defaults.

These models are the one owner of every default: ``params.yaml`` (the sample recipe that
``make demo`` runs) holds only its deliberate differences from them, and a run given no params
file uses them as they are (:func:`resolve_params`). Every model forbids unknown keys, so a
typo (``sed:`` for ``seed:``) fails loudly with the key named instead of silently using a
default. Paths are not parameters: each stage's inputs and outputs come from its command line,
as DVC stages declare them; the model files a backend's options name are read relative to
the params file that names them.
Its only in-package imports are leaves: errors, the section base, the ``*_params`` sections.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import Field, ValidationError, model_validator

from needleforge.errors import ConfigError
from needleforge.evaluate_params import EvaluateParams as EvaluateParams
from needleforge.expand_params import BucketCaps as BucketCaps
from needleforge.expand_params import CellCaps as CellCaps
from needleforge.expand_params import ExpandParams as ExpandParams
from needleforge.object_params import DEFAULT_LABEL_FAMILIES as DEFAULT_LABEL_FAMILIES
from needleforge.object_params import ObjectParams as ObjectParams
from needleforge.params_base import ParamsSection as _Section
from needleforge.params_base import anchor_paths
from needleforge.review_params import ReviewParams as ReviewParams


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


class IngestParams(_Section):
    """Authorization policy and storage for ``needleforge ingest``."""

    required_scopes: list[Annotated[str, Field(min_length=1)]] = Field(
        default_factory=lambda: ["benchmark"]
    )
    as_of: dt.date | None = None
    link_mode: Literal["hardlink", "copy", "symlink"] = "hardlink"
    workers: Annotated[int, Field(ge=1, le=64)] = 2

    def today(self) -> dt.date:
        """The day licences are checked against: ``as_of`` when set, else today (UTC)."""
        return self.as_of or dt.datetime.now(dt.UTC).date()


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
    fish tank: 0 of 12 cuts found in HSV, 11 in brightness).
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


#: Labels too broad to ground as an object needle (NeMo Table 15: "the sky, sidewalk, slope").
DEFAULT_ABSTRACT_LABELS: tuple[str, ...] = (
    "background", "ceiling", "cloud", "dirt", "field", "floor", "grass", "ground", "ocean",
    "pavement", "road", "sand", "sea", "shadow", "sidewalk", "sky", "slope", "snow", "street",
    "wall", "water",
)


class NemoParams(_Section):
    """NeMo Stage 2 (``needleforge generate``): targets, negatives, short montage plans.

    A target scene lasts longer than ``min_scene_s``; its object needle is the most prominent
    object visible for at least ``min_visible_s`` with a mean box area in
    ``[min_area_frac, max_area_frac]`` of the frame (seed 001, App. D.2). A scene needle also
    needs ``min_scene_tags`` distinct tags and is described by up to ``scene_top_tags`` of
    them. The paper's 5 s / 4 s / two tags suit films; broadcast footage cuts every 2-5 s (25
    of 41 shots of our first real programs were <= 5 s), so the defaults are 3 s, 2 s (three
    keyframes a second apart) and one tag the verifier can check. A negative may hold nothing
    the written question names; terms held by more than ``common_term_share`` of a video's
    scenes (a "person" in nearly every shot) are common there, and describers leave them out,
    as they leave out a term that would leave a target too few negatives
    (:func:`~needleforge.nemo.negatives.crowded_terms`). Each short montage draws its length
    uniformly from ``[short_min_s, short_max_s]`` and fills it with whole negative scenes of at
    least ``min_negative_s``; a target that cannot reach ``short_min_s`` with ``min_negatives`` or
    more negatives is skipped. ``max_targets`` caps the targets (0 = all), sampled with
    ``seed``. ``describer``/``verifier`` name backends; their ``*_options`` go to the factory.

    ``check_negatives`` looks again, harder, at each negative candidate of an object target
    for the target's label (:mod:`needleforge.nemo.checks.negative_scan`): frames at most
    ``check_every_s`` apart (scaled to ``check_max_side`` pixels), detected by ``check_detector`` at
    ``check_min_score`` with its input upscaled ``check_input_scale`` times (detectors that take
    ``input_scale``), optionally cut into ``check_cols`` x ``check_rows`` tiles overlapping by
    ``check_overlap``; a scene where the label is seen is passed over (the representation pass
    misses small and brief objects; a negative showing one makes the answer wrong). With
    ``check_changed_only`` both checks look only at what changed since the scene's earlier frames
    (:mod:`needleforge.nemo.checks.change_gate`). The defaults (a frame a second at 2x) are what
    ``benchmarks/validity.py`` measures as valid. ``check_instances`` also searches each such
    negative for the target object's own pixels (:mod:`needleforge.nemo.checks.instance`; a
    normalised cross-correlation of ``check_instance_min_score`` or more refuses it; it needs
    ``check_negatives``), ``coarse-to-fine`` or ``exhaustive`` (``check_instance_search``).
    ``check_pose`` counts a whole frame showing a body pose (MoveNet) as a person sighting.
    ``check_attire``: a person the question describes by clothing colour excludes only people
    who could be dressed so (:mod:`needleforge.records.attire`), not every person.
    ``check_setup``: a negative showing a scene target's own camera set-up (a returning shot)
    is passed over (:mod:`needleforge.nemo.checks.same_setup`; needs keyframes; object
    targets have the probe's label and instance checks).
    """

    seed: int = 0
    min_scene_s: Annotated[float, Field(ge=0)] = 3.0
    min_visible_s: Annotated[float, Field(ge=0)] = 2.0
    min_area_frac: Annotated[float, Field(ge=0, le=1)] = 0.05
    max_area_frac: Annotated[float, Field(gt=0, le=1)] = 0.25
    min_scene_tags: Annotated[int, Field(ge=1)] = 1
    scene_top_tags: Annotated[int, Field(ge=1, le=20)] = 3
    common_term_share: Annotated[float, Field(gt=0, le=1)] = 0.5
    short_min_s: Annotated[float, Field(gt=0, lt=150)] = 20.0
    short_max_s: Annotated[float, Field(gt=0, lt=150)] = 140.0
    min_negative_s: Annotated[float, Field(gt=0)] = 1.0
    min_negatives: Annotated[int, Field(ge=1)] = 2
    max_targets: Annotated[int, Field(ge=0)] = 0
    describer: Annotated[str, Field(min_length=1)] = "embedded"
    verifier: Annotated[str, Field(min_length=1)] = "embedded"
    describer_options: dict[str, str | int | float | bool] = Field(default_factory=dict)
    verifier_options: dict[str, str | int | float | bool] = Field(default_factory=dict)
    abstract_labels: list[Annotated[str, Field(min_length=1)]] = Field(
        default_factory=lambda: list(DEFAULT_ABSTRACT_LABELS)
    )
    check_negatives: bool = True
    check_every_s: Annotated[float, Field(gt=0, le=60)] = 1.0
    check_max_side: Annotated[int, Field(ge=64, le=4096)] = 640
    check_input_scale: Annotated[float, Field(ge=0.25, le=4)] = 2.0
    check_cols: Annotated[int, Field(ge=1, le=8)] = 1
    check_rows: Annotated[int, Field(ge=1, le=8)] = 1
    check_overlap: Annotated[float, Field(ge=0, le=0.9)] = 0.2
    check_min_score: Annotated[float, Field(ge=0, le=1)] = 0.3
    check_detector: Annotated[str, Field(min_length=1)] = "embedded"
    check_detector_options: dict[str, str | int | float | bool] = Field(default_factory=dict)
    check_changed_only: bool = True
    check_instances: bool = True
    check_pose: bool = True
    check_attire: bool = True
    check_setup: bool = True
    check_instance_min_score: Annotated[float, Field(gt=0, le=1)] = 0.8
    check_instance_search: Literal["coarse-to-fine", "exhaustive"] = "coarse-to-fine"

    @model_validator(mode="after")
    def _ranges(self) -> NemoParams:
        if self.max_area_frac < self.min_area_frac:
            raise ValueError(f"max_area_frac = {self.max_area_frac} must be >= "
                             f"min_area_frac = {self.min_area_frac}")
        if self.short_max_s < self.short_min_s:
            raise ValueError(f"short_max_s = {self.short_max_s} must be >= "
                             f"short_min_s = {self.short_min_s}")
        return self


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


class ReleaseParams(_Section):
    """What ``needleforge release`` puts in ``releases/<name>/`` and how.

    Only questions whose verdicts passed are released: with ``require_all_verdicts`` every
    verifier that judged a question must have passed it (else one pass is enough). A question
    no verifier judged is left out unless ``include_unverified``; a failed one never ships.
    ``include_videos`` copies the rendered montages in (``link_mode``: a hard link, falling back
    to a copy across file systems, or always a copy); without it, or without renders, the
    release ships plans only. ``top_n_labels`` and ``histogram_bins`` shape the card's plots.
    ``release_date`` is the only date a release carries (none by default), so building the
    same inputs twice gives byte-identical files.

    Authorization: a source ships only while its licence is valid on the release day
    (``release_date``, else the build day, UTC) and grants every scope in ``required_scopes``;
    questions built on any other source are left out with the reason listed
    (``unauthorized: exclude``) or stop the build (``error``). Contamination: sources already
    used by the earlier releases the build compares against (by sha256) are flagged, and
    with ``exclude_contaminated`` their questions are left out too.
    """

    title: Annotated[str, Field(min_length=1)] = "needleforge benchmark"
    include_videos: bool = True
    include_unverified: bool = False
    require_all_verdicts: bool = True
    link_mode: Literal["hardlink", "copy"] = "hardlink"
    top_n_labels: Annotated[int, Field(ge=1, le=200)] = 20
    histogram_bins: Annotated[int, Field(ge=1, le=200)] = 20
    release_date: dt.date | None = None
    required_scopes: list[Annotated[str, Field(min_length=1)]] = Field(
        default_factory=lambda: ["benchmark"], min_length=1
    )
    unauthorized: Literal["exclude", "error"] = "exclude"
    exclude_contaminated: bool = False
    # Human verdicts (needleforge review --from label-studio | yaml): which questions must have
    # a human decision to ship — none, all, or a seeded fraction (release/human_review.py). A
    # question humans judged invalid never ships; a corrected answer ships as corrected.
    require_human_review: Literal["none", "all"] | Annotated[float, Field(gt=0, lt=1)] = "none"
    human_review_seed: int = 0

    def check_day(self) -> dt.date:
        """The day source licences must still be valid on: ``release_date``, else today (UTC)."""
        return self.release_date or dt.datetime.now(dt.UTC).date()


class QualityParams(_Section):
    """The quality gate (``needleforge validate``): thresholds of the GX suites.

    ``min_pass_rate`` is the share of verification verdicts that must pass (a verifier that
    rejects most questions signals a broken describer). Licences are checked against
    ``as_of`` (None = today, UTC) and must grant every scope in ``required_scopes``.
    Time columns that must be equal (scenes and segments tiling, spans inside a video) may
    differ by ``tolerance_s``; every piece of a multi-needle answer lasts at least
    ``min_piece_s``. Each failure names at most ``max_examples`` offending rows. Every blind
    baseline (answers from metadata and question text alone, ``quality/bias.py``) may beat
    the random baseline on the release by at most ``blind_margin`` (a fraction: 0.03 = 3
    points), or the release's answers can be guessed without watching it. Every answer
    window of a grounding question lasts at least ``min_answer_window_s``: the release build
    leaves shorter ones out and the gate checks what shipped. Why 3 s (``docs/metrics.md``):
    at tIoU 0.5 a prediction of the right length may be off by a third of the window, 1 s
    for a 3 s window, about one frame step of a model that samples 1 frame a second; a 2 s
    window allows 0.67 s, less than that step, so hitting it says little about grounding.
    """

    min_pass_rate: Annotated[float, Field(ge=0, le=1)] = 0.5
    as_of: dt.date | None = None
    required_scopes: list[Annotated[str, Field(min_length=1)]] = Field(
        default_factory=lambda: ["benchmark"]
    )
    tolerance_s: Annotated[float, Field(ge=0, le=1)] = 1e-6
    min_piece_s: Annotated[float, Field(ge=0)] = 2.0
    max_examples: Annotated[int, Field(ge=1, le=100)] = 5
    blind_margin: Annotated[float, Field(ge=0, le=1)] = 0.03
    min_answer_window_s: Annotated[float, Field(ge=0, le=3600)] = 3.0

    def today(self) -> dt.date:
        """The day licences are checked against: ``as_of`` when set, else today (UTC)."""
        return self.as_of or dt.datetime.now(dt.UTC).date()


#: The nine VNBench subtasks (seed 000, Table 1), named as the scorer groups them (ret/ord/cnt).
VNBenchTask = Literal["ret_edit1", "ret_insert1", "ret_insert2", "ord_edit1", "ord_insert1",
                      "ord_insert2", "cnt_edit1", "cnt_edit2", "cnt_insert1"]
_VNBENCH_TASKS: tuple[VNBenchTask, ...] = (
    "ret_edit1", "ret_insert1", "ret_insert2", "ord_edit1", "ord_insert1", "ord_insert2",
    "cnt_edit1", "cnt_edit2", "cnt_insert1",
)

_FFMPEG_COLOUR = r"^(#|0x)?[A-Za-z0-9]{1,32}(@(0(\.[0-9]+)?|1(\.0+)?))?$"
_DASK_ADDRESS = r"^(tcp|tls|ucx|ws|wss|inproc)://[^\s/]+$"


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


class RunnerParams(_Section):
    """Where the flows' per-video and per-montage tasks run (``flows/``, ``--runner``).

    ``threads`` (default) runs tasks on ``workers`` threads of the flow process. ``dask``
    uses prefect-dask: ``dask_address`` (``tcp://host:8786``) names an existing cluster,
    None starts a local cluster of ``workers`` single-threaded worker processes. ``ray`` uses
    prefect-ray: ``ray_address`` (``ray://host:10001`` or ``auto``) names an existing
    cluster, None starts a local one with ``workers`` CPUs. Workers must see the media
    store, scene-clip cache and output folders at the same paths (a shared filesystem);
    only the flow process writes DuckDB (see docs/clusters.md). ``needleforge represent``
    also represents ``workers`` videos at once on threads.
    """

    kind: Literal["threads", "dask", "ray"] = "threads"
    workers: Annotated[int, Field(ge=1, le=256)] = 2
    dask_address: Annotated[str, Field(pattern=_DASK_ADDRESS)] | None = None
    ray_address: Annotated[
        str, Field(pattern=r"^(auto|(ray://)?[A-Za-z0-9_.\-\[\]:]+:[0-9]+)$")
    ] | None = None


class Params(_Section):
    """The whole ``params.yaml``."""

    studio: StudioParams = Field(default_factory=StudioParams)
    ingest: IngestParams = Field(default_factory=IngestParams)
    scenes: SceneParams = Field(default_factory=SceneParams)
    objects: ObjectParams = Field(default_factory=ObjectParams)
    nemo: NemoParams = Field(default_factory=NemoParams)
    render: RenderParams = Field(default_factory=RenderParams)
    expand: ExpandParams = Field(default_factory=ExpandParams)
    quality: QualityParams = Field(default_factory=QualityParams)
    release: ReleaseParams = Field(default_factory=ReleaseParams)
    vnbench: VNBenchParams = Field(default_factory=VNBenchParams)
    runner: RunnerParams = Field(default_factory=RunnerParams)
    evaluate: EvaluateParams = Field(default_factory=EvaluateParams)
    review: ReviewParams = Field(default_factory=ReviewParams)


class ParamsError(ConfigError):
    """Raised by :func:`resolve_params`; the message names the file and each bad key."""


def _describe(err: ValidationError, source: str) -> str:
    lines = [f"{source}: invalid parameters"]
    for item in err.errors():
        where = ".".join(str(p) for p in item["loc"]) or "(top level)"
        if item["type"] == "extra_forbidden":
            lines.append(f"  - unknown key '{where}'")
        else:
            lines.append(f"  - {where}: {item['msg']} (got {item.get('input')!r})")
    return "\n".join(lines)


def parse_params(data: Any, *, source: str = "params") -> Params:
    """Validate a parsed params mapping; raise :class:`ParamsError` naming each bad key."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ParamsError(f"{source}: expected a mapping of sections, got {type(data).__name__}")
    try:
        return Params.model_validate(data)
    except ValidationError as err:
        raise ParamsError(_describe(err, source)) from None


#: The store every ``needleforge`` command and every flow reads and writes unless ``--db``
#: (a flow's ``db``) names another.
DEFAULT_DB = Path("data/needleforge.duckdb")

#: How a command line describes ``--params`` (the CLI and every flow), per :func:`resolve_params`.
PARAMS_HELP = ("Params file to read, e.g. params.yaml, the sample recipe make demo runs "
               "(default: none, the built-in defaults of needleforge.config).")


def resolve_params(path: Path | None) -> Params:
    """The parameters of a run: the file at ``path``, or the built-in defaults when None.

    The one rule for "no params file given", used by every CLI command (``--params``
    omitted) and every flow (``params_path=None``), so the same call does the same thing from
    either. The rule is the built-in defaults, never a ``./params.yaml`` found in the working
    directory: what a run does then depends on its arguments alone, not on where it was
    started (a Prefect worker, a test, a shell in another folder), and the defaults have one
    owner, the models above. ``params.yaml`` is the sample recipe, holding only its
    differences from these defaults; ``dvc repro`` (``make demo``), the refresh deployment
    (``prefect.yaml``) and the documented flow commands name it with ``--params params.yaml``.
    Relative model paths in it (``checkpoint``, ``python``, ``model_dir``, …) are taken from
    the file's own folder, wherever the command runs (:func:`~.params_base.anchor_paths`).

    Raises:
        ParamsError: the file is missing, not UTF-8, not YAML, or has unknown or invalid
            keys; the message names the file and each bad key.
    """
    if path is None:
        return Params()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ParamsError(f"{path}: params file not found") from None
    except UnicodeDecodeError as err:
        raise ParamsError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ParamsError(f"{path}: not valid YAML: {err}") from None
    return parse_params(anchor_paths(data, base=path.absolute().parent), source=str(path))


def load_params(path: Path | None) -> Params:
    """The same as :func:`resolve_params` (one rule), under the name older callers use."""
    return resolve_params(path)
