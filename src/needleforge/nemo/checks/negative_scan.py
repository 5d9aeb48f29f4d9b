"""The negative check: look hard, for one label, at a scene the tables call free of it.

Why: the representation pass runs the detector once per keyframe on the whole frame at a
confident threshold, which is right for building tracks but blind to small or brief objects
(a 40-pixel cut-out shrinks under the detector's 300x300 input until nothing is proposed).
When such a scene becomes a negative of an object question about the same label, the
benchmark's answer leaves out a true appearance: a wrong answer key. Stage 2 therefore asks
this probe, for each negative candidate of an **object** target before it enters a montage,
"is there a ``label`` here after all?", and a scene where one is seen is passed over (the
next negative is drawn) rather than answered wrongly.

The probe looks harder than the representation pass in three ways: denser frames (one at most
every ``every_s`` seconds, so brief objects are sampled; with ``gate``, only the part of each
frame that changed since the scene's earlier frames goes to the detector,
:mod:`~needleforge.nemo.checks.change_gate`), tiled detection
(:mod:`~needleforge.nemo.checks.tiles`, so small objects reach a detectable size), and a lower score
threshold (``min_score``), since a missed object costs a wrong answer while a false alarm
only costs one negative. Detections of every label are computed once per scene and cached,
so a scene serving as a negative of many montages is looked at once; the cost is paid only
for scenes that object montages would actually take. :func:`build_probe` builds it from the
``nemo`` params (``check_*``).

**Scans are kept.** What the probe saw in a scene (frames looked at, best sighting per label)
is a :class:`SceneScan` under the probe's :attr:`~TiledProbe.key` (detector, version, input
scale, frame spacing, grid, threshold). The pipeline stores scans in the ``negative_scans`` /
``negative_sightings`` tables and preloads them (:meth:`TiledProbe.preload`), so stage 3
(expand), a rerun with another seed, or a resumed flow never looks at a scene twice, and the
store shows why each negative was refused. :func:`scan_scenes` scans a video's scenes ahead
of planning, one task per video (the generate flow fans it out on its runner).
:meth:`TiledProbe.look_ahead` does the same inside one process (stage 2 from the CLI): the
scans run on worker threads, each with a probe of its own, and :meth:`TiledProbe.scan` takes
them in the order planning asks, so the scans kept are those a serial run would have made.

**The instance check** (:mod:`~needleforge.nemo.checks.instance`, ``check_instances``) rides on the
same probe: where the label is not seen, :meth:`TiledProbe.evidence` also searches the scene
for the target object's own pixels, which finds the small same-object appearances the
detector misses. Its scans (one per target and scene) are stored in the same tables under
their own keys; the scan-ahead does not make them, since they depend on the targets.
"""

from __future__ import annotations

import dataclasses
import json
import operator
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from concurrent.futures import Future
from types import TracebackType
from typing import Literal, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from needleforge.backends.base import Detector, Keyframe, RGBImage
from needleforge.backends.embedded.confirm import NEGATIVE_POSE_MIN_KEYPOINTS, POSE_MIN_KEYPOINT
from needleforge.backends.registry import Registry
from needleforge.config import NemoParams
from needleforge.nemo.ahead import WORKER_MODEL_THREADS, Workers
from needleforge.nemo.checks.change_gate import SPEC as GATE_SPEC
from needleforge.nemo.checks.change_gate import ChangeGate
from needleforge.nemo.checks.instance import InstanceCost, InstanceMatcher
from needleforge.nemo.checks.tiles import Tile, detect_tiled, tile_grid
from needleforge.nemo.targets import Target
from needleforge.nemo.video_keyframes import VERIFY_PER_SCENE, VideoKeyframes
from needleforge.records import Box, Scene, SceneScan, Sighting, Video
from needleforge.records.phrases import holds, normalize

