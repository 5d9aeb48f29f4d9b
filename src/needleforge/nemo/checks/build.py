"""The negative check the ``nemo`` params ask for, and its scan of a video's scenes ahead.

:func:`build_probe` puts together the label check (:class:`~needleforge.nemo.checks.
negative_scan.TiledProbe`: the detector and its options, the dense frames, the change gate,
the pose check) and, with ``check_instances``, the instance check
(:class:`~needleforge.nemo.checks.instance.InstanceMatcher`) on the same frames.
:func:`scan_scenes` is one runner task of the generate flow: every scene of one video scanned
before stage 2 plans.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence

from needleforge.backends.registry import Registry
from needleforge.config import NemoParams
from needleforge.nemo.ahead import WORKER_MODEL_THREADS
from needleforge.nemo.checks.instance import InstanceMatcher
from needleforge.nemo.checks.negative_scan import TiledProbe
from needleforge.nemo.video_keyframes import VERIFY_PER_SCENE, VideoKeyframes
from needleforge.objects.attributes import clothing_colour
from needleforge.records import Scene, SceneScan, Video


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
                                  changed_only=params.check_changed_only,
                                  frames_spec=frames.spec_without_extra, on_close=exact.close,
                                  stream=frames.stream_without_extra)
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
                      worker=worker, gate=params.check_changed_only,
                      attire=clothing_colour if params.check_attire else None)


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
