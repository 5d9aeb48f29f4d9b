"""People walking, measured on tracks and boxes: an action a viewer checks at a glance.

Why: on the real programs of pedestrians crossing a campus lawn every other shot also holds a
person (a man talking in a car, a cyclist, spectators of a race) and a car, so "a scene with
people and cars" has no negative and the shot got no question. What sets it apart is what the
people *do*: they walk across the picture, while the man in the car sits still.

**The measure.** A person is walking when the centre of their box moves, across a static
shot, at least :data:`MIN_SPEED` of their own box height per second, in a steady direction.
Speed in box heights is independent of distance and frame size (a walker covers about 0.5-1
body heights a second, seen from the side; less when walking towards the camera). On stored
tracks (one box a keyframe): net displacement over at least :data:`MIN_TRACK_S` and three boxes,
at least :data:`MIN_STRAIGHTNESS` of the path length (a track that only jitters goes nowhere).
A person riding a bicycle, motorcycle, horse or skateboard (their box mostly over one) is not
walking. A moving camera moves everyone in the picture, so a shot whose keyframes shift by
more than :data:`MAX_CAMERA_SHIFT` of the frame height a second (phase correlation of the grey
frames) says nothing either way.

**Measured** on the nine real programs (corpus seed 0, every person track of 2 s or more):
the pedestrians' tracks 0.4-1.2 box heights a second with straightness 0.9-1.0 (a few
standing or turning among them under 0.3); every person in the talking-head, car, lectern,
face and street-statement shots 0.00-0.05.

The scene tag is :data:`WALK_TAG` ("someone walking": true whether one or ten people walk).
The looking verifier reads it again on its own frames (:func:`walks`): each frame with a
companion frame :data:`MOTION_GAP_S` later (:func:`companion_pairs`), since frames seconds
apart let a walker in a crowd cross the places of others and be matched with someone else;
consecutive frames (:func:`pair_looks`) where no companions were decoded. A negative of such
a question may show people, only none moving (:func:`nobody_walks`).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from needleforge.records import Box, Detection, ObjectTrack
from needleforge.records.phrases import is_person, normalize

#: Recorded as the tag's backend and version; bumped when the measure changes.
MEASURE_NAME = "measure-walking"
MEASURE_VERSION = "1"
#: The scene tag of a shot where someone walks.
WALK_TAG = "someone walking"
#: Box heights a second a walker's box centre moves, at least.
MIN_SPEED = 0.3
#: A negative's person moving this many box heights a second may be walking.
NEGATIVE_SPEED = 0.2
#: Net displacement over path length a walking track needs.
MIN_STRAIGHTNESS = 0.8
#: A stored track spans this many seconds (and three boxes) at least to be measured.
MIN_TRACK_S = 2.0
#: Camera shift, in frame heights a second, above which a shot's motion cannot be read.
MAX_CAMERA_SHIFT = 0.03
#: Labels a person rides rather than walks.
RIDDEN = frozenset({"bicycle", "motorcycle", "horse", "skateboard"})
#: A person box this much inside a ridden thing's box is its rider.
RIDER_OVERLAP = 0.3
#: Frames of a pair this far apart (seconds) at most and at least.
PAIR_GAP_S = (0.3, 4.0)
#: How long after each of a target's frames its companion frame is taken
#: (:func:`companion_pairs`): a walker moves about half a box height, less than the space
#: between two people of a crowd, so each is matched with themself.
MOTION_GAP_S = 0.5
#: Companion frames this far apart (seconds) at least and at most make a pair.
COMPANION_GAP_S = (0.2, 1.0)
#: A match moving faster than this many box heights a second is two different people (a
#: sprint is about 3): dropped from a target's pairs, where it would confirm a walk that is
#: not there, and kept in a negative's, where it refuses.
MAX_SPEED = 2.5
#: Detections of a person at this score or more take part.
MIN_SCORE = 0.4
_WIDTH = 160


def _grey(image: npt.NDArray[np.uint8]) -> npt.NDArray[np.float32]:
    import cv2  # on first use: the describer imports this module for WALK_TAG alone

    if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8 or not image.size:
        raise ValueError(f"image must be non-empty uint8 (H, W, 3) RGB; got {image.dtype} "
                         f"{image.shape}")
    h, w = image.shape[:2]
    small = cv2.resize(image, (_WIDTH, max(1, round(_WIDTH * h / w))),
                       interpolation=cv2.INTER_AREA)
    return cv2.cvtColor(small, cv2.COLOR_RGB2GRAY).astype(np.float32)


def camera_shift(a: npt.NDArray[np.uint8], b: npt.NDArray[np.uint8]) -> float:
    """How far the picture moved from frame ``a`` to ``b``, in frame heights (the global
    translation phase correlation finds; small moving people do not move it)."""
    import cv2

    ga, gb = _grey(a), _grey(b)
    if ga.shape != gb.shape:
        raise ValueError(f"frames differ in size: {a.shape} and {b.shape}")
    window = cv2.createHanningWindow((ga.shape[1], ga.shape[0]), cv2.CV_32F)
    (dx, dy), _ = cv2.phaseCorrelate(ga, gb, window)
    return math.hypot(float(dx), float(dy)) / float(ga.shape[0])


def camera_still(times: Sequence[float], images: Sequence[npt.NDArray[np.uint8]]) -> bool:
    """Whether the camera holds still over consecutive frames (``times`` in seconds)."""
    for (t0, a), (t1, b) in itertools.pairwise(zip(times, images, strict=True)):
        if t1 > t0 and camera_shift(a, b) > MAX_CAMERA_SHIFT * (t1 - t0):
            return False
    return True


@dataclasses.dataclass(frozen=True, slots=True)
class Gait:
    """A person's motion: box heights a second and net displacement over path length."""

    speed: float
    straightness: float

    @property
    def walking(self) -> bool:
        return self.speed >= MIN_SPEED and self.straightness >= MIN_STRAIGHTNESS


