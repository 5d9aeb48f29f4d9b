"""Compose tracking, attributes and referring expressions into a scene's object records.

Pure functions: keyframe images and detections in, records out. Running the detector and
tagger, and writing DuckDB, belong to the caller (the ``objects`` flow / CLI command).
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from needleforge.objects.attributes import position_name, size_ranks, track_colour
from needleforge.objects.expressions import referring_expressions
from needleforge.objects.settle import CropTagger, settle_tracks
from needleforge.objects.tracker import TIME_EPS, track_objects
from needleforge.params import ObjectParams
from needleforge.records import Detection, ObjectAttributes, ObjectTrack, TagScore, object_id_for


def _keyframe_times(
    keyframes: Sequence[tuple[float, npt.NDArray[np.uint8]]], *, scene_id: str
) -> list[float]:
    """The keyframe times; ``ValueError`` unless they strictly increase (bisect needs it)."""
    times = [t for t, _ in keyframes]
    for prev, t_s in itertools.pairwise(times):
        if t_s <= prev:
            raise ValueError(f"scene {scene_id}: keyframe times must increase; "
                             f"t_s = {t_s!r} follows {prev!r}")
    return times


def _image_at(
    keyframes: Sequence[tuple[float, npt.NDArray[np.uint8]]], times: Sequence[float],
    t_s: float, *, scene_id: str,
) -> npt.NDArray[np.uint8]:
    """The keyframe image taken at ``t_s`` (within ``TIME_EPS``); ``ValueError`` when none."""
    k = bisect.bisect_left(times, t_s - TIME_EPS)
    if k < len(times) and abs(times[k] - t_s) <= TIME_EPS:
        return keyframes[k][1]
    raise ValueError(f"scene {scene_id}: no keyframe image at t_s = {t_s!r} "
                     f"(keyframes at {list(times)})")


def build_objects(
    keyframes: Sequence[tuple[float, npt.NDArray[np.uint8]]],
    detections_by_time: Sequence[tuple[float, Sequence[Detection]]],
    *,
    scene_id: str,
    scene_start_s: float,
    scene_end_s: float,
    params: ObjectParams,
    backend: str,
    model_version: str,
    crop_tagger: CropTagger | None = None,
) -> list[ObjectTrack]:
    """The object records of one scene, indexed in track order (start time, label, place).

    ``keyframes`` are ``(t_s, RGB image)`` pairs sorted by time and ``detections_by_time``
    lists every keyframe with its detections (see
    :func:`~needleforge.objects.tracker.track_objects`). Each track's colour is the one most
    of its hits show (:func:`~needleforge.objects.attributes.track_colour`), its position
    that of its median hit (the middle one, the earlier of two); sizes are ranked across the
    scene and referring expressions are unique within it. ``backend``/``model_version`` name
    the detector that produced the boxes.

    Before anything is described, each track's word is settled
    (:func:`~needleforge.objects.settle.settle_tracks`): with ``crop_tagger`` (and
    ``params.crop_check``) the tagger looks at crops of the tracks whose labels it can judge,
    so a detector word it contradicts is not written and a van is "van", not "car".

    Raises ``ValueError`` when ``backend`` or ``model_version`` is empty, keyframe times do
    not increase, an image is missing for a tracked keyframe, or for the reasons
    ``track_objects`` and ``dominant_colour`` give.
    """
    if not backend.strip() or not model_version.strip():
        raise ValueError(f"backend = {backend!r} and model_version = {model_version!r} "
                         "must both be non-empty")
    times = _keyframe_times(keyframes, scene_id=scene_id)
    raw = track_objects(detections_by_time, scene_id=scene_id, scene_start_s=scene_start_s,
                        scene_end_s=scene_end_s, params=params)
    raw = settle_tracks(raw, lambda t_s: _image_at(keyframes, times, t_s, scene_id=scene_id),
                        tagger=crop_tagger if params.crop_check else None,
                        crop_keyframes=params.crop_keyframes,
                        confusable_groups=params.confusable_labels)
    tracks: list[ObjectTrack] = []
    for index, (track, rank) in enumerate(zip(raw, size_ranks(raw), strict=True)):
        median = track.boxes[(len(track.boxes) - 1) // 2]
        looks = [(_image_at(keyframes, times, b.t_s, scene_id=scene_id), b.box)
                 for b in track.boxes]
        attributes = ObjectAttributes(colour=track_colour(looks, label=track.label),
                                      position=position_name(median.box), size_rank=rank)
        tracks.append(ObjectTrack(
            object_id=object_id_for(scene_id, index), scene_id=scene_id, index=index,
            tag=track.label, start_s=track.start_s, end_s=track.end_s,
            visible_s=track.visible_s, mean_area_frac=track.mean_area_frac,
            mean_score=track.mean_score, boxes=track.boxes, attributes=attributes,
            referring_expression="", backend=backend, model_version=model_version,
        ))
    phrases = referring_expressions(tracks)
    return [dataclasses.replace(t, referring_expression=p)
            for t, p in zip(tracks, phrases, strict=True)]


def scene_tags(
    tags_per_keyframe: Sequence[Sequence[TagScore]],
    tracks: Sequence[ObjectTrack],
    *,
    min_score: float,
    min_keyframes: int,
    min_label_keyframes: int,
) -> list[TagScore]:
    """The scene's tags: the tagger's by consensus, and the labels of its tracked objects.

    A tagger tag counts when it is among the tagger's answers on at least ``min_keyframes``
    of the tagged keyframes (all of them when there are fewer) and its mean score over the
    tagged keyframes (0 where it is absent) is at least ``min_score``: one frame's guess is
    not a scene word, and the same class recurring across a shot is. A detector label counts
    when one of the scene's tracks (fragments already merged) has it on at least
    ``min_label_keyframes`` keyframes, at that track's mean score. Tags are merged by their
    lower-cased text with whitespace collapsed (the tagger's "Dog" and the detector's "dog"
    are one tag), keeping the larger score; sorted by score descending, then tag.

    Raises ``ValueError`` when ``min_score`` is not in [0, 1] or a keyframe count is < 1.
    """
    if not 0.0 <= min_score <= 1.0:
        raise ValueError(f"min_score = {min_score!r} must be in [0, 1]")
    if min_keyframes < 1 or min_label_keyframes < 1:
        raise ValueError(f"min_keyframes = {min_keyframes!r} and min_label_keyframes = "
                         f"{min_label_keyframes!r} must be >= 1")
    best: dict[str, float] = {}
    for tag, score in _consensus(tags_per_keyframe, min_keyframes=min_keyframes).items():
        if score >= min_score:
            best[tag] = score
    for track in tracks:
        if len(track.boxes) >= min_label_keyframes:
            key = " ".join(track.tag.split()).lower()
            best[key] = max(track.mean_score, best.get(key, 0.0))
    kept = [TagScore(tag=tag, score=score) for tag, score in best.items()]
    return sorted(kept, key=lambda t: (-t.score, t.tag))


def _consensus(
    tags_per_keyframe: Sequence[Sequence[TagScore]], *, min_keyframes: int
) -> dict[str, float]:
    """Tags found on enough tagged keyframes, at their mean score over all of them."""
    n = len(tags_per_keyframe)
    seen: dict[str, list[float]] = {}
    for tags in tags_per_keyframe:
        frame: dict[str, float] = {}
        for t in tags:
            key = " ".join(t.tag.split()).lower()
            frame[key] = max(t.score, frame.get(key, 0.0))
        for key, score in frame.items():
            seen.setdefault(key, []).append(score)
    need = min(min_keyframes, n)
    return {key: min(1.0, sum(scores) / n) for key, scores in seen.items()
            if len(scores) >= need}