FloatArray = npt.NDArray[np.float64]
#: A whole frame showing a body pose is a person: the looking verifier's thresholds, so the
#: probe swaps out exactly the negatives the verifier would refuse a question for.
POSE_MIN_SCORE = POSE_MIN_KEYPOINT
POSE_MIN_KEYPOINTS = NEGATIVE_POSE_MIN_KEYPOINTS

#: Frames decoded for a scene; same shape as generate's keyframe source.
FrameSource = Callable[[Scene], Sequence[Keyframe]]


@dataclasses.dataclass(frozen=True, slots=True)
class Refusal:
    """Why a scene may not be a negative of an object target: the ``label`` check saw the
    target's label there, or the ``instance`` check saw the target object itself."""

    check: Literal["label", "instance"]
    sighting: Sighting

    def describe(self) -> str:
        """One line for logs: which check, what, where, how sure."""
        return f"{self.check} check: {self.sighting.describe()}"


@dataclasses.dataclass(frozen=True, slots=True)
class _Look:
    """One scene looked at: its scan and what that cost (frames given to the detector, and
    the sum of the shares of those frames it saw)."""

    scan: SceneScan
    detected: int
    seconds: float
    area: float


@runtime_checkable
class NegativeProbe(Protocol):
    """Answers "does ``scene`` show the object target after all?" for negative candidates."""

    def evidence(self, scene: Scene, target: Target, *,
                 named: Collection[str] = ()) -> Refusal | None:
        """Why ``scene`` may not be a negative of ``target`` (the object's label, or one of
        the other ``named`` labels its question names, seen there), or None."""
        ...


@dataclasses.dataclass(slots=True)
class ProbeCost:
    """What the probe spent: scenes looked at, frames, detector calls, seconds (wall, summed
    over the worker threads when the scans were made ahead)."""

    scenes: int = 0
    frames: int = 0
    detector_calls: int = 0
    #: Frames' worth of pixels the detector saw: with the change gate, under ``frames``.
    detector_area: float = 0.0
    seconds: float = 0.0
    reused: int = 0  #: scans taken from the store (preloaded) rather than looked at again
    instances: InstanceCost | None = None  #: the instance check's, when it is on

    def describe(self) -> str:
        """One line for the CLI: what was scanned, in how long, what was reused."""
        looked = (f", the detector on {self.detector_area:.0f} frames' worth"
                  if self.detector_area else "")
        line = (f"{self.scenes} scene(s) scanned ({self.frames} frame(s){looked} in "
                f"{self.seconds:.0f} s), {self.reused} stored scan(s) reused")
        if self.instances is not None:
            i = self.instances
            line += (f"; instance check: {i.pairs} target/scene pair(s) matched "
                     f"({i.frames} frame(s) in {i.seconds:.0f} s), {i.reused} stored")
            if i.unusable:
                line += f", {i.unusable} target(s) too small or flat to search for"
        return line


