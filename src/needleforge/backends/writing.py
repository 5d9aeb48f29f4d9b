"""Question writers (describers) and verifiers: what they see, return, and must implement.

A :class:`Describer` turns one target (a scene, or an object in it) into a description and a
needle grounding question (seed 001, Sec. 3.2.2, Table 15); a :class:`Verifier` judges whether
that description fits the target and none of the montage's negatives (Table 16). Both see the
representation tables of the scenes involved and, when the caller decodes them, keyframes with
their times (so a writer can draw the target object's box on the right frame). Subtitles are
offered as context only: a description must not rest on them alone.

These types live with the backends, not with the NeMo stage, because every implementation
(embedded, ``openai_http``, ``hf_vlm``) depends on them and backends never import stages.
They depend on records and :mod:`~needleforge.backends.base` (:class:`~.base.Keyframe`, the
frames they show) only.
"""

from __future__ import annotations

import dataclasses
from typing import Protocol, runtime_checkable

from needleforge.backends.base import Keyframe
from needleforge.records import NeedleType, ObjectTrack, Scene, SceneTag
from needleforge.records.phrases import normalize, ranked_tags


def _belongs(scene: Scene, tags: tuple[SceneTag, ...], objects: tuple[ObjectTrack, ...]) -> None:
    stray = sorted(({t.scene_id for t in tags} | {o.scene_id for o in objects})
                   - {scene.scene_id})
    if stray:
        raise ValueError(f"view of scene {scene.scene_id}: holds tags/objects of {stray}")


@dataclasses.dataclass(frozen=True, slots=True)
class SceneView:
    """One scene with its tags, objects and (optionally) keyframes: a negative, as seen."""

    scene: Scene
    tags: tuple[SceneTag, ...]
    objects: tuple[ObjectTrack, ...]
    keyframes: tuple[Keyframe, ...] = dataclasses.field(default=(), compare=False)

    def __post_init__(self) -> None:
        _belongs(self.scene, self.tags, self.objects)

    @property
    def tag_names(self) -> tuple[str, ...]:
        """Distinct normalized tags, best first."""
        return ranked_tags(self.tags)

    @property
    def labels(self) -> frozenset[str]:
        """Normalized labels of the tracked objects."""
        return frozenset(normalize(o.tag) for o in self.objects)

    @property
    def terms(self) -> frozenset[str]:
        """Everything the tables say the scene shows: its tags and its object labels."""
        return frozenset(self.tag_names) | self.labels


@dataclasses.dataclass(frozen=True, slots=True)
class TargetView:
    """The target scene as a describer sees it; ``target_object`` is None for scene needles.

    ``keyframes`` may be empty (the embedded backends read only the tables).
    ``companion_frames``: for a description that names motion, frames a moment after the
    keyframes (:data:`~needleforge.scenes.walking.MOTION_GAP_S`), so a check can match each
    person with themself across a pair; empty otherwise.
    ``common_terms`` are terms (normalized tags and labels) that most scenes of the video
    hold: naming them tells the target apart from nothing, and since a negative may hold
    nothing the question names, a description naming them finds no negatives.
    """

    scene: Scene
    tags: tuple[SceneTag, ...]
    objects: tuple[ObjectTrack, ...]
    target_object: ObjectTrack | None
    keyframes: tuple[Keyframe, ...] = dataclasses.field(default=(), compare=False)
    common_terms: frozenset[str] = dataclasses.field(default=frozenset(), compare=False)
    companion_frames: tuple[Keyframe, ...] = dataclasses.field(default=(), compare=False)

    def __post_init__(self) -> None:
        _belongs(self.scene, self.tags, self.objects)
        if self.target_object is not None and self.target_object not in self.objects:
            raise ValueError(f"target object {self.target_object.object_id} is not among the "
                             f"objects of scene {self.scene.scene_id}")

    @property
    def subtitle_text(self) -> str:
        """Subtitles overlapping the scene: noisy context, never the only evidence."""
        return self.scene.subtitle_text

    @property
    def target_id(self) -> str:
        """The target object's id, or the scene's for a scene needle."""
        return self.target_object.object_id if self.target_object else self.scene.scene_id

    def as_scene_view(self) -> SceneView:
        """The same scene without the target marker."""
        return SceneView(self.scene, self.tags, self.objects, self.keyframes)


@dataclasses.dataclass(frozen=True, slots=True)
class WrittenNeedle:
    """A written needle: the description (noun phrase or sentence) and the question asked.

    ``template_id`` names the phrasing used (a template id, or e.g. ``openai/<model>/v1``
    for a question a model wrote).
    """

    needle_type: NeedleType
    description: str
    question: str
    template_id: str

    def __post_init__(self) -> None:
        for name in ("description", "question", "template_id"):
            if not getattr(self, name).strip():
                raise ValueError(f"written {self.needle_type} needle: {name} is empty")


@dataclasses.dataclass(frozen=True, slots=True)
class Skip:
    """A describer declining a target (an object too abstract to ground, an unusable answer)."""

    reason: str

    def __post_init__(self) -> None:
        if not self.reason.strip():
            raise ValueError("a skip needs a reason")


@dataclasses.dataclass(frozen=True, slots=True)
class VerifyRequest:
    """A written needle, its target and the negatives of its montage, to be judged."""

    needle_type: NeedleType
    description: str
    question: str
    target: TargetView
    negatives: tuple[SceneView, ...]

    def __post_init__(self) -> None:
        if (self.needle_type == "object") != (self.target.target_object is not None):
            raise ValueError(f"verify request: needle_type {self.needle_type!r} with target "
                             f"object {self.target.target_object!r}")


@dataclasses.dataclass(frozen=True, slots=True)
class Verdict:
    """Pass or fail, with a reason specific enough to audit (which negative, which word).

    ``unconfirmed``: on a failure, the one term of the description that no second look could
    confirm on the target (normalized; empty when the failure is anything else), so that a
    scene needle can be written again without it. ``refused_negatives``: on a failure, the
    scene ids of the negatives that showed what the question names (empty when the failure
    is anything else), so that the montage can be planned again without them.
    """

    passed: bool
    reason: str
    unconfirmed: str = ""
    refused_negatives: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.reason.strip():
            raise ValueError("a verdict needs a reason")


@runtime_checkable
class Describer(Protocol):
    """Writes the description and grounding question of one target."""

    @property
    def name(self) -> str:
        """Stable backend name recorded with every question."""
        ...

    @property
    def version(self) -> str:
        """Backend version (templates or model + prompts), recorded with every question."""
        ...

    def write(self, view: TargetView, *, needle_type: NeedleType) -> WrittenNeedle | Skip:
        """A written needle for ``view``, or a :class:`Skip` saying why there is none."""
        ...


@runtime_checkable
class Verifier(Protocol):
    """Judges whether a written needle picks out its target and none of the negatives."""

    @property
    def name(self) -> str:
        """Stable backend name recorded with every verdict."""
        ...

    @property
    def version(self) -> str:
        """Backend version recorded with every verdict."""
        ...

    def verify(self, request: VerifyRequest) -> Verdict:
        """The verdict on ``request``; fails (never passes) when evidence is missing."""
        ...
