"""Seeded plans of synthetic videos: scenes with hard cuts, and objects moving across them.

A plan is pure data computed from the seed, so the renderer, the subtitle writer and the
ground-truth writer all read the same facts. All geometry is in whole frames and pixels:
scene ``k`` covers frames ``[start_frame, end_frame)``, frame ``i`` is shown at ``i / fps``
seconds, and an object's top-left corner at frame ``i`` is the linear interpolation between
``start_px`` (at ``start_frame``) and ``end_px`` (at ``end_frame``, exclusive), rounded half
up to whole pixels (:meth:`ObjectPlan.position_at`). Objects never overlap one another and
always lie fully inside the frame, so their ground-truth boxes are exactly what is visible.
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Sequence

from needleforge.errors import StudioError
from needleforge.studio.assets import Backdrop, Cutout

#: Area fraction of "featured" objects: the NeMo target range is 5-25 %, kept off the edges.
FEATURED_AREA = (0.06, 0.22)
#: Area fraction of small objects, and of brief ones (which pop in mid-scene, so they stay
#: small enough not to look like a cut to a content detector).
SMALL_AREA = (0.006, 0.03)
#: Seconds a brief object stays on screen.
BRIEF_S = (1.0, 3.0)
#: Fastest motion, as a fraction of the frame width (or height) per second.
MAX_SPEED = 0.06
#: Chance of 0, 1 or 2 objects in a scene.
OBJECT_COUNT_WEIGHTS = (0.2, 0.45, 0.35)
_PLACEMENT_TRIES = 20


@dataclasses.dataclass(frozen=True, slots=True)
class ScenePlan:
    """One shot: frames ``[start_frame, end_frame)`` over one backdrop."""

    index: int
    start_frame: int
    end_frame: int
    backdrop: Backdrop

    @property
    def n_frames(self) -> int:
        return self.end_frame - self.start_frame


@dataclasses.dataclass(frozen=True, slots=True)
class ObjectPlan:
    """One cut-out moving linearly, on screen for frames ``[start_frame, end_frame)``."""

    object_id: str
    scene_index: int
    cutout: Cutout
    mirrored: bool
    start_frame: int
    end_frame: int
    size_px: tuple[int, int]
    start_px: tuple[int, int]
    end_px: tuple[int, int]

    def position_at(self, frame: int) -> tuple[int, int]:
        """Top-left pixel at ``frame`` (exact integer round-half-up of the linear path)."""
        span = self.end_frame - self.start_frame
        k = frame - self.start_frame
        x = self.start_px[0] + (2 * (self.end_px[0] - self.start_px[0]) * k + span) // (2 * span)
        y = self.start_px[1] + (2 * (self.end_px[1] - self.start_px[1]) * k + span) // (2 * span)
        return x, y

    def visible_at(self, frame: int) -> bool:
        return self.start_frame <= frame < self.end_frame


@dataclasses.dataclass(frozen=True, slots=True)
class VideoPlan:
    """Everything needed to render one synthetic video and describe it."""

    program: str
    episode: int
    fps: float
    width: int
    height: int
    n_frames: int
    scenes: tuple[ScenePlan, ...]
    objects: tuple[ObjectPlan, ...]

    @property
    def stem(self) -> str:
        """File stem, e.g. ``studio-a-e01``."""
        return f"{self.program}-e{self.episode:02d}"

    @property
    def duration_s(self) -> float:
        return self.n_frames / self.fps

    def time_s(self, frame: int) -> float:
        """Presentation time of ``frame`` in seconds."""
        return frame / self.fps


@dataclasses.dataclass(frozen=True, slots=True)
class PlanRequest:
    """What to plan: one episode of one program, at the corpus' frame size and rate."""

    seed: int
    program: str
    episode: int
    duration_s: float
    min_scene_s: float
    max_scene_s: float
    fps: float
    width: int
    height: int


def scene_lengths(
    rng: random.Random, *, n_frames: int, min_frames: int, max_frames: int
) -> list[int]:
    """Scene lengths in frames summing to ``n_frames``.

    Each length is drawn in ``[min_frames, max_frames]`` while the rest can still hold a
    scene of at least ``min_frames``; the last scene takes what is left (it may exceed
    ``max_frames`` when the remainder cannot be split into two valid scenes).
    """
    lengths: list[int] = []
    remaining = n_frames
    while remaining > 0:
        if remaining <= max_frames or remaining < 2 * min_frames:
            lengths.append(remaining)
            break
        length = rng.randint(min_frames, min(max_frames, remaining - min_frames))
        lengths.append(length)
        remaining -= length
    return lengths


def pick_backdrops(
    rng: random.Random, *, n: int, n_choices: int, distinct: frozenset[tuple[int, int]]
) -> list[int]:
    """Backdrop indices for ``n`` scenes, each cuttable from the previous one.

    Raises :class:`StudioError` when some backdrop has no distinct partner at all.
    """
    chosen = [rng.randrange(n_choices)]
    for _ in range(1, n):
        options = [j for j in range(n_choices) if (chosen[-1], j) in distinct]
        if not options:
            raise StudioError(
                f"backdrop #{chosen[-1]} looks like every other backdrop; cannot cut away"
            )
        chosen.append(rng.choice(options))
    return chosen