class TiledProbe:
    """:class:`NegativeProbe` by tiled detection on dense frames, cached per scene.

    Args:
        detector: any detector; its own threshold should be at or below ``min_score``.
        frames: decodes a scene's frames (e.g. :class:`VideoKeyframes` with ``every_s``).
        cols, rows, overlap: the tile grid (:func:`~needleforge.nemo.checks.tiles.tile_grid`).
        min_score: a detection of the label at or above this score is a sighting.
        frames_spec: how ``frames`` samples, for :attr:`key`; by default a
            :class:`VideoKeyframes`' own :attr:`~VideoKeyframes.spec`, else ``"custom"``.
        detector_spec: names the detector and its options, for :attr:`key`; by default
            ``name@version``.
        instances: the instance check, or None for the label check alone.
        pose: keypoint scores of a whole frame (MoveNet's 17), or None. A frame with at
            least ``pose_min_keypoints`` keypoints scored >= 0.3 is a sighting of a
            ``person`` (the whole frame as its box): people a detector does not box — legs
            walking past, a back turned — still show a body pose.
        pose_min_keypoints: see ``pose``.
        pose_only: times of a scene's frames that get the pose check only, not the
            detector (e.g. :meth:`VideoKeyframes.extra_times`: the frames a verifier will be
            shown, looked at for people at 12 ms a frame instead of 0.4-0.8 s of detection).
        worker: makes a probe with the same :attr:`key` and models of its own, for
            :meth:`look_ahead` (:func:`build_probe` gives one); None: no looking ahead.
        gate: give the detector only the part of each frame that changed since the scene's
            earlier frames (:class:`~needleforge.nemo.checks.change_gate.ChangeGate`).

    Raises:
        ValueError: a bad grid or ``min_score`` outside [0, 1].
    """

    def __init__(self, detector: Detector, frames: FrameSource, *, cols: int, rows: int,
                 overlap: float, min_score: float, frames_spec: str | None = None,
                 detector_spec: str | None = None,
                 instances: InstanceMatcher | None = None,
                 pose: Callable[[RGBImage], FloatArray] | None = None,
                 pose_min_keypoints: int = POSE_MIN_KEYPOINTS,
                 pose_only: Callable[[Scene], Collection[float]] | None = None,
                 worker: Callable[[], TiledProbe] | None = None, gate: bool = False) -> None:
        tile_grid(64, 64, cols=cols, rows=rows, overlap=overlap)  # validates the grid
        if not 0.0 <= min_score <= 1.0:
            raise ValueError(f"min_score = {min_score!r} must be in [0, 1]")
        self._detector, self._frames = detector, frames
        self.cols, self.rows, self.overlap, self.min_score = cols, rows, overlap, min_score
        if frames_spec is None:
            frames_spec = frames.spec if isinstance(frames, VideoKeyframes) else "custom"
        #: Names everything that shapes a scan: scans stored under another key are not used.
        detector_spec = detector_spec or f"{detector.name}@{detector.version}"
        self.key = (f"{detector_spec} frames[{frames_spec}] "
                    f"grid {cols}x{rows}/{overlap:g} min {min_score:g}"
                    + (f" pose>={pose_min_keypoints}" if pose is not None else "")
                    + (" extras pose-only" if pose_only is not None else "")
                    + (f" {GATE_SPEC}" if gate else ""))
        self._gated = gate
        self._pose, self._pose_min, self._pose_only = pose, pose_min_keypoints, pose_only
        self._scans: dict[str, SceneScan] = {}
        self._new: list[str] = []
        self._worker = worker
        self._ahead: dict[str, Future[_Look]] = {}
        self.instances = instances
        self.cost = ProbeCost(instances=instances.cost if instances is not None else None)

    def preload(self, scans: Iterable[SceneScan]) -> int:
        """Take earlier scans of this probe (same :attr:`key`, or the instance check's
        settings; others are ignored) so they are not made again; returns how many label
        scans were taken."""
        taken = 0
        instance_scans = []
        for scan in scans:
            if scan.probe_key == self.key:
                if scan.scene_id not in self._scans:
                    self._scans[scan.scene_id] = scan
                    taken += 1
            else:
                instance_scans.append(scan)
        if self.instances is not None:
            self.instances.preload(instance_scans)
        self.cost.reused += taken
        return taken

    def new_scans(self) -> list[SceneScan]:
        """Scans made since the last call (not preloaded ones): label scans, then instance
        scans, each in the order made; the caller stores them."""
        out = [self._scans[scene_id] for scene_id in self._new]
        self._new.clear()
        if self.instances is not None:
            out.extend(self.instances.new_scans())
        return out

    def evidence(self, scene: Scene, target: Target, *,
                 named: Collection[str] = ()) -> Refusal | None:
        """Why ``scene`` may not be a negative of ``target``: the object target's label or
        one of the other ``named`` labels (what its question names: "two people and a tie")
        seen in the scene's scan, else the object itself seen (the instance check, when on);
        None when nothing was found. A scene target with nothing ``named`` is never scanned.

        Raises:
            MediaError: a video cannot be decoded. BackendError: the detector fails.
        """
        track = target.target_object
        labels = dict.fromkeys([*([track.tag] if track is not None else []), *sorted(named)])
        if not labels:
            return None
        for label in labels:
            seen = self.sighting(scene, label)
            if seen is not None:
                return Refusal("label", seen)
        if track is not None and self.instances is not None:
            itself = self.instances.seen(scene, track, target_scene=target.scene)
            if itself is not None:
                return Refusal("instance", itself)
        return None

    def sighting(self, scene: Scene, label: str) -> Sighting | None:
        """The best sighting of ``label`` (or of a label that holds it: ``tabby cat`` holds
        ``cat``) in ``scene``, or None.

        Raises:
            MediaError: the scene's video cannot be decoded (raised by the frame source).
            BackendError: the detector fails on a frame.
        """
        wanted = normalize(label)
        found = [s for s in self.scan(scene).sightings if holds((s.label,), wanted)]
        return max(found, key=lambda s: s.score, default=None)

    def scan(self, scene: Scene) -> SceneScan:
        """Everything the probe sees in ``scene`` (looked at once, then kept). A scene queued
        by :meth:`look_ahead` is taken from its worker (waiting for it when still running),
        and counts as made now: :meth:`new_scans` lists scans in the order asked for.

        Raises:
            MediaError: the scene's video cannot be decoded (raised by the frame source).
            BackendError: the detector fails on a frame.
        """
        cached = self._scans.get(scene.scene_id)
        if cached is not None:
            return cached
        ahead = self._ahead.pop(scene.scene_id, None)
        look = ahead.result() if ahead is not None and not ahead.cancelled() else \
            self._look(scene)
        self.cost.scenes += 1
        self.cost.frames += look.scan.n_frames
        self.cost.detector_calls += look.detected * self.cols * self.rows
        self.cost.detector_area += look.area
        self.cost.seconds += look.seconds
        self._scans[scene.scene_id] = look.scan
        self._new.append(scene.scene_id)
        return look.scan

    def has_scan(self, scene: Scene) -> bool:
        """Whether ``scene`` is scanned already (made here, or preloaded)."""
        return scene.scene_id in self._scans

    def look_ahead(self, scenes: Iterable[Scene], workers: Workers) -> int:
        """Queue ``scenes`` (those not scanned or queued yet) to be scanned on ``workers``,
        each worker with its own probe from ``worker``; :meth:`scan` then takes the results
        in the order it is asked. Returns how many were queued (0 without ``worker``).

        Why not scan them here: the scans are the stage's largest cost and planning asks for
        them one at a time; ahead, they run on every worker while planning goes on.
        """
        if self._worker is None:
            return 0
        queued = 0
        for scene in scenes:
            if scene.scene_id in self._scans or scene.scene_id in self._ahead:
                continue
            self._ahead[scene.scene_id] = workers.submit(
                self._worker, operator.methodcaller("look_for", scene=scene, key=self.key))
            queued += 1
        return queued

    def drop_ahead(self) -> int:
        """Forget queued scans no plan asked for (never stored: a serial run would not have
        made them); returns how many there were. Close the workers first to stop them."""
        dropped = len(self._ahead)
        self._ahead.clear()
        return dropped

    def look_for(self, *, scene: Scene, key: str) -> _Look:
        """:meth:`scan`'s work on ``scene`` for a probe whose :attr:`key` is ``key``, kept
        nowhere (a worker's job for :meth:`look_ahead`).

        Raises:
            ValueError: this probe's key is not ``key`` (it would look differently).
            MediaError, BackendError: as :meth:`scan`.
        """
        if key != self.key:
            raise ValueError(f"worker probe key {self.key!r} differs from {key!r}")
        if isinstance(self._frames, VideoKeyframes):
            self._frames.rewind()  # the scene's frames must not depend on the worker's last job
        return self._look(scene)

    def _look(self, scene: Scene) -> _Look:
        """Decode ``scene``'s frames and look at each (detector, pose): its scan."""
        started = time.perf_counter()
        best: dict[str, Sighting] = {}
        frames = self._frames(scene)
        pose_only = self._pose_only(scene) if self._pose_only is not None else ()
        detected, area = 0, 0.0
        gate = ChangeGate() if self._gated else None  # one per look: workers share nothing
        for frame in frames:
            body = self._body(scene, frame)
            if body is not None and ("person" not in best or body.score > best["person"].score):
                best["person"] = body
            if frame.t_s in pose_only:
                continue
            height, width = frame.image.shape[:2]
            x0, y0, x1, y1 = 0, 0, width, height
            if gate is not None:
                region = gate.region(frame.image)
                if region is None:
                    continue  # nothing changed since the scene's frames looked at
                x0, y0, x1, y1 = region
            detected += 1
            area += (x1 - x0) * (y1 - y0) / (width * height)
            crop = Tile(x0, y0, x1 - x0, y1 - y0, width, height)
            for det in detect_tiled(self._detector, frame.image[y0:y1, x0:x1], t_s=frame.t_s,
                                    cols=self.cols, rows=self.rows, overlap=self.overlap):
                det = dataclasses.replace(det, box=crop.to_frame(det.box))
                name = normalize(det.label)
                if det.score >= self.min_score and (name not in best
                                                    or det.score > best[name].score):
                    best[name] = Sighting(scene.scene_id, name, det.score, det.t_s, det.box)
        sightings = tuple(best[name] for name in sorted(best))
        scan = SceneScan(scene.scene_id, self.key, len(frames), sightings)
        return _Look(scan, detected, time.perf_counter() - started, area)

    def _body(self, scene: Scene, frame: Keyframe) -> Sighting | None:
        """A ``person`` sighting when the whole frame shows a body pose (see ``pose``)."""
        if self._pose is None:
            return None
        count = int((self._pose(frame.image) >= POSE_MIN_SCORE).sum())
        if count < self._pose_min:
            return None
        return Sighting(scene.scene_id, "person", min(1.0, count / 17), frame.t_s,
                        Box(0.0, 0.0, 1.0, 1.0))

    def close(self) -> None:
        """Close the frame source when it holds files open (a :class:`VideoKeyframes`)."""
        if isinstance(self._frames, VideoKeyframes):
            self._frames.close()
        if self.instances is not None:
            self.instances.close()

    def __enter__(self) -> TiledProbe:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def build_probe(
    params: NemoParams, *, videos: Sequence[Video], registry: Registry
) -> TiledProbe | None:
    """The negative check ``params`` ask for (``check_*``), or None when it is off.

    The detector is ``check_detector`` from ``registry`` with ``score_threshold =
    check_min_score`` and, when its factory takes it, ``input_scale = check_input_scale``
    (``check_detector_options`` override both); frames come from the videos' stored files, at
    most ``check_every_s`` apart and at most ``check_max_side`` pixels on their longer side;
    with ``check_pose``, the frames the verifier will be shown
    (:data:`~needleforge.nemo.video_keyframes.VERIFY_PER_SCENE` a scene) get the pose check too.
    With ``check_instances`` it also runs the instance check at ``check_instance_min_score``
    on the same frames. Use it as a context manager, or call ``close()``. Its
    :meth:`~TiledProbe.look_ahead` builds one more such probe (label check only) per worker.

    Raises:
        BackendError: an unknown detector, bad options, or a missing model file.
    """
    if not params.check_negatives:
        return None
    by_id = {v.video_id: v for v in videos}

    def worker() -> TiledProbe:
        # Label scans only (the instance check runs where the targets are).
        return _build(params, by_id, registry, for_worker=True, instances=False)

    return _build(params, by_id, registry, for_worker=False,
                  instances=params.check_instances, worker=worker)


