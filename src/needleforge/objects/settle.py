"""Settle what each track is called before its word is written: the tagger looks at its crops.

The detector's label is one model's guess on a 300x300 squeeze of the frame; the ImageNet
tagger, shown the object's own crop, is a second look at no extra decode. For every track
whose labels a family judges (:func:`~needleforge.objects.families.family_for`), up to
``crop_keyframes`` of its hits, spread evenly over it (the centres of that many equal parts),
are cut out of their keyframes with :data:`CROP_GROW` extra margin and tagged; then
:func:`~needleforge.objects.families.settle_label` decides the word, or drops the track.
Tracks of labels no family judges (person, tie, kite…) cost no tagger call and keep their word.

Pure apart from the ``tagger`` callable: keyframe images and tracks in, tracks out, in the
tracker's order.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from needleforge.objects.families import family_for, settle_label
from needleforge.objects.fragments import LabelEvidence, label_evidence, relabel
from needleforge.objects.tracker import RawTrack, track_order
from needleforge.records import Box, TagScore

Image = npt.NDArray[np.uint8]
#: Tags one crop: ``(crop image, keyframe t_s) -> tags`` (the time is for error messages).
CropTagger = Callable[[Image, float], Sequence[TagScore]]

#: Extra margin around a box (0.15 = 15 %): a tight box cuts off the ears and wheels that
#: tell a cat or a car, as the verifier's crop check found.
CROP_GROW = 0.15
#: Crops smaller than this many pixels on a side are not shown to the tagger.
MIN_CROP_PX = 12


def crop(image: Image, box: Box, *, grow: float = CROP_GROW) -> Image | None:
    """The pixels of ``box`` widened by ``grow``, clipped to the frame; None when that leaves
    fewer than :data:`MIN_CROP_PX` pixels on a side (too little to judge).

    Raises:
        ValueError: when ``image`` is not an HxWx3 array or ``grow`` is negative.
    """
    if image.ndim != 3 or image.shape[2] != 3:
        raise ValueError(f"crop: image shape {image.shape} is not HxWx3")
    if not (math.isfinite(grow) and grow >= 0):
        raise ValueError(f"crop: grow = {grow!r} must be >= 0")
    height, width = image.shape[:2]
    cx, cy = (box.x + box.w / 2) * width, (box.y + box.h / 2) * height
    half_w, half_h = box.w * width * (1 + grow) / 2, box.h * height * (1 + grow) / 2
    x1, x2 = max(0, int(cx - half_w)), min(width, math.ceil(cx + half_w))
    y1, y2 = max(0, int(cy - half_h)), min(height, math.ceil(cy + half_h))
    if x2 - x1 < MIN_CROP_PX or y2 - y1 < MIN_CROP_PX:
        return None
    return np.ascontiguousarray(image[y1:y2, x1:x2])


def spread(n: int, k: int) -> list[int]:
    """``k`` indices spread evenly over ``range(n)`` (centres of k equal parts), all if fewer."""
    if k >= n:
        return list(range(n))
    return sorted({int((i + 0.5) * n / k) for i in range(k)})


def judged(track: RawTrack) -> bool:
    """Whether any label the detector gave ``track`` has a family that can judge it."""
    return any(family_for(e.label) is not None for e in _labels(track))


def _labels(track: RawTrack) -> tuple[LabelEvidence, ...]:
    return track.labels or label_evidence(track.detections)


def settle_tracks(
    tracks: Sequence[RawTrack],
    image_at: Callable[[float], Image],
    *,
    tagger: CropTagger | None,
    crop_keyframes: int,
    confusable_groups: Sequence[Sequence[str]] = (),
) -> list[RawTrack]:
    """``tracks`` with the words the tagger settles (module docstring); dropped ones left out.

    ``image_at(t_s)`` is the keyframe image of a hit. Without ``tagger`` no crop is judged
    and only the detector's own evidence counts (a car/truck switch still reads "vehicle").
    Result in the tracker's order (start time, label, place).

    Raises:
        ValueError: when ``crop_keyframes`` < 1, or for what ``image_at`` raises.
    """
    if crop_keyframes < 1:
        raise ValueError(f"crop_keyframes = {crop_keyframes!r} must be >= 1")
    settled: list[RawTrack] = []
    for track in tracks:
        readings: list[Sequence[TagScore]] = []
        if tagger is not None and judged(track):
            for i in spread(len(track.detections), crop_keyframes):
                hit = track.detections[i]
                pixels = crop(image_at(hit.t_s), hit.box)
                if pixels is not None:
                    readings.append(tagger(pixels, hit.t_s))
        verdict = settle_label(_labels(track), readings, confusable_groups=confusable_groups)
        if verdict.word is None:
            continue
        if verdict.word != track.label:
            track = dataclasses.replace(track, label=verdict.word,
                                        detections=relabel(track.detections, verdict.word),
                                        labels=_labels(track))
        settled.append(track)
    return sorted(settled, key=lambda t: track_order(t.detections))
