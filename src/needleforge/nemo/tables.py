"""The representation tables indexed by scene, checked once before generation starts."""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping

from needleforge.backends.writing import SceneView
from needleforge.errors import NemoError
from needleforge.records import ObjectTrack, Scene, SceneTag


@dataclasses.dataclass(frozen=True, slots=True)
class SceneTables:
    """Scenes per video (in index order) with each scene's tags and objects; kept videos only.

    Built by :func:`index_tables`; every lookup is by id, so iteration order never depends
    on the order the caller's records came in.
    """

    scenes_by_video: Mapping[str, tuple[Scene, ...]]
    tags_by_scene: Mapping[str, tuple[SceneTag, ...]]
    objects_by_scene: Mapping[str, tuple[ObjectTrack, ...]]
    scenes_by_id: Mapping[str, Scene]
    #: Per video: how many of its scenes hold each term (tag or object label, normalized).
    term_counts: Mapping[str, Mapping[str, int]] = dataclasses.field(default_factory=dict)
    #: Every term some kept scene holds: what a description can be read against.
    vocabulary: frozenset[str] = frozenset()

    def common_terms(self, video_id: str, *, share: float) -> frozenset[str]:
        """Terms held by more than ``share`` of the video's scenes (a "person" in nearly
        every shot): they tell no scene apart, and a negative may not hold what the
        question names, so a question naming them could find no negatives."""
        n = len(self.scenes_by_video.get(video_id, ()))
        counts = self.term_counts.get(video_id, {})
        return frozenset(t for t, c in counts.items() if n and c / n > share)

    def video_ids(self) -> tuple[str, ...]:
        """Videos with at least one scene, sorted."""
        return tuple(sorted(self.scenes_by_video))

    def view(self, scene: Scene) -> SceneView:
        """``scene`` with its tags and objects (no keyframes)."""
        return SceneView(scene, self.tags_by_scene.get(scene.scene_id, ()),
                         self.objects_by_scene.get(scene.scene_id, ()))


def index_tables(
    scenes: Iterable[Scene],
    *,
    tags: Iterable[SceneTag],
    objects: Iterable[ObjectTrack],
    video_ids: Iterable[str] | None = None,
) -> SceneTables:
    """Group tags and objects by scene and scenes by video, keeping only ``video_ids``.

    Tags and objects of scenes outside the kept videos are ignored (the caller may pass whole
    tables and a subset of videos). Raises:
        NemoError: a scene id seen twice, or a tag/object whose scene is not among ``scenes``
            at all (a dangling reference: the message names the record and the scene).
    """
    all_scenes: dict[str, Scene] = {}
    for scene in scenes:
        if scene.scene_id in all_scenes:
            raise NemoError(f"scene {scene.scene_id} appears twice in the scene table")
        all_scenes[scene.scene_id] = scene
    wanted = None if video_ids is None else set(video_ids)
    by_video: dict[str, list[Scene]] = defaultdict(list)
    for scene in all_scenes.values():
        if wanted is None or scene.video_id in wanted:
            by_video[scene.video_id].append(scene)
    kept_ids = {s.scene_id for group in by_video.values() for s in group}
    tag_groups: dict[str, list[SceneTag]] = defaultdict(list)
    for tag in tags:
        _known(tag.scene_id, f"tag {tag.tag!r}", all_scenes)
        if tag.scene_id in kept_ids:
            tag_groups[tag.scene_id].append(tag)
    object_groups: dict[str, list[ObjectTrack]] = defaultdict(list)
    for obj in objects:
        _known(obj.scene_id, f"object {obj.object_id}", all_scenes)
        if obj.scene_id in kept_ids:
            object_groups[obj.scene_id].append(obj)
    tables = SceneTables(
        scenes_by_video={v: tuple(sorted(g, key=lambda s: s.index)) for v, g in by_video.items()},
        scenes_by_id={s.scene_id: s for group in by_video.values() for s in group},
        tags_by_scene={k: tuple(sorted(g, key=lambda t: (t.tag, -t.score, t.backend)))
                       for k, g in tag_groups.items()},
        objects_by_scene={k: tuple(sorted(g, key=lambda o: o.object_id))
                          for k, g in object_groups.items()},
    )
    counts = {video: Counter(t for scene in group for t in tables.view(scene).terms)
              for video, group in tables.scenes_by_video.items()}
    vocabulary = frozenset(t for c in counts.values() for t in c)
    return dataclasses.replace(tables, term_counts=counts, vocabulary=vocabulary)


def _known(scene_id: str, what: str, scenes: Mapping[str, Scene]) -> None:
    if scene_id not in scenes:
        raise NemoError(f"{what} points at unknown scene {scene_id!r}")