def _overlap(a: Box, b: Box) -> float:
    """The share of ``a``'s area inside ``b``."""
    w = min(a.x + a.w, b.x + b.w) - max(a.x, b.x)
    h = min(a.y + a.h, b.y + b.h) - max(a.y, b.y)
    return max(w, 0.0) * max(h, 0.0) / (a.w * a.h)


def _riding(track: ObjectTrack, others: Sequence[ObjectTrack]) -> bool:
    ridden = [b for o in others if normalize(o.tag) in RIDDEN for b in o.boxes]
    over = sum(1 for box in track.boxes
               if any(abs(r.t_s - box.t_s) < 0.05
                      and _overlap(box.box, r.box) >= RIDER_OVERLAP for r in ridden))
    return over * 2 >= len(track.boxes)


def gait(track: ObjectTrack, *, aspect: float, min_boxes: int = 3,
         min_s: float = MIN_TRACK_S) -> Gait | None:
    """The track's motion, or None when it is too short to tell (``min_s`` seconds and
    ``min_boxes`` boxes). ``aspect`` is the frame's width over its height."""
    boxes = sorted(track.boxes, key=lambda b: b.t_s)
    span = boxes[-1].t_s - boxes[0].t_s
    if len(boxes) < min_boxes or span < min_s or span <= 0:
        return None
    xs = np.array([(b.box.x + b.box.w / 2) * aspect for b in boxes])
    ys = np.array([b.box.y + b.box.h / 2 for b in boxes])
    height = float(np.median([b.box.h for b in boxes]))
    path = float(np.hypot(np.diff(xs), np.diff(ys)).sum())
    net = float(np.hypot(xs[-1] - xs[0], ys[-1] - ys[0]))
    return Gait(net / (boxes[-1].t_s - boxes[0].t_s) / height, net / path if path else 0.0)


def walking_tags(objects: Sequence[ObjectTrack], times: Sequence[float],
                 images: Sequence[npt.NDArray[np.uint8]]) -> list[tuple[str, float]]:
    """``[(WALK_TAG, fastest walker's speed capped at 1)]`` when a person track of the scene
    walks across a still shot, else none."""
    if not images:
        return []
    aspect = images[0].shape[1] / images[0].shape[0]
    gaits = [g for o in objects if is_person(o.tag) and not _riding(o, objects)
             and (g := gait(o, aspect=aspect)) is not None and g.walking]
    if not gaits or not camera_still(times, images):
        return []
    return [(WALK_TAG, round(min(1.0, max(g.speed for g in gaits)), 4))]


def may_walk(objects: Sequence[ObjectTrack], times: Sequence[float],
             images: Sequence[npt.NDArray[np.uint8]]) -> bool:
    """Whether a negative candidate could show someone walking, from its stored tracks and
    keyframes (the planner's rule, before the verifier looks): a person track that moves at
    :data:`NEGATIVE_SPEED` box heights a second or more, or people over a moving camera."""
    people = [o for o in objects if is_person(o.tag) and not _riding(o, objects)]
    if not people:
        return False
    aspect = images[0].shape[1] / images[0].shape[0] if images else 16 / 9
    for person in people:
        moving = gait(person, aspect=aspect, min_boxes=2, min_s=0.0)
        if moving is not None and moving.speed >= NEGATIVE_SPEED:
            return True
    return not camera_still(times, images)


Detect = Callable[[float, npt.NDArray[np.uint8]], Sequence[Detection]]


@dataclasses.dataclass(frozen=True, slots=True)
class PairLook:
    """What a pair of consecutive frames from ``t_s`` shows: ``"empty"`` (nobody),
    ``"still"`` or ``"moving"`` (the fastest matched person, ``speed`` box heights a second),
    ``"unmatched"`` (people, none found again in the other frame: the detector flickers) or
    ``"unreadable"`` (people over a moving camera)."""

    t_s: float
    kind: str
    speed: float = 0.0

    def describe(self) -> str:
        if self.kind in ("still", "moving"):
            return f"t={self.t_s:.2f} {self.kind} {self.speed:.2f}"
        return f"t={self.t_s:.2f} {self.kind}"


