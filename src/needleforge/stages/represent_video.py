"""One video represented: the video in, its scene and object tables out (NeMo Sec. 3.2.1).

For each video: PySceneDetect cuts it into scenes that tile it, the subtitle sidecar is
attached to the scenes it overlaps, keyframes are sampled in one sequential decode, and every
keyframe goes through the detector (and a few per scene through the tagger); per scene the
detections become tracked objects — the tagger taking a second look at the crops of those whose
word it can judge — with attributes and referring expressions. The result is one
:class:`~needleforge.records.Representation`, which the caller stores as a unit.

Memory stays flat in the video's length: keyframes are held one scene at a time.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Protocol, TypeVar

from needleforge.backends import Detector, Keyframe, Registry, Tagger, TextReader
from needleforge.backends.base import RGBImage
from needleforge.backends.embedded.pose import EmbeddedPose
from needleforge.errors import BackendError, MediaError, SubtitleError
from needleforge.objects import build_objects, scene_tags
from needleforge.objects.tracker import usable
from needleforge.params import ObjectParams, SceneParams
from needleforge.records import (
    Detection,
    ObjectTrack,
    Representation,
    Scene,
    SceneTag,
    TagScore,
    Video,
)
from needleforge.records.phrases import is_person
from needleforge.scenes import (
    attach_subtitles,
    closeup,
    colour_cast,
    detect_scenes,
    onscreen,
    read_subtitles,
    sample_keyframes,
    walking,
)
from needleforge.scenes.bodies import BODY_TAG, body_share
from needleforge.scenes.palette import (
    IN_COLOUR,
    MEASURE_NAME,
    MEASURE_VERSION,
    in_colour_scenes,
    shot_words,
    shows_colour,
)
from needleforge.scenes.subtitles import Cue

#: Keyframes of a scene with a person track that the pose model looks at for a close-up.
CLOSEUP_KEYFRAMES = 3


@dataclasses.dataclass(frozen=True, slots=True)
class Models:
    """The model backends one worker uses (backends are not thread-safe: one set per worker)."""

    detector: Detector
    tagger: Tagger
    text_reader: TextReader | None = None
    pose: EmbeddedPose | None = None

    def fingerprint(self) -> list[str]:
        out = [f"{self.detector.name}@{self.detector.version}",
               f"{self.tagger.name}@{self.tagger.version}",
               f"{MEASURE_NAME}@{MEASURE_VERSION}",
               f"{colour_cast.MEASURE_NAME}@{colour_cast.MEASURE_VERSION}",
               f"{walking.MEASURE_NAME}@{walking.MEASURE_VERSION}"]
        if self.pose is not None:
            out.append(f"{self.pose.name}@{self.pose.version}")
            out.append(f"{closeup.MEASURE_NAME}@{closeup.MEASURE_VERSION}")
        if self.text_reader is not None:
            out.append(f"{self.text_reader.name}@{self.text_reader.version}")
            out.append(f"{onscreen.RULE_NAME}@{onscreen.RULE_VERSION}")
        return out


#: Scenes a video may have waiting for a scene runner at once (their keyframes are held).
SCENES_AHEAD = 4
_S = TypeVar("_S")


class SceneRunner(Protocol):
    """Runs a scene's model work on a thread with models of its own (a pool of them), so
    that one long video keeps every worker busy (:func:`represent_video`)."""

    def submit(self, work: Callable[[Models], _S]) -> Future[_S]:
        """Start ``work(models)`` on a thread of the runner; its future."""
        ...


def load_models(params: ObjectParams, *, registry: Registry, threads: int | None = None
                ) -> Models:
    """Create the detector, tagger (and OCR reader when ``params.ocr``) named in params.

    ``threads`` sets the detector's, tagger's and OCR reader's ``num_threads`` where their
    factories take it and ``*_options`` do not set it (one model set per worker thread: the
    workers are then the parallelism; the outputs do not depend on it). The OCR reader once
    kept onnxruntime's 2 threads on each worker: 4 threads on 2 cores, each spinning while it
    waited, so reading cost twice the CPU seconds for the same lines.

    Raises :class:`~needleforge.errors.BackendError` listing the known names for an unknown
    one, or naming the missing model file.
    """
    def options(family: str, name: str, given: dict[str, object]) -> dict[str, object]:
        if threads is None or "num_threads" in given or \
                "num_threads" not in registry.accepts(family, name):
            return dict(given)
        return {**given, "num_threads": threads}

    detector = registry.create("detector", params.detector, **options(
        "detector", params.detector,
        {"score_threshold": params.min_detection_score, **params.detector_options}))
    tagger = registry.create("tagger", params.tagger,
                             **options("tagger", params.tagger, dict(params.tagger_options)))
    reader = registry.create("text_reader", "embedded", **options(
        "text_reader", "embedded", {"det_limit_side_len": onscreen.READ_SIDE_PX})
                             ) if params.ocr else None
    pose = EmbeddedPose(num_threads=threads or 1) if params.pose_people else None
    return Models(detector=detector, tagger=tagger, text_reader=reader, pose=pose)


def _digest(payload: object) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:12]


def config_hash(
    scene_params: SceneParams, object_params: ObjectParams | None, models: Models | None
) -> str:
    """Fingerprint of what shapes a representation: ``<scenes part>-<objects part>``.

    The objects part is ``none`` for a scenes-only run, so a later objects run can tell the
    stored scenes are still current.
    """
    scenes_part = _digest(scene_params.model_dump(mode="json"))
    if object_params is None or models is None:
        return f"{scenes_part}-none"
    objects_part = _digest({"objects": object_params.model_dump(mode="json"),
                            "models": models.fingerprint()})
    return f"{scenes_part}-{objects_part}"


def represent_video(
    video: Video,
    *,
    scene_params: SceneParams,
    object_params: ObjectParams | None = None,
    models: Models | None = None,
    scenes: Sequence[Scene] | None = None,
    scenes_on: SceneRunner | None = None,
) -> Representation:
    """Scenes, tags and objects of one ingested video.

    Without ``models`` only scenes are made (the ``scenes`` step). With ``scenes`` given (the
    ``objects`` step, from stored scenes) shot detection is skipped. With ``scenes_on`` each
    scene's model work runs there, on models of its threads (``models`` then only names the
    backends in the config hash), up to :data:`SCENES_AHEAD` scenes ahead of the decode; the
    result is the one this thread would make, in the same order. A decode that fails
    partway keeps the scenes (and their objects) up to the failure, with ``decode_error`` set.
    Raises :class:`~needleforge.errors.MediaError` when the file cannot be opened at all and
    :class:`~needleforge.errors.SubtitleError` (naming the line) for a malformed sidecar.
    """
    path = Path(video.stored_path)
    if not path.is_file():  # the store reads its paths back absolute: name the one tried
        raise MediaError(f"{path}: the stored copy of video {video.video_id} is not there; "
                         "ingest its manifest again to store it anew")
    errors: list[str] = []
    detector_name = "stored scenes"
    if scenes is None:
        detection = detect_scenes(path, video_id=video.video_id, params=scene_params,
                                  duration_s=video.media.duration_s)
        scenes = list(detection.scenes)
        detector_name = detection.detector
        errors += [detection.decode_error] if detection.decode_error else []
        if video.subtitle_path:
            scenes = attach_subtitles(scenes, _sidecar_cues(Path(video.subtitle_path)))
    tags: list[SceneTag] = []
    objects: list[ObjectTrack] = []
    if models is not None and object_params is not None and scenes:
        tags, objects, error = _represent_objects(path, scenes, scene_params=scene_params,
                                                  object_params=object_params, models=models,
                                                  scenes_on=scenes_on)
        errors += [error] if error else []
    return Representation(
        video_id=video.video_id, scenes=tuple(scenes), tags=tuple(tags), objects=tuple(objects),
        scene_detector=detector_name,
        config_hash=config_hash(scene_params, object_params, models),
        decode_error="; ".join(errors) if errors else None,
    )


def _sidecar_cues(path: Path) -> list[Cue]:
    """The cues of a video's stored sidecar; an error says it is the subtitle sidecar.

    The stored copy is named by its hash, so the caller names the video's source file too.

    Raises:
        SubtitleError: the sidecar is unreadable or malformed (file and line named).
    """
    try:
        return read_subtitles(path)
    except SubtitleError as err:
        raise SubtitleError(f"subtitle sidecar {err}") from None


def _represent_objects(
    path: Path, scenes: Sequence[Scene], *, scene_params: SceneParams,
    object_params: ObjectParams, models: Models, scenes_on: SceneRunner | None = None,
) -> tuple[list[SceneTag], list[ObjectTrack], str | None]:
    tags: dict[str, list[SceneTag]] = {}
    objects: list[ObjectTrack] = []
    in_colour: dict[str, bool] = {}
    sampler = sample_keyframes(
        path, scenes, fps=scene_params.keyframe_fps,
        max_per_scene=scene_params.keyframe_max_per_scene,
        offset_s=scene_params.keyframe_offset_s, max_side_px=scene_params.keyframe_max_side_px,
    )
    bounds = {s.scene_id: (s.start_s, s.end_s) for s in scenes}
    waiting: deque[tuple[str, Future[tuple[list[SceneTag], list[ObjectTrack]]]]] = deque()

    def collect(scene_id: str, result: tuple[list[SceneTag], list[ObjectTrack]]) -> None:
        tags[scene_id], scene_objects = result
        objects.extend(scene_objects)

    def drain(keep: int) -> None:
        """Collect the oldest waiting scenes, in order, until ``keep`` wait."""
        while len(waiting) > keep:
            scene_id, future = waiting.popleft()
            collect(scene_id, future.result())

    try:
        for scene_id, frames in _by_scene(sampler):
            start_s, end_s = bounds[scene_id]
            work = functools.partial(_scene_work, scene_id, frames, (start_s, end_s),
                                     object_params)
            in_colour[scene_id] = shows_colour([f.image for f in frames])
            if scenes_on is None:
                collect(scene_id, work(models))
                continue
            waiting.append((scene_id, scenes_on.submit(work)))
            drain(SCENES_AHEAD)
        drain(0)
    finally:
        sampler.close()
        for _, future in waiting:
            future.cancel()
    # A colour shot among black-and-white ones: told apart at a glance (scenes.palette).
    shots = {scene_id: ([t.tag for t in tags[scene_id]], in_colour[scene_id])
             for scene_id in tags}
    for scene_id in in_colour_scenes(shots):
        tags[scene_id].append(SceneTag(scene_id, IN_COLOUR, 1.0, MEASURE_NAME, MEASURE_VERSION))
    return [t for scene_tags_ in tags.values() for t in scene_tags_], objects, \
        sampler.decode_error


def _by_scene(keyframes: Iterable[Keyframe]) -> Iterator[tuple[str, list[Keyframe]]]:
    """Group the (scene-ordered) keyframe stream into one list per scene."""
    current: list[Keyframe] = []
    for frame in keyframes:
        if current and frame.scene_id != current[0].scene_id:
            yield current[0].scene_id, current
            current = []
        current.append(frame)
    if current:
        yield current[0].scene_id, current


def _scene_work(scene_id: str, frames: Sequence[Keyframe], span: tuple[float, float],
                params: ObjectParams, models: Models) -> tuple[list[SceneTag], list[ObjectTrack]]:
    """:func:`_represent_scene` with ``models`` last (a scene runner's job)."""
    return _represent_scene(scene_id, frames, start_s=span[0], end_s=span[1], params=params,
                            models=models)


def _represent_scene(
    scene_id: str, frames: Sequence[Keyframe], *, start_s: float, end_s: float,
    params: ObjectParams, models: Models,
) -> tuple[list[SceneTag], list[ObjectTrack]]:
    detections: list[tuple[float, list[Detection]]] = []
    for frame in frames:
        found = _backend_call(models.detector, Detection, scene_id, frame.t_s,
                              functools.partial(models.detector.detect, frame.image,
                                                t_s=frame.t_s))
        detections.append((frame.t_s, [d for d in found if usable(d, params=params)]))
    tagged = _spread(len(frames), params.tag_keyframes_per_scene)
    tag_lists: list[list[TagScore]] = [
        _backend_call(models.tagger, TagScore, scene_id, frames[i].t_s,
                      functools.partial(models.tagger.tag, frames[i].image))
        for i in tagged]
    objects = build_objects(
        [(f.t_s, f.image) for f in frames], detections, scene_id=scene_id,
        scene_start_s=start_s, scene_end_s=end_s, params=params,
        backend=models.detector.name, model_version=models.detector.version,
        crop_tagger=functools.partial(_tag_crop, models.tagger, scene_id),
    )
    merged = scene_tags(tag_lists, objects, min_score=params.min_tag_score,
                        min_keyframes=params.min_tag_keyframes,
                        min_label_keyframes=params.min_label_keyframes)
    tags = [SceneTag(scene_id, t.tag, t.score, *_tag_source(t, objects, models=models,
                                                             params=params)) for t in merged]
    # Whole-shot words measured on the pixels (black-and-white footage, a picture mostly one
    # colour): no model's guess.
    tags += [SceneTag(scene_id, word, 1.0, MEASURE_NAME, MEASURE_VERSION)
             for word in shot_words([f.image for f in frames])]
    tags += [SceneTag(scene_id, word, share, colour_cast.MEASURE_NAME,
                      colour_cast.MEASURE_VERSION)
             for word, share in colour_cast.cast_tags([f.image for f in frames])]
    if models.text_reader is not None:
        tags += _ocr_tags(scene_id, frames, models.text_reader)
    if models.pose is not None:
        tags += _pose_tags(scene_id, frames, models.pose,
                           people=any(is_person(o.tag) for o in objects))
    # An action read off the person tracks: someone walking across a still shot.
    tags += [SceneTag(scene_id, word, score, walking.MEASURE_NAME, walking.MEASURE_VERSION)
             for word, score in walking.walking_tags(objects, [f.t_s for f in frames],
                                                     [f.image for f in frames])]
    return tags, objects


def _pose_tags(scene_id: str, frames: Sequence[Keyframe], pose: EmbeddedPose, *,
               people: bool) -> list[SceneTag]:
    """What the body keypoints say. With no person track (``people`` False), a
    :data:`~needleforge.scenes.bodies.BODY_TAG` when most keyframes show a body pose (a person
    the detector did not box: :mod:`needleforge.scenes.bodies`), read on every keyframe;
    else on :data:`CLOSEUP_KEYFRAMES` of them, spread out. From the same keypoints, a
    close-up of a face and the largest face seen (:mod:`needleforge.scenes.closeup`)."""
    looked = (list(frames) if not people
              else [frames[i] for i in _spread(len(frames), CLOSEUP_KEYFRAMES)])
    points = [pose.keypoints(f.image) for f in looked]
    tags: list[SceneTag] = []
    share = None if people else body_share([p[:, 2] for p in points])
    if share is not None:
        tags.append(SceneTag(scene_id, BODY_TAG, share, pose.name, pose.version))
    if looked:
        height, width = looked[0].image.shape[:2]
        tags += [SceneTag(scene_id, word, score, closeup.MEASURE_NAME, closeup.MEASURE_VERSION)
                 for word, score in closeup.scene_tags(points, aspect=height / width)]
    return tags


def _tag_source(tag: TagScore, objects: Sequence[ObjectTrack], *, models: Models,
                params: ObjectParams) -> tuple[str, str]:
    """Which model a merged scene tag comes from, as ``(backend, model_version)``: the
    detector when one of the scene's tracks gives the label at the kept score, else the
    tagger (a tag both give keeps the larger score, so the one that gave it is named)."""
    for obj in objects:
        if (len(obj.boxes) >= params.min_label_keyframes and obj.mean_score == tag.score
                and " ".join(obj.tag.split()).lower() == tag.tag):
            return models.detector.name, models.detector.version
    return models.tagger.name, models.tagger.version


def _tag_crop(tagger: Tagger, scene_id: str, crop: RGBImage, t_s: float) -> list[TagScore]:
    """The tagger's answer for one object's crop (the second look of
    :mod:`needleforge.objects.settle`), checked like every backend answer."""
    return _backend_call(tagger, TagScore, scene_id, t_s, functools.partial(tagger.tag, crop))


_R = TypeVar("_R", Detection, TagScore)


def _backend_call(backend: Detector | Tagger, kind: type[_R], scene_id: str, t_s: float,
                  call: Callable[[], object]) -> list[_R]:
    """``call()``'s result, checked to be a list of ``kind`` records.

    A backend (possibly a user's plugin or a remote model) that answers garbage must fail
    this video with its name, not crash the stage for every other video.

    Raises:
        BackendError: naming the backend, the scene and the keyframe time, when the call
            raises ``ValueError``/``TypeError`` (e.g. a record with a NaN score) or returns
            something other than a list of ``kind``.
    """
    label = f"{backend.name}@{backend.version} on scene {scene_id} at {t_s:.3f} s"
    try:
        result = call()
    except (ValueError, TypeError) as err:
        raise BackendError(f"backend {label} failed: {err}") from None
    if not isinstance(result, list | tuple) or not all(isinstance(r, kind) for r in result):
        got = type(result).__name__ if not isinstance(result, list | tuple) else (
            sorted({type(r).__name__ for r in result if not isinstance(r, kind)}))
        raise BackendError(f"backend {label} returned garbage ({got}); expected a list of "
                           f"{kind.__name__}")
    return list(result)


def _spread(n: int, k: int | None) -> list[int]:
    """``k`` indices spread evenly over ``range(n)`` (centres of k equal parts); all if None."""
    if k is None or k >= n:
        return list(range(n))
    return sorted({int((i + 0.5) * n / k) for i in range(k)})


def _ocr_tags(scene_id: str, frames: Sequence[Keyframe], reader: TextReader) -> list[SceneTag]:
    """On-screen text as ``text:<line>`` tags: the legible lines read on up to
    :data:`~needleforge.scenes.onscreen.READ_KEYFRAMES` keyframes spread over the scene
    (:func:`~needleforge.scenes.onscreen.read_lines`), scored by the share of those frames
    they were read on (:func:`~needleforge.scenes.onscreen.tag_score`: only text read on
    ``MIN_FRAMES`` holds; a line read once keeps negatives showing it out of the draw).

    The middle one of those keyframes is read first, and the others only when it shows a
    legible line: most scenes have no text, and one read instead of three keeps OCR's cost
    to about a third. A scene of fewer keyframes than ``MIN_FRAMES`` is not read: its text
    could never hold. A reader without confidences (no ``read_scored``) has each line
    counted at 1.0."""
    if len(frames) < onscreen.MIN_FRAMES:
        return []
    scored = getattr(reader, "read_scored", None)

    def read(index: int) -> list[tuple[str, float]]:
        image = frames[index].image
        return (scored(image) if callable(scored)
                else [(line, 1.0) for line in reader.read(image)])

    order = _spread(len(frames), onscreen.READ_KEYFRAMES)
    middle = order[len(order) // 2]
    first = read(middle)
    if not any(onscreen.legible(line, score) for line, score in first):
        return []
    readings = [first, *(read(i) for i in order if i != middle)]
    return [SceneTag(scene_id, f"{onscreen.TEXT_PREFIX}{line}", onscreen.tag_score(count),
                     reader.name,
                     f"{reader.version}+{onscreen.RULE_NAME}@{onscreen.RULE_VERSION}")
            for line, count in onscreen.read_lines(readings)]
