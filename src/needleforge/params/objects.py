"""``objects:`` of ``params.yaml``: the objects step's models, tracking and evidence."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator

from needleforge.params.base import ParamsSection as _Section

#: Labels one object may get on different keyframes: the COCO detector calls one van "car"
#: on one frame and "truck" on the next. Fragments of one object are merged across a family.
DEFAULT_LABEL_FAMILIES: tuple[tuple[str, ...], ...] = (("bus", "car", "truck"),)
#: Labels the COCO detector gives one thing under two names (a cockatoo as "bird" and
#: "teddy bear" with the same box; a cat as "dog"). Unlike families, a label may be in several
#: groups; they merge only tracks on one box, or at one place in a still shot.
DEFAULT_CONFUSABLE_LABELS: tuple[tuple[str, ...], ...] = (
    ("bird", "teddy bear"), ("cat", "dog"), ("bear", "teddy bear"), ("cat", "teddy bear"),
    ("dog", "teddy bear"), ("cow", "horse", "sheep"), ("bed", "bench", "chair", "couch"),
    ("laptop", "tv"), ("bowl", "cup", "vase", "wine glass"), ("microwave", "oven", "toaster"),
    ("cake", "donut", "pizza", "sandwich"), ("bicycle", "motorcycle"),
)


class ObjectParams(_Section):
    """Tagging, detection, tracking and evidence hygiene for ``needleforge objects``.

    **Tracking.** ``iou_threshold`` and ``max_centroid_dist`` (Euclidean distance between box
    centres in normalized frame units) decide when a detection continues a track;
    ``max_gap_s`` is how long a track may go unseen (measured from its last hit to the
    keyframe before the new hit) and still continue; tracks with fewer than ``min_hits``
    detections are dropped. Detections below ``min_detection_score`` are ignored.

    **Evidence hygiene** (what real footage taught us: one-frame false detections, a window
    frame called a surfboard, one van split into three trucks):

    * a box covering more than ``max_box_area_frac`` of the frame is dropped before tracking
      (the detector's whole-frame boxes are guesses about texture, not objects);
    * a detector label becomes a scene tag only when it is seen on at least
      ``min_label_keyframes`` keyframes of the scene;
    * fragments of one object are merged before anything is counted or ranked: tracks of one
      label (or of one of ``label_families``) that follow each other within ``merge_gap_s``
      and whose boxes line up (predicted centre within ``merge_max_dist``), or that overlap
      in time with boxes of IoU >= ``merge_iou`` on shared keyframes;
    * tracks of one family or of one ``confusable_labels`` group are also one object when
      their boxes agree with IoU >= ``merge_label_iou`` wherever both were seen (two labels on
      one box), or when both stand still and the second takes up the first's place (IoU >=
      ``merge_static_iou``) within ``merge_static_gap_s``: counts are of objects, not tracks;
    * with ``crop_check``, the tagger looks at up to ``crop_keyframes`` crops of each track
      whose label it can judge (:mod:`needleforge.objects.families`): a detector word it
      contradicts is not written, and vehicles get the finer word it confirms ("van").

    **Scene tags.** The tagger sees ``tag_keyframes_per_scene`` keyframes spread over each
    scene (``None``: every keyframe). A tag counts only by consensus: it must be among the
    tagger's answers on at least ``min_tag_keyframes`` of them (all of them when the scene has
    fewer) with a mean score, over the tagged keyframes, of at least ``min_tag_score``.
    ``detector``/``tagger`` name backends in the registry; ``ocr`` also reads on-screen text.
    ``pose_people``: a scene where no person was boxed but most keyframes show a body pose
    (MoveNet) is tagged ``person pose`` (:mod:`needleforge.scenes.bodies`: a close-up the
    detector misses), which keeps it out of the negatives of people questions.
    ``*_options`` go to the backend's constructor (e.g. ``tagger_options: {model_dir:
    models/smolvlm}`` for ``hf_vlm``, ``{checkpoint: …}`` for ``ram_plus``); the registry
    rejects options a backend does not take, naming them.
    """

    iou_threshold: Annotated[float, Field(gt=0, le=1)] = 0.3
    max_centroid_dist: Annotated[float, Field(ge=0, le=1.5)] = 0.15
    max_gap_s: Annotated[float, Field(ge=0, le=60)] = 1.0
    min_hits: Annotated[int, Field(ge=1)] = 2
    min_detection_score: Annotated[float, Field(ge=0, le=1)] = 0.5
    max_box_area_frac: Annotated[float, Field(gt=0, le=1)] = 0.9
    min_label_keyframes: Annotated[int, Field(ge=1)] = 2
    merge_gap_s: Annotated[float, Field(ge=0, le=60)] = 3.0
    merge_max_dist: Annotated[float, Field(ge=0, le=1.5)] = 0.2
    merge_iou: Annotated[float, Field(gt=0, le=1)] = 0.5
    label_families: tuple[tuple[str, ...], ...] = DEFAULT_LABEL_FAMILIES
    merge_label_iou: Annotated[float, Field(gt=0, le=1)] = 0.7
    merge_static_gap_s: Annotated[float, Field(ge=0, le=600)] = 30.0
    merge_static_iou: Annotated[float, Field(gt=0, le=1)] = 0.5
    confusable_labels: tuple[tuple[str, ...], ...] = DEFAULT_CONFUSABLE_LABELS
    crop_check: bool = True
    crop_keyframes: Annotated[int, Field(ge=1, le=16)] = 3
    min_tag_score: Annotated[float, Field(ge=0, le=1)] = 0.3
    min_tag_keyframes: Annotated[int, Field(ge=1)] = 2
    detector: Annotated[str, Field(min_length=1)] = "embedded"
    tagger: Annotated[str, Field(min_length=1)] = "embedded"
    ocr: bool = True
    pose_people: bool = True
    tag_keyframes_per_scene: Annotated[int, Field(ge=1)] | None = 3
    detector_options: dict[str, str | int | float | bool] = Field(default_factory=dict)
    tagger_options: dict[str, str | int | float | bool] = Field(default_factory=dict)

    @field_validator("label_families")
    @classmethod
    def _families(cls, value: tuple[tuple[str, ...], ...]) -> tuple[tuple[str, ...], ...]:
        seen: dict[str, int] = {}
        for index, family in enumerate(value):
            labels = [" ".join(label.lower().split()) for label in family]
            if len(labels) < 2 or any(not label for label in labels):
                raise ValueError(f"label_families[{index}] = {list(family)!r} must name at "
                                 f"least two non-empty labels")
            for label in labels:
                if label in seen:
                    raise ValueError(f"label {label!r} is in label_families[{seen[label]}] "
                                     f"and label_families[{index}]")
                seen[label] = index
        return tuple(tuple(" ".join(lb.lower().split()) for lb in f) for f in value)

    @field_validator("confusable_labels")
    @classmethod
    def _confusable(cls, value: tuple[tuple[str, ...], ...]) -> tuple[tuple[str, ...], ...]:
        groups = tuple(tuple(" ".join(lb.lower().split()) for lb in g) for g in value)
        for index, group in enumerate(groups):
            if len(set(group)) < 2 or not all(group):
                raise ValueError(f"confusable_labels[{index}] = {list(value[index])!r} must "
                                 f"name at least two different non-empty labels")
        return groups
