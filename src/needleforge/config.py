"""Typed parameters: one pydantic model per ``params.yaml`` section.

Every model forbids unknown keys, so a typo (``sed:`` for ``seed:``) fails loudly with the key
named instead of silently using a default. Paths are not parameters: each stage's inputs and
outputs come from its command line, as DVC stages declare them.
This module is a leaf: it imports only :mod:`needleforge.errors`.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from needleforge.errors import ConfigError


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


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
    """

    detector: Literal["content", "adaptive"] = "content"
    threshold: Annotated[float, Field(gt=0, le=255)] | None = None
    min_content_val: Annotated[float, Field(ge=0, le=255)] = 15.0
    min_scene_len_s: Annotated[float, Field(ge=0, le=60)] = 0.6
    luma_only: bool = False
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


class ObjectParams(_Section):
    """Tagging, detection and tracking for ``needleforge objects``.

    ``iou_threshold`` and ``max_centroid_dist`` (Euclidean distance between box centres in
    normalized frame units) decide when a detection continues a track; ``max_gap_s`` is how
    long a track may go unseen (measured from its last hit to the keyframe before the new hit)
    and still continue; tracks with fewer than ``min_hits`` detections are dropped.
    Detections below ``min_detection_score`` are ignored and scene tags below
    ``min_tag_score`` are dropped. ``detector``/``tagger`` name backends in the registry;
    ``ocr`` also reads on-screen text. The tagger sees ``tag_keyframes_per_scene`` keyframes
    spread evenly over each scene (``None``: every keyframe): a scene's tags change little
    within a shot, and tagging every keyframe cost a fifth of the stage. ``*_options`` go to
    the backend's constructor (e.g.
    ``tagger_options: {model_dir: models/smolvlm}`` for ``hf_vlm``, ``{checkpoint: …}`` for
    ``ram_plus``); the registry rejects options a backend does not take, naming them.
    """

    iou_threshold: Annotated[float, Field(gt=0, le=1)] = 0.3
    max_centroid_dist: Annotated[float, Field(ge=0, le=1.5)] = 0.15
    max_gap_s: Annotated[float, Field(ge=0, le=60)] = 1.0
    min_hits: Annotated[int, Field(ge=1)] = 2
    min_detection_score: Annotated[float, Field(ge=0, le=1)] = 0.5
    min_tag_score: Annotated[float, Field(ge=0, le=1)] = 0.3
    detector: Annotated[str, Field(min_length=1)] = "embedded"
    tagger: Annotated[str, Field(min_length=1)] = "embedded"
    ocr: bool = False
    tag_keyframes_per_scene: Annotated[int, Field(ge=1)] | None = 2
    detector_options: dict[str, str | int | float | bool] = Field(default_factory=dict)
    tagger_options: dict[str, str | int | float | bool] = Field(default_factory=dict)


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
    needs ``min_scene_tags`` distinct tags; its top ``scene_top_tags`` tags are what negatives
    must not hold. Each short montage draws its length uniformly from
    ``[short_min_s, short_max_s]`` and fills it with whole negative scenes of at least
    ``min_negative_s``; a target that cannot reach ``short_min_s`` with ``min_negatives`` or
    more negatives is skipped. ``max_targets`` caps the targets (0 = all), sampled with
    ``seed``. ``describer``/``verifier`` name backends; their ``*_options`` go to the factory.
    """

    seed: int = 0
    min_scene_s: Annotated[float, Field(ge=0)] = 5.0
    min_visible_s: Annotated[float, Field(ge=0)] = 4.0
    min_area_frac: Annotated[float, Field(ge=0, le=1)] = 0.05
    max_area_frac: Annotated[float, Field(gt=0, le=1)] = 0.25
    min_scene_tags: Annotated[int, Field(ge=1)] = 2
    scene_top_tags: Annotated[int, Field(ge=1, le=20)] = 3
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


class Params(_Section):
    """The whole ``params.yaml``."""

    studio: StudioParams = Field(default_factory=StudioParams)
    ingest: IngestParams = Field(default_factory=IngestParams)
    scenes: SceneParams = Field(default_factory=SceneParams)
    objects: ObjectParams = Field(default_factory=ObjectParams)
    nemo: NemoParams = Field(default_factory=NemoParams)
    render: RenderParams = Field(default_factory=RenderParams)


class ParamsError(ConfigError):
    """Raised by :func:`load_params`; the message names the file and each bad key."""


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


def load_params(path: Path | None) -> Params:
    """Read ``params.yaml`` (or defaults when ``path`` is None).

    Raises :class:`ParamsError` when the file is missing, not UTF-8, not YAML, or has unknown
    or invalid keys.
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
    return parse_params(data, source=str(path))