def _build(params: NemoParams, by_id: dict[str, Video], registry: Registry, *,
           for_worker: bool, instances: bool,
           worker: Callable[[], TiledProbe] | None = None) -> TiledProbe:
    """:func:`build_probe`'s probe. ``for_worker``: a look-ahead worker's, its models on
    :data:`WORKER_MODEL_THREADS` (the workers are the parallelism; the detector's when its
    factory takes ``num_threads`` and ``check_detector_options`` do not set it)."""
    threads = WORKER_MODEL_THREADS if for_worker else None
    options: dict[str, object] = {"score_threshold": params.check_min_score}
    accepted = registry.accepts("detector", params.check_detector)
    if "input_scale" in accepted:
        options["input_scale"] = params.check_input_scale
    if for_worker and "num_threads" in accepted:
        options["num_threads"] = WORKER_MODEL_THREADS
    detector = registry.create("detector", params.check_detector,
                               **(options | dict(params.check_detector_options)))
    # Two scenes cached: the instance check looks at the scene the label scan just decoded.
    # With the pose check, the frames the verifier will be shown are decoded in the same pass
    # and looked at for people (pose only: cheap); the detector keeps to the dense frames.
    frames = VideoKeyframes(by_id, per_scene=1, every_s=params.check_every_s,
                            also_per_scene=VERIFY_PER_SCENE if params.check_pose else 0,
                            max_side=params.check_max_side, max_cached=2)
    matcher = None
    if instances:
        exact = VideoKeyframes(by_id, per_scene=1, max_side=params.check_max_side,
                               max_open=2, max_cached=1)
        # The instance check keeps to the dense frames (the extra ones are for people).
        matcher = InstanceMatcher(frames.without_extra, exact.frame_at,
                                  min_score=params.check_instance_min_score,
                                  search=params.check_instance_search,
                                  frames_spec=frames.spec_without_extra, on_close=exact.close)
    extra = dict(params.check_detector_options)
    spec = f"{detector.name}@{detector.version}" + (f" {json.dumps(extra, sort_keys=True)}"
                                                    if extra else "")
    pose = None
    if params.check_pose:
        from needleforge.backends.embedded.pose import EmbeddedPose  # a model: load lazily

        pose = (EmbeddedPose() if threads is None else EmbeddedPose(num_threads=threads)
                ).keypoint_scores
    return TiledProbe(detector, frames, cols=params.check_cols, rows=params.check_rows,
                      overlap=params.check_overlap, min_score=params.check_min_score,
                      detector_spec=spec, instances=matcher, pose=pose,
                      pose_only=frames.extra_times if pose is not None else None,
                      worker=worker, gate=params.check_changed_only)


def scan_scenes(
    params: NemoParams, *, video: Video, scenes: Sequence[Scene], registry: Registry,
    known: Iterable[SceneScan] = (),
) -> list[SceneScan]:
    """Scan ``scenes`` (all of ``video``) with the probe ``params`` ask for, ahead of
    planning; scenes in ``known`` (earlier scans of the same probe) are skipped. One call is
    one unit of work for a runner: it opens one video and builds its own detector.

    Returns the new scans ([] when ``check_negatives`` is off).

    Raises:
        ValueError: a scene of another video. MediaError, BackendError: as :meth:`TiledProbe.scan`.
    """
    strays = sorted({s.scene_id for s in scenes if s.video_id != video.video_id})
    if strays:
        raise ValueError(f"scan_scenes for video {video.video_id} got scenes of other videos: "
                         f"{strays[:5]}")
    probe = build_probe(params, videos=[video], registry=registry)
    if probe is None:
        return []
    with probe:
        probe.preload(known)
        for scene in scenes:
            probe.scan(scene)
        return probe.new_scans()