TimedImage = tuple[float, npt.NDArray[np.uint8]]


def pair_looks(times: Sequence[float], images: Sequence[npt.NDArray[np.uint8]], *,
               detect: Detect, min_speed: float) -> list[PairLook]:
    """People on pairs of consecutive frames (:data:`PAIR_GAP_S` apart), as
    :func:`looks_on_pairs` reads them."""
    frames = sorted(zip(times, images, strict=True), key=lambda f: f[0])
    pairs = [(a, b) for a, b in itertools.pairwise(frames)
             if PAIR_GAP_S[0] <= b[0] - a[0] <= PAIR_GAP_S[1]]
    return looks_on_pairs(pairs, detect=detect, min_speed=min_speed)


def companion_pairs(frames: Sequence[TimedImage], companions: Sequence[TimedImage]
                    ) -> list[tuple[TimedImage, TimedImage]]:
    """Each of ``frames`` with the first of ``companions`` :data:`COMPANION_GAP_S` after it.

    Why: frames spread over a scene are seconds apart, and in a crowd a walker has then
    crossed the places of others; matching each person with the nearest box found them
    "still" (the campus lawn's walkers at 0.17-0.28 box heights a second on frames 3 s apart,
    0.56-0.88 on the same frames with companions half a second later)."""
    pairs = []
    for frame in frames:
        later = [c for c in companions
                 if COMPANION_GAP_S[0] <= c[0] - frame[0] <= COMPANION_GAP_S[1]]
        if later:
            pairs.append((frame, min(later, key=lambda c: c[0])))
    return pairs


def looks_on_pairs(pairs: Sequence[tuple[TimedImage, TimedImage]], *, detect: Detect,
                   min_speed: float, max_speed: float | None = None) -> list[PairLook]:
    """People on each pair of ``(time, image)`` frames: person boxes of the two frames are
    matched when each is the other's nearest of similar height; a match moving at
    ``min_speed`` box heights a second or more (and, when given, at most ``max_speed``)
    makes the pair ``"moving"``."""
    looks = []
    for (t0, a), (t1, b) in pairs:
        gap = t1 - t0
        if gap <= 0:
            raise ValueError(f"a pair of frames must go forward in time: {t0} then {t1}")
        first, second = _people(detect(t0, a)), _people(detect(t1, b))
        speeds = [s for s in _speeds(first, second, aspect=a.shape[1] / a.shape[0], gap=gap)
                  if max_speed is None or s <= max_speed]
        if not first and not second:
            looks.append(PairLook(t0, "empty"))
        elif camera_shift(a, b) > MAX_CAMERA_SHIFT * gap:
            looks.append(PairLook(t0, "unreadable"))
        elif speeds:
            fastest = max(speeds)
            looks.append(PairLook(t0, "moving" if fastest >= min_speed else "still", fastest))
        else:
            looks.append(PairLook(t0, "unmatched"))
    return looks


def walks(looks: Sequence[PairLook]) -> bool:
    """Someone walks in a target's frames: at least half the pairs with people matched (and
    one at least) show one moving."""
    matched = [look for look in looks if look.kind in ("still", "moving")]
    moving = sum(look.kind == "moving" for look in matched)
    return moving >= 1 and moving * 2 >= len(matched)


def nobody_walks(looks: Sequence[PairLook]) -> bool:
    """No one may be walking in a negative's frames: no pair moving, none over a moving
    camera with people in view."""
    return not any(look.kind in ("moving", "unreadable") for look in looks)


def _people(found: Sequence[Detection]) -> list[Box]:
    """The person boxes of one frame's detections, riders left out (a person box over a
    bicycle, motorcycle, horse or skateboard box rides rather than walks)."""
    ridden = [d.box for d in found if normalize(d.label) in RIDDEN and d.score >= MIN_SCORE]
    return [d.box for d in found if is_person(d.label) and d.score >= MIN_SCORE
            and not any(_overlap(d.box, r) >= RIDER_OVERLAP for r in ridden)]


def _nearest(box: Box, others: Sequence[Box], *, aspect: float) -> tuple[float, int] | None:
    """Distance (frame heights) to the nearest of ``others`` of similar height, and its
    index; None when none is."""
    cx, cy = (box.x + box.w / 2) * aspect, box.y + box.h / 2
    near = [(math.hypot((o.x + o.w / 2) * aspect - cx, o.y + o.h / 2 - cy), i)
            for i, o in enumerate(others) if 0.6 <= o.h / box.h <= 1.6]
    return min(near) if near else None


def _speeds(first: Sequence[Box], second: Sequence[Box], *, aspect: float,
            gap: float) -> list[float]:
    """Box heights a second of each person of ``first`` matched in ``second`` (mutual
    nearest boxes of similar height)."""
    speeds = []
    for i, box in enumerate(first):
        forward = _nearest(box, second, aspect=aspect)
        if forward is None:
            continue
        back = _nearest(second[forward[1]], first, aspect=aspect)
        if back is not None and back[1] == i:
            speeds.append(forward[0] / gap / box.h)
    return speeds