def plan_video(
    request: PlanRequest,
    *,
    backdrops: Sequence[Backdrop],
    cutouts: Sequence[Cutout],
    distinct: frozenset[tuple[int, int]],
) -> VideoPlan:
    """Draw one video's scenes and objects from a generator seeded by (seed, program, episode).

    ``distinct`` lists the backdrop index pairs a shot detector can tell apart (see
    :func:`needleforge.studio.images.distinct_pairs`). Scene bounds are rounded to whole
    frames (at least one). Raises :class:`StudioError` when some backdrop has no partner it
    can be cut to.
    """
    rng = random.Random(f"needleforge-studio:{request.seed}:{request.program}:{request.episode}")
    fps = request.fps
    n_frames = max(1, round(request.duration_s * fps))
    min_frames = max(1, math.ceil(request.min_scene_s * fps - 1e-9))
    max_frames = max(min_frames, math.floor(request.max_scene_s * fps + 1e-9))
    lengths = scene_lengths(rng, n_frames=n_frames, min_frames=min_frames, max_frames=max_frames)
    picks = pick_backdrops(rng, n=len(lengths), n_choices=len(backdrops), distinct=distinct)
    scenes: list[ScenePlan] = []
    start = 0
    for index, (length, pick) in enumerate(zip(lengths, picks, strict=True)):
        scenes.append(ScenePlan(index, start, start + length, backdrops[pick]))
        start += length
    stem = f"{request.program}-e{request.episode:02d}"
    placer = _Placer(rng, width=request.width, height=request.height, fps=fps)
    objects: list[ObjectPlan] = []
    for scene in scenes:
        for obj in placer.place_scene(scene, cutouts):
            objects.append(dataclasses.replace(obj, object_id=f"{stem}-o{len(objects):03d}"))
    return VideoPlan(
        program=request.program,
        episode=request.episode,
        fps=fps,
        width=request.width,
        height=request.height,
        n_frames=n_frames,
        scenes=tuple(scenes),
        objects=tuple(objects),
    )


class _Placer:
    """Draws the 0-2 objects of each scene: roles, sizes, lifetimes and straight paths."""

    def __init__(self, rng: random.Random, *, width: int, height: int, fps: float) -> None:
        self.rng = rng
        self.width = width
        self.height = height
        self.fps = fps

    def place_scene(self, scene: ScenePlan, cutouts: Sequence[Cutout]) -> list[ObjectPlan]:
        count = self.rng.choices((0, 1, 2), weights=OBJECT_COUNT_WEIGHTS)[0]
        labels = self.rng.sample(list(cutouts), k=min(count, len(cutouts)))
        placed: list[ObjectPlan] = []
        for slot, cutout in enumerate(labels):
            role = self._role(slot, scene)
            for _ in range(_PLACEMENT_TRIES):
                candidate = self._draw(scene, cutout, role)
                if not any(_overlap(candidate, other) for other in placed):
                    placed.append(candidate)
                    break
        return placed

    def _role(self, slot: int, scene: ScenePlan) -> str:
        brief_ok = scene.n_frames >= round(BRIEF_S[0] * self.fps) + 2
        if slot == 0:
            return "featured" if self.rng.random() < 0.75 else "small"
        return "brief" if brief_ok and self.rng.random() < 0.5 else "small"

    def _draw(self, scene: ScenePlan, cutout: Cutout, role: str) -> ObjectPlan:
        area = self.rng.uniform(*(FEATURED_AREA if role == "featured" else SMALL_AREA))
        w, h = self._size(area, cutout.aspect)
        start_f, end_f = scene.start_frame, scene.end_frame
        if role == "brief":
            longest = min(round(BRIEF_S[1] * self.fps), scene.n_frames - 2)
            span = self.rng.randint(min(round(BRIEF_S[0] * self.fps), longest), longest)
            start_f = self.rng.randint(scene.start_frame + 1, scene.end_frame - 1 - span)
            end_f = start_f + span
        seconds = (end_f - start_f) / self.fps
        x0 = self.rng.randint(0, self.width - w)
        y0 = self.rng.randint(0, self.height - h)
        x1 = self._glide(x0, limit=self.width - w, reach=MAX_SPEED * self.width * seconds)
        y1 = self._glide(y0, limit=self.height - h, reach=MAX_SPEED * self.height * seconds)
        return ObjectPlan(
            object_id="",
            scene_index=scene.index,
            cutout=cutout,
            mirrored=self.rng.random() < 0.5,
            start_frame=start_f,
            end_frame=end_f,
            size_px=(w, h),
            start_px=(x0, y0),
            end_px=(x1, y1),
        )

    def _size(self, area: float, aspect: float) -> tuple[int, int]:
        """Pixel size with the crop's aspect and ``area`` of the frame, fitting in 90 %."""
        h = math.sqrt(area * self.width * self.height / aspect)
        w = h * aspect
        shrink = min(1.0, 0.9 * self.width / w, 0.9 * self.height / h)
        return max(2, round(w * shrink)), max(2, round(h * shrink))

    def _glide(self, start: int, *, limit: int, reach: float) -> int:
        low = max(0, math.ceil(start - reach))
        high = min(limit, math.floor(start + reach))
        return self.rng.randint(low, max(low, high))


def _overlap(a: ObjectPlan, b: ObjectPlan) -> bool:
    """True when the two objects' boxes intersect on some frame both are on screen."""
    for frame in range(max(a.start_frame, b.start_frame), min(a.end_frame, b.end_frame)):
        (ax, ay), (bx, by) = a.position_at(frame), b.position_at(frame)
        if (
            ax < bx + b.size_px[0]
            and bx < ax + a.size_px[0]
            and ay < by + b.size_px[1]
            and by < ay + a.size_px[1]
        ):
            return True
    return False
