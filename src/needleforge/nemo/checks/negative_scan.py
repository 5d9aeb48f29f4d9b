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
for scenes that object montages would actually take.
:func:`~needleforge.nemo.checks.build.build_probe` builds it from the ``nemo`` params
(``check``).

**Scans are kept.** What the probe saw in a scene (frames looked at, best sighting per label)
is a :class:`SceneScan` under the probe's :attr:`~TiledProbe.key` (detector, version, input
scale, frame spacing, grid, threshold). The pipeline stores scans in the ``negative_scans`` /
``negative_sightings`` tables and preloads them (:meth:`TiledProbe.preload`), so stage 3
(expand), a rerun with another seed, or a resumed flow never looks at a scene twice, and the
store shows why each negative was refused. :func:`~needleforge.nemo.checks.build.scan_scenes`
scans a video's scenes ahead of planning, one task per video (the generate flow fans it out
on its runner).
:meth:`TiledProbe.look_ahead` does the same inside one process (stage 2 from the CLI): the
scans run on worker threads, each with a probe of its own, and :meth:`TiledProbe.scan` takes
them in the order planning asks, so the scans kept are those a serial run would have made.

**The instance check** (:mod:`~needleforge.nemo.checks.instance`, ``check.instances``) rides on the
same probe: where the label is not seen, :meth:`TiledProbe.evidence` also searches the scene
for the target object's own pixels, which finds the small same-object appearances the
detector misses. Its scans (one per target and scene) are stored in the same tables under
their own keys; the scan-ahead does not make them, since they depend on the targets. A probe
told which object targets will ask about which scenes (:meth:`TiledProbe.expect`, what
expand does) searches a scene for all of them in one pass; and it can say what its label
scans already refuse without looking (:meth:`TiledProbe.label_refusal`), so expand refuses a
group that cannot be planned before checking anything (:func:`~needleforge.nemo.grow.
fill_bound`).
"""

from __future__ import annotations

import dataclasses
import operator
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from concurrent.futures import Future
from types import TracebackType

from needleforge.backends.base import Detector, FloatArray, Keyframe, RGBImage
from needleforge.backends.embedded.confirm import NEGATIVE_POSE_MIN_KEYPOINTS, POSE_MIN_KEYPOINT
from needleforge.nemo.ahead import Workers
from needleforge.nemo.checks.change_gate import SPEC as GATE_SPEC
from needleforge.nemo.checks.change_gate import ChangeGate
from needleforge.nemo.checks.instance import FrameSource, InstanceMatcher

# Re-exported: nemo/grow.py imports these two from here (another change is rewriting it).
from needleforge.nemo.checks.negative_probe import KnowsLabels as KnowsLabels
from needleforge.nemo.checks.negative_probe import NegativeProbe as NegativeProbe
from needleforge.nemo.checks.negative_probe import ProbeCost, Refusal
from needleforge.nemo.checks.tiles import Tile, detect_tiled, tile_grid
from needleforge.nemo.targets import Target
from needleforge.nemo.video_keyframes import VideoKeyframes
from needleforge.records import Box, Detection, ObjectTrack, Scene, SceneScan, Sighting
from needleforge.records.attire import UNKNOWN, could_be, sighting_label, split_sighting_label
from needleforge.records.phrases import holds, is_person, normalize

#: A whole frame showing a body pose is a person: the looking verifier's thresholds, so the
#: probe swaps out exactly the negatives the verifier would refuse a question for.
POSE_MIN_SCORE = POSE_MIN_KEYPOINT
POSE_MIN_KEYPOINTS = NEGATIVE_POSE_MIN_KEYPOINTS

#: The clothing colour of the person in a box of a frame ("" when it cannot be measured).
AttireColour = Callable[[RGBImage, Box], str]
#: Part of :attr:`TiledProbe.key` when people's clothing colours are recorded.
ATTIRE_SPEC = "attire"
#: Whether a detection on a frame is kept as a sighting (:class:`TiledProbe`'s ``second_look``).
SecondLook = Callable[[RGBImage, Detection], bool]


@dataclasses.dataclass(frozen=True, slots=True)
class _Look:
    """One scene looked at: its scan and what that cost (frames given to the detector, and
    the sum of the shares of those frames it saw)."""

    scan: SceneScan
    detected: int
    seconds: float
    area: float


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
            :meth:`look_ahead` (:func:`~needleforge.nemo.checks.build.build_probe` gives one); None:
            no looking ahead.
        gate: give the detector only the part of each frame that changed since the scene's
            earlier frames (:class:`~needleforge.nemo.checks.change_gate.ChangeGate`).
        attire: measures the clothing colour of each person the detector boxes; each
            colour seen is kept as a sighting of its own (``person~black``; ``person~`` for
            a person it cannot measure, and for a body pose in a scene where the detector
            boxed nobody), so :meth:`evidence` can let a negative with people in other
            clothes serve "the person in black" (:mod:`needleforge.records.attire`).
        second_look: asked about each detection at ``min_score`` or more; one it answers
            False of is no sighting (:class:`~needleforge.nemo.checks.build.FamilyLook`: a
            faint "bird" that the ImageNet classifier calls a fish). ``second_look_spec``
            names it in :attr:`key`.

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
                 worker: Callable[[], TiledProbe] | None = None, gate: bool = False,
                 attire: AttireColour | None = None, second_look: SecondLook | None = None,
                 second_look_spec: str = "second-look") -> None:
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
                    + (f" {GATE_SPEC}" if gate else "")
                    + (f" {ATTIRE_SPEC}" if attire is not None else "")
                    + (f" {second_look_spec}" if second_look is not None else ""))
        self._gated = gate
        self._second_look = second_look
        self._attire = attire
        self._pose, self._pose_min, self._pose_only = pose, pose_min_keypoints, pose_only
        self._scans: dict[str, SceneScan] = {}
        self._new: list[str] = []
        self._worker = worker
        self._ahead: dict[str, Future[_Look]] = {}
        self.instances = instances
        #: Object targets that may be asked about each scene (:meth:`expect`), by scene id.
        self._expected: dict[str, dict[str, Target]] = {}
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

    def evidence(self, scene: Scene, target: Target, *, named: Collection[str] = (),
                 attire: Mapping[str, str] | None = None) -> Refusal | None:
        """Why ``scene`` may not be a negative of ``target``: the object target's label or
        one of the other ``named`` labels (what its question names: "two people and a tie")
        seen in the scene's scan, else the object itself seen (the instance check, when on);
        None when nothing was found. A scene target with nothing ``named`` is never scanned.
        A label in ``attire`` ("the person in black": ``{"person": "black"}``) refuses only
        for a person seen whose clothing could be the described colour, or could not be
        measured; a probe without ``attire`` measurement refuses on the label alone.

        Raises:
            MediaError: a video cannot be decoded. BackendError: the detector fails.
        """
        track = target.target_object
        labels = dict.fromkeys([*([track.tag] if track is not None else []), *sorted(named)])
        if not labels:
            return None
        qualified = {normalize(k): v for k, v in (attire or {}).items()}
        for label in labels:
            colour = qualified.get(normalize(label)) if self._attire is not None else None
            seen = (self.sighting(scene, label) if colour is None
                    else self._dressed_alike(scene, label, colour))
            if seen is not None:
                return Refusal("label", seen)
        if track is not None and self.instances is not None:
            itself = self.instances.seen(scene, track, target_scene=target.scene,
                                         company=self._company(scene, track))
            if itself is not None:
                return Refusal("instance", itself)
        return None

    def expect(self, target: Target, scenes: Iterable[Scene]) -> int:
        """Say that object target ``target`` may be asked about ``scenes`` (its own scene is
        left out); returns how many were noted (0 without the instance check, or for a scene
        target).

        Why: the instance check's cost is mostly building each frame's pyramid, the same for
        every target. When a scene must be searched for one target, it is then searched for
        every target expected there whose label the scene's scan did not see (those are
        refused by the label check first) in the same pass; their scans wait until asked
        (:meth:`InstanceMatcher.seen`), so the scans and what is stored do not change.
        """
        track = target.target_object
        if self.instances is None or track is None:
            return 0
        noted = 0
        for scene in scenes:
            if scene.scene_id != track.scene_id:
                self._expected.setdefault(scene.scene_id, {})[track.object_id] = target
                noted += 1
        return noted

    def _company(self, scene: Scene, track: ObjectTrack) -> list[tuple[ObjectTrack, Scene]]:
        """The other targets expected in ``scene`` whose label its scan did not see."""
        expected = self._expected.get(scene.scene_id)
        if not expected:
            return []
        return [(other, target.scene) for target in expected.values()
                if (other := target.target_object) is not None
                and other.object_id != track.object_id
                and self.sighting(scene, other.tag) is None]

    def label_refusal(self, scene: Scene, target: Target) -> Refusal | None:
        """The label check's refusal of ``scene`` as a negative of object target ``target``
        from scans made or preloaded already; None when the scene is not scanned yet (it is
        not looked at here) or its scan does not show the label."""
        track = target.target_object
        if track is None or scene.scene_id not in self._scans:
            return None
        seen = self.sighting(scene, track.tag)
        return None if seen is None else Refusal("label", seen)

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

    def _dressed_alike(self, scene: Scene, label: str, colour: str) -> Sighting | None:
        """The best sighting of a ``label`` whose clothing could be ``colour`` (or could not
        be measured), from the scan's per-colour sightings; None when every person seen
        wears something else."""
        wanted = normalize(label)
        found = [s for s in self.scan(scene).sightings
                 if (parts := split_sighting_label(s.label)) is not None
                 and holds((parts[0],), wanted) and could_be(colour, parts[1])]
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
        bodies: list[Sighting] = []
        for frame in frames:
            body = self._body(scene, frame)
            if body is not None:
                bodies.append(body)
                if "person" not in best or body.score > best["person"].score:
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
                if det.score >= self.min_score and self._second_look is not None \
                        and not self._second_look(frame.image, det):
                    continue
                name = normalize(det.label)
                if det.score >= self.min_score and (name not in best
                                                    or det.score > best[name].score):
                    best[name] = Sighting(scene.scene_id, name, det.score, det.t_s, det.box)
                if self._attire is not None and det.score >= self.min_score \
                        and is_person(name):
                    _keep(best, Sighting(scene.scene_id, sighting_label(
                        name, self._attire(frame.image, det.box)), det.score, det.t_s,
                        det.box))
        if self._attire is not None and bodies and not any(
                (parts := split_sighting_label(k)) is not None and is_person(parts[0])
                for k in best):
            # A pose where the detector boxed nobody: a person whose clothes are not known.
            for body in bodies:
                _keep(best, dataclasses.replace(body, label=sighting_label("person", UNKNOWN)))
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


def _keep(best: dict[str, Sighting], sighting: Sighting) -> None:
    """Keep ``sighting`` when it is the best of its label so far."""
    if sighting.label not in best or sighting.score > best[sighting.label].score:
        best[sighting.label] = sighting
