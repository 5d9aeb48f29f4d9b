"""Target selection: which scenes and objects become needles (seed 001, App. D.2).

A target scene lasts longer than ``min_scene_s`` (5 s). Its **object needle** is the most
prominent object that is visible for at least ``min_visible_s`` (4 s) with a mean box area of
``min_area_frac``–``max_area_frac`` (5–25 %) of the frame and whose label is not abstract
(sky, road, wall…); prominence is visible time × area, ties by object id. Its **scene
needle** needs at least ``min_scene_tags`` distinct tags to be described by. A scene can give
both; each becomes its own montage.

Selection is a pure function of the tables: scenes are visited by video id and scene index,
and the optional cap (``max_targets``) samples with ``random.Random`` seeded from
``params.seed``, so the same tables and seed always give the same targets.
"""

from __future__ import annotations

import dataclasses
import math
import random

from needleforge.nemo.tables import SceneTables
from needleforge.params import NemoParams
from needleforge.records import NeedleType, ObjectTrack, Scene
from needleforge.records.phrases import normalize, ranked_tags

#: Slack for comparing derived float seconds and areas against thresholds.
_EPS = 1e-9
#: Slack for snapping a track start onto the whole-second grid (a start computed as
#: 2.9999999 s past the scene start is on the 3 s keyframe).
_GRID_EPS_S = 1e-6


@dataclasses.dataclass(frozen=True, slots=True)
class Target:
    """A needle to ask about: a whole scene, or one object inside it."""

    needle_type: NeedleType
    scene: Scene
    target_object: ObjectTrack | None = None

    def __post_init__(self) -> None:
        if (self.needle_type == "object") != (self.target_object is not None):
            raise ValueError(f"target in {self.scene.scene_id}: needle_type "
                             f"{self.needle_type!r} with object {self.target_object!r}")
        if self.target_object is not None and self.target_object.scene_id != self.scene.scene_id:
            raise ValueError(f"object {self.target_object.object_id} is not in scene "
                             f"{self.scene.scene_id}")

    @property
    def target_id(self) -> str:
        """The object id for object needles, the scene id for scene needles."""
        return self.target_object.object_id if self.target_object else self.scene.scene_id

    @property
    def video_id(self) -> str:
        """The video the target scene (and so every negative) comes from."""
        return self.scene.video_id

    def span(self) -> tuple[float, float]:
        """``(src_start_s, src_end_s)`` of the target segment in the source video."""
        if self.target_object is None:
            return self.scene.start_s, self.scene.end_s
        return object_span(self.scene, self.target_object)


def object_span(scene: Scene, track: ObjectTrack) -> tuple[float, float]:
    """The object's track span snapped outward onto the scene's whole-second keyframe grid.

    The render cache has a keyframe at ``scene.start_s + k`` for whole ``k``, so a stream-copy
    cut can only start there: the start moves down to the last grid point at or before the
    track start; the end (any time is fine) is the track end, clipped to the scene.

    Raises:
        ValueError: when the track does not overlap the scene past that grid point.
    """
    span = _snapped(scene, track)
    if span is None:
        raise ValueError(f"object {track.object_id} [{track.start_s}, {track.end_s}] does not "
                         f"overlap scene {scene.scene_id} [{scene.start_s}, {scene.end_s}]")
    return span


def _snapped(scene: Scene, track: ObjectTrack) -> tuple[float, float] | None:
    offset = max(0.0, track.start_s - scene.start_s)
    start = scene.start_s + math.floor(offset + _GRID_EPS_S)
    end = min(track.end_s, scene.end_s)
    return (start, end) if end > start else None


def is_prominent(track: ObjectTrack, *, params: NemoParams) -> bool:
    """Visible long enough, neither too small nor too large, and not an abstract label."""
    abstract = {normalize(label) for label in params.abstract_labels}
    return (track.visible_s + _EPS >= params.min_visible_s
            and params.min_area_frac - _EPS <= track.mean_area_frac <= params.max_area_frac + _EPS
            and normalize(track.tag) not in abstract)


def _scene_targets(scene: Scene, tables: SceneTables, *, params: NemoParams) -> list[Target]:
    if scene.duration_s <= params.min_scene_s:
        return []
    targets = []
    candidates = sorted(
        (o for o in tables.objects_by_scene.get(scene.scene_id, ())
         if is_prominent(o, params=params) and _snapped(scene, o) is not None),
        key=lambda o: (-(o.visible_s * o.mean_area_frac), o.object_id),
    )
    if candidates:
        targets.append(Target("object", scene, candidates[0]))
    if len(ranked_tags(tables.tags_by_scene.get(scene.scene_id, ()))) >= params.min_scene_tags:
        targets.append(Target("scene", scene))
    return targets


def select_targets(tables: SceneTables, *, params: NemoParams) -> list[Target]:
    """Every object and scene target of ``tables``, by video, scene index, then needle type.

    With ``params.max_targets`` > 0 and more targets than that, a seeded sample of that many
    is kept (in the same order).
    """
    targets = [
        target
        for video_id in tables.video_ids()
        for scene in tables.scenes_by_video[video_id]
        for target in _scene_targets(scene, tables, params=params)
    ]
    if 0 < params.max_targets < len(targets):
        rng = random.Random(f"nemo-targets:{params.seed}")
        keep = sorted(rng.sample(range(len(targets)), params.max_targets))
        targets = [targets[i] for i in keep]
    return targets
