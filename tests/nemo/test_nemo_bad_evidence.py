"""Bad evidence never becomes a question: it is dropped, or the target is skipped with a reason.

The tables here are made the way the represent stage makes them — per-keyframe detections
and tags through ``build_objects`` and ``scene_tags`` with the default objects params — and
then go through NeMo stage 2 with the embedded describer and verifier:

* a video where every detection is one label ("person": an arm, a hand, a poster in every
  shot), and a scene where nothing is detected;
* a frame-filling box (a "surfboard" covering 95 % of every frame);
* a track that flickers every other keyframe (a "dog" never seen on two keyframes in a row);
* a tagger that returns only low scores.
"""

from __future__ import annotations

import numpy as np
from nemo_cases import make_video, params, tile

from needleforge.backends.embedded.writer import EmbeddedDescriber, EmbeddedVerifier
from needleforge.nemo import generate
from needleforge.objects import build_objects, scene_tags
from needleforge.objects.tracker import usable
from needleforge.params import ObjectParams
from needleforge.records import Box, Detection, ObjectTrack, Scene, SceneTag, TagScore

GREY = np.full((36, 64, 3), 128, dtype=np.uint8)
OBJECTS = ObjectParams()


def _person(t: float) -> Detection:
    return Detection(t_s=t, label="person", score=0.8, box=Box(0.1, 0.2, 0.3, 0.6))


def _represent(scene: Scene, extra: dict[float, list[Detection]],
               low_tags: bool = False) -> tuple[list[SceneTag], list[ObjectTrack]]:
    """The scene's tags and tracks from keyframes at 1 fps: a person on every keyframe (in
    all but the empty scene), plus ``extra`` detections, through the real objects code."""
    times = [scene.start_s + 0.1 + k for k in range(int(scene.duration_s))]
    frames = []
    for t in times:
        found = [*([] if scene.index == 4 else [_person(t)]), *extra.get(round(t, 1), [])]
        frames.append((t, [d for d in found if usable(d, params=OBJECTS)]))
    tracks = build_objects([(t, GREY) for t in times], frames, scene_id=scene.scene_id,
                           scene_start_s=scene.start_s, scene_end_s=scene.end_s,
                           params=OBJECTS, backend="test", model_version="1")
    low = [TagScore("window screen", 0.12), TagScore("street sign", 0.2)]
    tagged = [low if low_tags else [] for _ in range(3)]
    merged = scene_tags(tagged, tracks, min_score=OBJECTS.min_tag_score,
                        min_keyframes=OBJECTS.min_tag_keyframes,
                        min_label_keyframes=OBJECTS.min_label_keyframes)
    return [SceneTag(scene.scene_id, t.tag, t.score, "test", "1") for t in merged], tracks


def test_bad_evidence_gives_skips_with_reasons_never_questions() -> None:
    scenes = tile([8.0, 8.0, 8.0, 8.0, 8.0, 8.0])
    s = scenes
    surfboard = {round(s[1].start_s + 0.1 + k, 1): [Detection(
        t_s=s[1].start_s + 0.1 + k, label="surfboard", score=0.9,
        box=Box(0.01, 0.01, 0.98, 0.97))] for k in range(8)}
    dog = {round(s[2].start_s + 0.1 + k, 1): [Detection(
        t_s=s[2].start_s + 0.1 + k, label="dog", score=0.9, box=Box(0.5, 0.3, 0.3, 0.4))]
        for k in range(0, 8, 2)}
    tags: list[SceneTag] = []
    objects: list[ObjectTrack] = []
    for scene, extra, low in ((s[0], {}, False), (s[1], surfboard, False), (s[2], dog, False),
                              (s[3], {}, True), (s[4], {}, False), (s[5], {}, False)):
        scene_tags_, tracks = _represent(scene, extra, low)
        tags += scene_tags_
        objects += tracks
    labels = {o.tag for o in objects}
    assert "surfboard" not in labels  # the frame-filling box is no evidence
    assert not any(t.tag in ("surfboard", "window screen", "street sign") for t in tags)
    [flicker] = [o for o in objects if o.tag == "dog"]
    assert flicker.visible_s == 0.0  # never on two keyframes in a row

    result = generate(videos=[make_video()], scenes=scenes, tags=tags, objects=objects,
                      params=params(min_area_frac=0.0, max_area_frac=1.0),
                      describer=EmbeddedDescriber(), verifier=EmbeddedVerifier())
    assert result.questions == () and result.montages == ()
    assert {s.stage for s in result.skipped} == {"plan", "describe"}, result.skipped
    for skip in result.skipped:
        if skip.stage == "plan":  # the person is in 5 of 6 scenes: no clean negatives
            assert "negatives may hold none of ['person']" in skip.reason, skip.reason
        else:
            assert "nothing to describe" in skip.reason, skip.reason
        assert "dog" not in skip.reason and "surfboard" not in skip.reason
