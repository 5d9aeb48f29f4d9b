"""The negative check the ``nemo`` params ask for, and its scan of a video's scenes ahead.

:func:`build_probe` puts together the label check (:class:`~needleforge.nemo.checks.
negative_scan.TiledProbe`: the detector and its options, the dense frames, the change gate,
the pose check) and, with ``check.instances``, the instance check
(:class:`~needleforge.nemo.checks.instance.InstanceMatcher`) on the same frames.
:func:`scan_scenes` is one runner task of the generate flow: every scene of one video scanned
before stage 2 plans.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence

from needleforge.backends.base import RGBImage
from needleforge.backends.embedded import confirm
from needleforge.backends.embedded.crop_classes import IMAGENET_SPANS
from needleforge.backends.registry import Registry
from needleforge.nemo.ahead import WORKER_MODEL_THREADS
from needleforge.nemo.checks.instance import InstanceMatcher
from needleforge.nemo.checks.negative_scan import TiledProbe
from needleforge.nemo.video_keyframes import VERIFY_PER_SCENE, VideoKeyframes
from needleforge.objects.attributes import clothing_colour
from needleforge.params import NegativeCheckParams, NemoParams
from needleforge.records import Detection, Scene, SceneScan, Video
from needleforge.records.phrases import normalize


class FamilyLook:
    """The probe's second look at a faint sighting of a label that names a whole family of
    ImageNet classes (bird: 59 classes, dog: 118): the box is cut out and classified
    (:func:`~needleforge.backends.embedded.confirm.crop_mass`), and a sighting scored under
    ``below`` whose cut puts less than ``min_mass`` of its top-10 probability on the family
    is no sighting.

    Why: on real footage the SSD calls larval fish in a tank "bird" at 0.3-0.5 (boxes of
    0.1-4 % of the frame), so a cockatoo's targets lost every tank shot as a negative. The
    classifier calls those cuts nematode, hook or nail, with 0-0.19 of their mass on birds
    (18 fish sightings of corpus seed 0, session 21), while the cockatoo's whole-bird cuts
    hold 0.5-0.9. ``min_mass`` is the verifier's own floor for a bird target
    (:data:`~needleforge.backends.embedded.confirm.SPAN_MIN_MASS`): what would not be
    confirmed a bird as a target is not one in a negative either. Sightings at ``below`` or
    more are kept as they are (the verifier's ``negative_min_score``: it refuses a question
    whose negative shows one, so the probe must swap such a negative out), and so is a cut
    too small to classify: the probe stays on the side of a missed object.
    """

    def __init__(self, *, below: float = 0.5, min_mass: float = confirm.SPAN_MIN_MASS,
                 num_threads: int = 2) -> None:
        from needleforge.backends.embedded.eyes import Eyes  # a model: load lazily

        self.below, self.min_mass = below, min_mass
        self._eyes = Eyes(num_threads=num_threads)
        self.spec = f"family-look<{below:g}@{min_mass:g}"

    def __call__(self, image: RGBImage, found: Detection) -> bool:
        """Whether ``found`` stays a sighting."""
        label = normalize(found.label)
        if label not in IMAGENET_SPANS or found.score >= self.below:
            return True
        mass = confirm.crop_mass(image, found.box, self._eyes.indices[label],
                                 probabilities=self._eyes.probabilities)
        return mass is None or mass >= self.min_mass


def build_probe(
    params: NemoParams, *, videos: Sequence[Video], registry: Registry
) -> TiledProbe | None:
    """The negative check ``params`` ask for (``params.check``), or None when it is off.

    The detector is ``check.detector`` from ``registry`` with ``score_threshold =
    check.min_score`` and, when its factory takes it, ``input_scale = check.input_scale``
    (``check.detector_options`` override both); frames come from the videos' stored files, at
    most ``check.every_s`` apart and at most ``check.max_side`` pixels on their longer side;
    with ``check.pose``, the frames the verifier will be shown
    (:data:`~needleforge.nemo.video_keyframes.VERIFY_PER_SCENE` a scene) get the pose check too.
    With ``check.instances`` it also runs the instance check at ``check.instance_min_score``
    on the same frames. Use it as a context manager, or call ``close()``. Its
    :meth:`~TiledProbe.look_ahead` builds one more such probe (label check only) per worker.

    Raises:
        BackendError: an unknown detector, bad options, or a missing model file.
    """
    check = params.check
    if not check.negatives:
        return None
    by_id = {v.video_id: v for v in videos}

    def worker() -> TiledProbe:
        # Label scans only (the instance check runs where the targets are).
        return _build(check, by_id, registry, for_worker=True, instances=False)

    return _build(check, by_id, registry, for_worker=False, instances=check.instances,
                  worker=worker)


def _build(check: NegativeCheckParams, by_id: dict[str, Video], registry: Registry, *,
           for_worker: bool, instances: bool,
           worker: Callable[[], TiledProbe] | None = None) -> TiledProbe:
    """:func:`build_probe`'s probe. ``for_worker``: a look-ahead worker's, its models on
    :data:`WORKER_MODEL_THREADS` (the workers are the parallelism; the detector's when its
    factory takes ``num_threads`` and ``check.detector_options`` do not set it)."""
    threads = WORKER_MODEL_THREADS if for_worker else None
    options: dict[str, object] = {"score_threshold": check.min_score}
    accepted = registry.accepts("detector", check.detector)
    if "input_scale" in accepted:
        options["input_scale"] = check.input_scale
    if for_worker and "num_threads" in accepted:
        options["num_threads"] = WORKER_MODEL_THREADS
    detector = registry.create("detector", check.detector,
                               **(options | dict(check.detector_options)))
    # Two scenes cached: the instance check looks at the scene the label scan just decoded.
    # With the pose check, the frames the verifier will be shown are decoded in the same pass
    # and looked at for people (pose only: cheap); the detector keeps to the dense frames.
    frames = VideoKeyframes(by_id, per_scene=1, every_s=check.every_s,
                            also_per_scene=VERIFY_PER_SCENE if check.pose else 0,
                            max_side=check.max_side, max_cached=2)
    matcher = None
    if instances:
        exact = VideoKeyframes(by_id, per_scene=1, max_side=check.max_side,
                               max_open=2, max_cached=1)
        # The instance check keeps to the dense frames (the extra ones are for people).
        matcher = InstanceMatcher(frames.without_extra, exact.frame_at,
                                  min_score=check.instance_min_score,
                                  search=check.instance_search,
                                  changed_only=check.changed_only,
                                  frames_spec=frames.spec_without_extra, on_close=exact.close,
                                  stream=frames.stream_without_extra)
    extra = dict(check.detector_options)
    spec = f"{detector.name}@{detector.version}" + (f" {json.dumps(extra, sort_keys=True)}"
                                                    if extra else "")
    look = FamilyLook(num_threads=threads or 2) if check.family_look else None
    pose = None
    if check.pose:
        from needleforge.backends.embedded.pose import EmbeddedPose  # a model: load lazily

        pose = (EmbeddedPose() if threads is None else EmbeddedPose(num_threads=threads)
                ).keypoint_scores
    return TiledProbe(detector, frames, cols=check.cols, rows=check.rows,
                      overlap=check.overlap, min_score=check.min_score,
                      detector_spec=spec, instances=matcher, pose=pose,
                      pose_only=frames.extra_times if pose is not None else None,
                      worker=worker, gate=check.changed_only,
                      attire=clothing_colour if check.attire else None,
                      second_look=look, second_look_spec=look.spec if look else "")


def scan_scenes(
    params: NemoParams, *, video: Video, scenes: Sequence[Scene], registry: Registry,
    known: Iterable[SceneScan] = (),
) -> list[SceneScan]:
    """Scan ``scenes`` (all of ``video``) with the probe ``params`` ask for, ahead of
    planning; scenes in ``known`` (earlier scans of the same probe) are skipped. One call is
    one unit of work for a runner: it opens one video and builds its own detector.

    Returns the new scans ([] when ``check.negatives`` is off).

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
