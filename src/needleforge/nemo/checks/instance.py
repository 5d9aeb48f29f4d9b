"""The instance check: look in a negative scene for the target object itself, by its pixels.

Why: the label check (:mod:`~needleforge.nemo.checks.negative_scan`) asks a detector whether a
scene shows a ``motorcycle``; a detector's recall falls off for objects under about 1 % of the
frame, and these are exactly the ones the representation pass missed. The commonest way for a
negative to show "the motorcycle" is that the *same* motorcycle appears in another shot of the same
video (a recurring prop, a cut back to a wider shot). That case needs no detector: the target's own
pixels are known, so its crop is searched for in the negative's frames.

How: the template is the target track's largest box, cut from the target scene's frame at
that box's time, its margin (``inner``) trimmed so less background comes along, resized to
``template_px`` pixels wide. It is searched for in each negative frame (the probe's dense
frames) at every scale from ``min_width`` to ``max_width`` of the frame's width, mirrored too,
in grey and then confirmed in colour (:mod:`~needleforge.nemo.checks.template_search`, coarse
to fine by default: ``search``). The best score at or above ``min_score`` is a
:class:`~needleforge.records.Sighting` of the target's label at that time and place. The
negative scenes' grey frames are kept between pairs (``grey_cache_mb``): stage 2 asks about
a scene for one target after another, and decoding it again cost more than the search.

**In company** (:meth:`InstanceMatcher.seen`'s ``company``): most of a frame's cost is its
pyramid, the same for every template, so when a scene must be searched for one target it is
searched for every target expected to ask about it too, one
:class:`~needleforge.nemo.checks.template_search.FramePyramid` a frame; their scans wait,
unstored, until asked (expand tells the probe ahead which targets will ask about which
scenes: :meth:`~needleforge.nemo.checks.negative_scan.TiledProbe.expect`). **Changed parts
only** (``changed_only``, the ``check.changed_only`` of the label check): a scene's first
frame is searched whole, a later one only in windows overlapping what changed since
(:class:`~needleforge.nemo.checks.change_gate.ChangeGate`), and not at all when nothing did.

What it cannot do: find the object from another side, under other light or deformed; a
different object of the same label is the label check's job. Neither can it see an object
narrower than ``min_width`` (26 pixels of a 640-pixel frame, after the margin trim). On the
studio corpus, where a label always comes from one cut-out, it finds the small same-label
objects the detector misses: over studio seeds 0-2 (8 episodes each, a frame a second, every
object target against every candidate negative) it found 55 of 56 hidden same-object
appearances at the 0.8 threshold, with 1 false alarm in 259 clean negatives (5 at 0.75,
21 at 0.7); a false alarm only costs a negative, a miss costs a wrong answer.

**Scans are kept** like the label check's: one :class:`~needleforge.records.SceneScan` per
(target, scene) under :meth:`InstanceMatcher.key_for`, a key naming the object, its
template box and the matcher's settings, so it is a fact about two pieces of video that
stays true however often stage 2 or expand runs.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from needleforge.backends.base import Keyframe
from needleforge.nemo.checks.change_gate import SPEC as GATE_SPEC
from needleforge.nemo.checks.change_gate import ChangeGate, Region
from needleforge.nemo.checks.template_search import (
    REFINE_PX,
    SEARCHES,
    FramePyramid,
    Search,
    Template,
    best_match,
    grey_of,
    match,
)
from needleforge.records import Box, ObjectTrack, Scene, SceneScan, Sighting, TimedBox
from needleforge.records.phrases import normalize

#: Decodes a scene's frames (the probe's dense frames).
FrameSource = Callable[[Scene], Sequence[Keyframe]]
#: Yields ``FrameSource``'s frames one at a time as they are decoded.
FrameStream = Callable[[Scene], Iterable[Keyframe]]
#: A frame to search: time, grey, where (None: whole), its colour image when at hand.
_Item = tuple[float, np.ndarray, Region | None, np.ndarray | None]
#: Decodes the frame of ``scene`` shown at ``t_s`` (or the nearest inside it), None if none.
FrameAt = Callable[[Scene, float], Keyframe | None]

#: A template narrower or lower than this many pixels of the target frame is not usable.
_MIN_CROP_PX = 8
#: Grey frames of negative scenes kept for the instance check, in MB (see ``grey_cache_mb``).
GREY_CACHE_MB = 512
#: Every instance scan's key starts with this; label scans' keys never do.
INSTANCE_KEY_PREFIX = "instance "


def is_instance_key(probe_key: str) -> bool:
    """Whether a stored scan's ``probe_key`` is an instance check's (else a label check's)."""
    return probe_key.startswith(INSTANCE_KEY_PREFIX)


@dataclasses.dataclass(slots=True)
class InstanceCost:
    """What the instance check spent: (target, scene) pairs matched, frames, seconds."""

    pairs: int = 0
    frames: int = 0
    seconds: float = 0.0
    reused: int = 0  #: pairs answered from stored scans
    unusable: int = 0  #: targets whose template was too small or flat to search for
    #: Pairs matched in company (with a pair asked about the same scene) and never asked.
    unasked: int = 0


class InstanceMatcher:
    """Finds a tracked object's own appearance in other scenes (see the module docstring).

    Args:
        frames: the negative scenes' frames (share the label probe's to decode once).
        frame_at: the target frame at a box's time, for the template.
        min_score: normalised cross-correlation at or above which the object is seen.
        template_px: template width in pixels (the matching resolution).
        min_width, max_width: object widths searched, as fractions of the frame width.
        scale_step: ratio between successive searched widths (> 1).
        inner: fraction of the box trimmed off each side for the template.
        search: ``"coarse-to-fine"`` or ``"exhaustive"`` (see the module docstring).
        coarse_margin: how far under ``min_score`` a coarse place may score and still be
            searched at full resolution.
        coarse_peaks: most coarse places searched at full resolution per scale and mirror.
        threads: threads a pair's frames are searched on (OpenCV releases the GIL: 1.8x on
            2 idle cores); 1 searches them in the calling thread.
        grey_cache_mb: the negative scenes' grey frames kept between pairs, in MB (least
            recently used dropped first). Stage 2 checks a scene for one target after another,
            and decoding its frames again cost more than the search; colour frames are
            decoded again only for the rare window that reaches ``min_score`` in grey.
        changed_only: search a scene's first frame whole, and each later one only where it
            changed since the frames searched before it (windows overlapping the changed
            box of :class:`~needleforge.nemo.checks.change_gate.ChangeGate`); a frame where
            nothing changed is not searched. What did not change was searched already.
        frames_spec: how ``frames`` samples, for :meth:`key_for`.
        on_close: called by :meth:`close` (e.g. to close the files ``frame_at`` holds open).
        stream: ``frames``' frames one at a time as they are decoded (e.g.
            ``VideoKeyframes.stream_without_extra``): with ``threads`` > 1 a scene not kept
            already is then searched frame by frame while the next frame decodes, with the
            same scans.

    Raises:
        ValueError: a setting out of range.
    """

    def __init__(self, frames: FrameSource, frame_at: FrameAt, *, min_score: float = 0.8,
                 template_px: int = 24, min_width: float = 0.04, max_width: float = 0.5,
                 scale_step: float = 1.1, inner: float = 0.1,
                 search: str = "coarse-to-fine", coarse_margin: float = 0.2,
                 coarse_peaks: int = 8, threads: int = 2, grey_cache_mb: int = GREY_CACHE_MB,
                 changed_only: bool = False, frames_spec: str = "custom",
                 on_close: Callable[[], None] | None = None,
                 stream: FrameStream | None = None) -> None:
        checks = (("min_score", 0.0 < min_score <= 1.0),
                  ("search", search in SEARCHES),
                  ("coarse_margin", 0.0 <= coarse_margin < 1.0),
                  ("coarse_peaks", 1 <= coarse_peaks <= 64),
                  ("grey_cache_mb", grey_cache_mb >= 0),
                  ("threads", 1 <= threads <= 64),
                  ("template_px", 8 <= template_px <= 256),
                  ("min_width", 0.0 < min_width <= max_width),
                  ("max_width", min_width <= max_width <= 1.0),
                  ("scale_step", 1.0 < scale_step <= 2.0),
                  ("inner", 0.0 <= inner < 0.5))
        bad = [name for name, ok in checks if not ok]
        if bad:
            raise ValueError(f"InstanceMatcher: {', '.join(bad)} out of range (min_score "
                             f"{min_score!r}, template_px {template_px!r}, widths "
                             f"{min_width!r}-{max_width!r}, scale_step {scale_step!r}, "
                             f"inner {inner!r}, search {search!r} (one of "
                             f"{', '.join(SEARCHES)}), coarse_margin {coarse_margin!r}, "
                             f"coarse_peaks {coarse_peaks!r}, grey_cache_mb "
                             f"{grey_cache_mb!r}, threads {threads!r})")
        self._frames, self._frame_at, self._on_close = frames, frame_at, on_close
        self._stream = stream
        self.min_score, self.template_px = min_score, template_px
        self.min_width, self.max_width = min_width, max_width
        self.scale_step, self.inner = scale_step, inner
        self.search, self.coarse_margin, self.coarse_peaks = search, coarse_margin, coarse_peaks
        self._search = Search(min_score, min_width, max_width, scale_step, search,
                              coarse_margin, coarse_peaks)
        # Scans of the exhaustive search keep the keys they had before there was another.
        coarse = ("" if search == "exhaustive" else
                  f" coarse/2 -{coarse_margin:g} peaks {coarse_peaks} +-{REFINE_PX}px")
        #: The matcher's settings; every scan key ends with it.
        self.spec = (f"ncc grey tpl {template_px}px widths {min_width:g}-{max_width:g} "
                     f"x{scale_step:g} inner {inner:g} min {min_score:g}{coarse} "
                     f"frames[{frames_spec}]" + (f" {GATE_SPEC}" if changed_only else ""))
        self.changed_only = changed_only
        self.threads = threads
        self._threads: ThreadPoolExecutor | None = None
        self._templates: dict[str, Template | None] = {}
        self._greys: OrderedDict[str, tuple[tuple[float, np.ndarray], ...]] = OrderedDict()
        self._grey_bytes, self._grey_limit = 0, grey_cache_mb * 2**20
        self._scans: dict[tuple[str, str], SceneScan] = {}
        self._new: list[tuple[str, str]] = []
        #: Scans made in company and not asked for yet: not :meth:`new_scans` until they are.
        self._pending: dict[tuple[str, str], SceneScan] = {}
        self.cost = InstanceCost()

    def close(self) -> None:
        """Release what the frame sources hold open (see ``on_close``), and the threads;
        drop the scans made in company and never asked for (:meth:`unasked`)."""
        self.unasked()
        if self._on_close is not None:
            self._on_close()
        if self._threads is not None:
            self._threads.shutdown()
            self._threads = None

    def _pool(self) -> ThreadPoolExecutor:
        if self._threads is None:
            self._threads = ThreadPoolExecutor(self.threads, thread_name_prefix="instance")
        return self._threads

    def key_for(self, track: ObjectTrack) -> str:
        """The scan key of ``track``: its id, the template box (time and place), the
        settings."""
        box = _template_box(track)
        place = f"{box.box.x:.4f},{box.box.y:.4f},{box.box.w:.4f},{box.box.h:.4f}"
        return f"{INSTANCE_KEY_PREFIX}{track.object_id}@{box.t_s:.3f} [{place}] {self.spec}"

    def owns(self, scan: SceneScan) -> bool:
        """Whether ``scan`` was made by a matcher with these settings."""
        return is_instance_key(scan.probe_key) and scan.probe_key.endswith(self.spec)

    def preload(self, scans: Iterable[SceneScan]) -> int:
        """Take earlier scans made with these settings (others are ignored); returns how
        many were taken."""
        taken = 0
        for scan in scans:
            pair = (scan.probe_key, scan.scene_id)
            if self.owns(scan) and pair not in self._scans:
                self._scans[pair] = scan
                taken += 1
        return taken

    def new_scans(self) -> list[SceneScan]:
        """Scans made since the last call, in the order made; the caller stores them."""
        out = [self._scans[pair] for pair in self._new]
        self._new.clear()
        return out

    def seen(self, scene: Scene, track: ObjectTrack, *, target_scene: Scene,
             company: Iterable[tuple[ObjectTrack, Scene]] = ()) -> Sighting | None:
        """The best match of ``track`` (an object of ``target_scene``) in ``scene`` at or
        above ``min_score``, as a sighting of its label; None when there is none or the
        template is unusable.

        ``company``: other (track, its scene) pairs likely to be asked about ``scene`` later.
        When ``scene`` has to be searched for ``track``, it is searched for those too in the
        same pass (each frame's pyramid is built once for every template: most of a frame's
        cost), and their scans are kept aside until they are asked for: only then do they
        count as made (:meth:`new_scans`), so what is stored is what asking one pair at a
        time would have stored, and the scans are the same.

        Raises:
            ValueError: ``scene`` is the target's own scene.
            MediaError: a video cannot be decoded (raised by the frame sources).
        """
        if scene.scene_id == track.scene_id:
            raise ValueError(f"instance check of {track.object_id} asked about its own scene "
                             f"{scene.scene_id}")
        key = self.key_for(track)
        pair = (key, scene.scene_id)
        scan = self._scans.get(pair)
        if scan is not None:
            self.cost.reused += 1
        else:
            scan = self._pending.pop(pair, None)
            if scan is None:
                template = self._template(track, target_scene)
                if template is None:
                    return None
                jobs = [(key, track, template), *self._company(scene, key, company)]
                made = self._scan(scene, jobs)
                scan = made[0]
                self._pending.update(((other.probe_key, scene.scene_id), other)
                                     for other in made[1:])
            self._scans[pair] = scan
            self._new.append(pair)
        return scan.sightings[0] if scan.sightings else None

    def _company(self, scene: Scene, key: str, company: Iterable[tuple[ObjectTrack, Scene]]
                 ) -> list[tuple[str, ObjectTrack, Template]]:
        """The (key, track, template) of the ``company`` pairs not matched in ``scene`` yet
        (its own scene, an unusable template and ``key`` itself left out)."""
        jobs: dict[str, tuple[str, ObjectTrack, Template]] = {}
        for other, other_scene in company:
            other_key = self.key_for(other)
            pair = (other_key, scene.scene_id)
            if (other.scene_id == scene.scene_id or other_key == key or other_key in jobs
                    or pair in self._scans or pair in self._pending):
                continue
            template = self._template(other, other_scene)
            if template is not None:
                jobs[other_key] = (other_key, other, template)
        return list(jobs.values())

    def unasked(self) -> int:
        """Drop the scans made in company that were never asked for (they are not stored:
        asking one pair at a time would not have made them); returns how many."""
        dropped = len(self._pending)
        self.cost.unasked += dropped
        self._pending.clear()
        return dropped

    def best_in(self, image: np.ndarray, track: ObjectTrack, *, target_scene: Scene
                ) -> tuple[float, Box] | None:
        """The best score of ``track``'s template in one RGB frame and its box, at or above
        ``min_score`` or not (nothing is kept); None when the template is unusable, or when
        the coarse-to-fine search finds no place within ``coarse_margin`` of ``min_score``.
        For measuring the search (``benchmarks/instance_search.py``); :meth:`seen` is the
        check.

        Raises:
            MediaError: the target frame cannot be decoded (raised by ``frame_at``).
        """
        template = self._template(track, target_scene)
        if template is None:
            return None
        return best_match(grey_of(image), lambda: image, template, self._search)

    def _template(self, track: ObjectTrack, target_scene: Scene) -> Template | None:
        if track.object_id in self._templates:
            return self._templates[track.object_id]
        import cv2

        timed = _template_box(track)
        frame = self._frame_at(target_scene, timed.t_s)
        template = None
        if frame is not None:
            height, width = frame.image.shape[:2]
            box, trim = timed.box, self.inner
            x0, x1 = round((box.x + trim * box.w) * width), round((box.x + (1 - trim) * box.w)
                                                                  * width)
            y0, y1 = round((box.y + trim * box.h) * height), round((box.y + (1 - trim) * box.h)
                                                                   * height)
            x0, y0, x1, y1 = max(x0, 0), max(y0, 0), min(x1, width), min(y1, height)
            if x1 - x0 >= _MIN_CROP_PX and y1 - y0 >= _MIN_CROP_PX:
                rows = max(4, round(self.template_px * (y1 - y0) / (x1 - x0)))
                colour = cv2.resize(np.ascontiguousarray(frame.image[y0:y1, x0:x1]),
                                    (self.template_px, rows),
                                    interpolation=cv2.INTER_AREA).astype(np.float32)
                template = Template.from_colour(colour)
        if template is None:
            self.cost.unusable += 1
        self._templates[track.object_id] = template
        return template

    def _scan(self, scene: Scene, jobs: Sequence[tuple[str, ObjectTrack, Template]]
              ) -> list[SceneScan]:
        """Search ``scene`` for every (key, track, template) of ``jobs`` in one pass over its
        frames; their scans, in the order of ``jobs``."""
        started = time.perf_counter()
        colours: dict[float, np.ndarray] = {}
        decoding = threading.Lock()
        cols = self.template_px
        min_rows = min(template.grey[0].shape[0] for _, _, template in jobs)

        def colour_at(t_s: float) -> np.ndarray:
            with decoding:  # decoded again only when a window is to be confirmed in colour
                if not colours:
                    colours.update((f.t_s, f.image) for f in self._frames(scene))
                return colours[t_s]

        def search(item: _Item) -> tuple[float, list[tuple[float, Box] | None]]:
            t_s, grey, region, image = item
            colour = functools.partial(colour_at, t_s) if image is None else lambda: image
            # One pyramid a frame for every template (they all are ``template_px`` wide).
            pyramid = FramePyramid(grey.astype(np.float32), colour, self._search,
                                   cols=cols, min_rows=min_rows, region=region)
            return t_s, [match(pyramid, template) for _, _, template in jobs]

        if self._stream is not None and self.threads > 1 and scene.scene_id not in self._greys:
            n_frames, found_all = self._search_as_decoded(scene, search)
        else:
            greys = self._grey_frames(scene)
            gate = ChangeGate() if self.changed_only else None
            todo: list[_Item] = []
            for t_s, grey in greys:
                changed, region = _changed(gate, grey)
                if changed:
                    todo.append((t_s, grey, region, None))
            # The frames are searched on ``threads`` threads (OpenCV releases the GIL), and
            # taken in time order, so the best is the one a serial search keeps.
            found_all = (list(self._pool().map(search, todo))
                         if self.threads > 1 and len(todo) > 1 else [search(i) for i in todo])
            n_frames = len(greys)
        scans = []
        for index, (key, track, _) in enumerate(jobs):
            best: tuple[float, float, Box] | None = None
            for t_s, found_at in found_all:
                found = found_at[index]
                if found is not None and (best is None or found[0] > best[0]):
                    best = (found[0], t_s, found[1])
            sightings: tuple[Sighting, ...] = ()
            if best is not None and best[0] >= self.min_score:
                sightings = (Sighting(scene.scene_id, normalize(track.tag), min(best[0], 1.0),
                                      best[1], best[2]),)
            scans.append(SceneScan(scene.scene_id, key, n_frames, sightings))
        self.cost.pairs += len(jobs)
        self.cost.frames += len(found_all) * len(jobs)
        self.cost.seconds += time.perf_counter() - started
        return scans

    def _search_as_decoded(
        self, scene: Scene, search: Callable[[_Item], tuple[float, list[tuple[float, Box] | None]]]
    ) -> tuple[int, list[tuple[float, list[tuple[float, Box] | None]]]]:
        """Each frame of ``scene`` handed to the search threads as soon as ``stream`` has
        decoded it (with its colour image, so no thread decodes while this one does), in
        time order; the greys are kept as :meth:`_grey_frames` keeps them. Returns the
        frames decoded and what the searches found, in time order.

        Why: decoding a scene's frames was 17 % of expand's samples, every search thread
        waiting meanwhile; now a frame is searched while the next one decodes.
        """
        import cv2

        assert self._stream is not None
        gate = ChangeGate() if self.changed_only else None
        greys: list[tuple[float, np.ndarray]] = []
        futures = []
        pool = self._pool()
        for frame in self._stream(scene):
            grey = cv2.cvtColor(np.ascontiguousarray(frame.image), cv2.COLOR_RGB2GRAY)
            greys.append((frame.t_s, grey))
            changed, region = _changed(gate, grey)
            if changed:
                futures.append(pool.submit(search, (frame.t_s, grey, region, frame.image)))
        self._keep_greys(scene.scene_id, tuple(greys))
        return len(greys), [future.result() for future in futures]

    def _grey_frames(self, scene: Scene) -> tuple[tuple[float, np.ndarray], ...]:
        """``scene``'s frames as (time, grey uint8), decoded once while they fit in
        ``grey_cache_mb``."""
        import cv2

        kept = self._greys.get(scene.scene_id)
        if kept is not None:
            self._greys.move_to_end(scene.scene_id)
            return kept
        kept = tuple((f.t_s, cv2.cvtColor(np.ascontiguousarray(f.image), cv2.COLOR_RGB2GRAY))
                     for f in self._frames(scene))
        self._keep_greys(scene.scene_id, kept)
        return kept

    def _keep_greys(self, scene_id: str, kept: tuple[tuple[float, np.ndarray], ...]) -> None:
        """Keep a scene's greys while they fit in ``grey_cache_mb`` (least recently used
        dropped first)."""
        size = sum(grey.nbytes for _, grey in kept)
        if size <= self._grey_limit:
            self._greys[scene_id] = kept
            self._grey_bytes += size
            while self._grey_bytes > self._grey_limit:
                _, dropped = self._greys.popitem(last=False)
                self._grey_bytes -= sum(grey.nbytes for _, grey in dropped)


def _changed(gate: ChangeGate | None, grey: np.ndarray) -> tuple[bool, Region | None]:
    """Whether to search a scene's next grey frame, and where (None: whole); without
    ``gate``, always and whole."""
    if gate is None:
        return True, None
    region = gate.region_of(grey.astype(np.float32))
    whole = region is not None and region == (0, 0, grey.shape[1], grey.shape[0])
    return region is not None, None if whole else region


def _template_box(track: ObjectTrack) -> TimedBox:
    """The track's largest box (the earliest of equals): the most pixels to match with."""
    return max(track.boxes, key=lambda b: (b.box.w * b.box.h, -b.t_s))
