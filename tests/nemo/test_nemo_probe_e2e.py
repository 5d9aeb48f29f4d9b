"""The negative check end to end: a real video, the real probe from params, ``generate()``.

The video is six 640x360 shots made by ffmpeg from stills (``-loop 1 -i still.png -t D``):
shot 0 shows Chelsea the cat large on gravel (the object target, tracked in the hand-built
tables); shot 1 shows her shrunk to 80 pixels on gravel, a cat the representation pass missed
(its tables hold no cat); shots 2–5 are gravel and other textures with no COCO object (not
skimage's grass, which the 1.5x detector calls a cat at 0.32: a false alarm). The
montage lengths need four of the five candidate negatives, so without the check shot 1 may
be one of them; with it, shot 1 is found to show a cat and never enters the cat's montage.

A second video shows her in shot 1 at 40x32 pixels, mirrored (0.6 % of the frame): the
default label check (a frame a second, 2x input) does not see her, the instance check
(:mod:`needleforge.nemo.checks.instance`) does, from the target's own pixels.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from nemo_cases import backdrop, chelsea, make_scene, make_video
from PIL import Image

from needleforge.backends import default_registry
from needleforge.backends.embedded.writer import EmbeddedDescriber, EmbeddedVerifier
from needleforge.nemo import build_probe, generate
from needleforge.nemo.targets import Target
from needleforge.params import NemoParams
from needleforge.records import (
    Box,
    ObjectAttributes,
    ObjectTrack,
    SceneTag,
    TimedBox,
    Video,
    object_id_for,
)
from tests.conftest import ffmpeg

DURATIONS = (5.0, 3.0, 3.0, 3.0, 3.0, 3.0)
TINY_PX, TINY_AT = (40, 32), (470, 230)  # the second video's shot-1 cat: size, place


def _stills(folder: Path, *, small_px: tuple[int, int], at: tuple[int, int], mirrored: bool
            ) -> list[Path]:
    """Shot stills: big cat, small cat, then four object-free textures."""
    cat = chelsea()
    big, small = backdrop("gravel.png"), backdrop("gravel.png")
    big.paste(cat.resize((200, 162)), (220, 100))
    shrunk = cat.resize(small_px)
    small.paste(shrunk.transpose(Image.Transpose.FLIP_LEFT_RIGHT) if mirrored else shrunk, at)
    images = [big, small, backdrop("gravel.png"), backdrop("brick.png"),
              backdrop("hubble_deep_field.jpg"), backdrop("moon.png")]
    paths = []
    for k, image in enumerate(images):
        paths.append(folder / f"still{k}.png")
        image.save(paths[-1])
    return paths


def _video(folder: Path, *, small_px: tuple[int, int], at: tuple[int, int] = (400, 120),
           mirrored: bool = False) -> Video:
    """``ffmpeg -loop 1 -i stillK.png -t D -r 5`` per shot, joined with the concat filter."""
    args: list[str] = []
    stills = _stills(folder, small_px=small_px, at=at, mirrored=mirrored)
    for still, duration in zip(stills, DURATIONS, strict=True):
        args += ["-loop", "1", "-t", str(duration), "-r", "5", "-i", str(still)]
    joined = "".join(f"[{k}:v]" for k in range(len(DURATIONS)))
    path = folder / "shots.mp4"
    ffmpeg(*args, "-filter_complex", f"{joined}concat=n={len(DURATIONS)}:v=1:a=0,format=yuv420p",
           "-c:v", "libx264", "-g", "5", "-r", "5", str(path))
    record = make_video(duration_s=sum(DURATIONS))
    return Video(**{**{f: getattr(record, f) for f in record.__dataclass_fields__},
                    "stored_path": str(path)})


@pytest.fixture(scope="module")
def video(tmp_path_factory: pytest.TempPathFactory) -> Video:
    """Shot 1: the cat at 80x65 pixels, which the upscaled detector sees."""
    return _video(tmp_path_factory.mktemp("probe-e2e"), small_px=(80, 65))


@pytest.fixture(scope="module")
def tiny_video(tmp_path_factory: pytest.TempPathFactory) -> Video:
    """Shot 1: the cat at 40x32 pixels, mirrored, which the label check does not see."""
    return _video(tmp_path_factory.mktemp("probe-e2e-tiny"), small_px=TINY_PX, at=TINY_AT,
                  mirrored=True)


def _tables(video: Video) -> tuple[list, list[SceneTag], list[ObjectTrack]]:  # type: ignore[type-arg]
    scenes, clock = [], 0.0
    for k, duration in enumerate(DURATIONS):
        scenes.append(make_scene(k, clock, clock + duration, video_id=video.video_id))
        clock += duration
    target = scenes[0]
    times = [target.start_s + 0.2 * k for k in range(24)]
    cat = ObjectTrack(
        object_id=object_id_for(target.scene_id, 0), scene_id=target.scene_id, index=0,
        tag="cat", start_s=times[0], end_s=times[-1], visible_s=times[-1] - times[0],
        mean_area_frac=0.14, mean_score=0.9,
        boxes=tuple(TimedBox(t, Box(220 / 640, 100 / 360, 200 / 640, 162 / 360)) for t in times),
        attributes=ObjectAttributes(colour="brown", position="centre", size_rank=1),
        referring_expression="the cat", backend="test", model_version="1")
    tags = [SceneTag(s.scene_id, name, 0.8, "test", "1")
            for s, name in zip(scenes, ("cat", "gravel", "gravel", "brick", "sky", "moon"),
                               strict=True)]
    return scenes, tags, [cat]


@pytest.mark.slow
def test_the_check_keeps_a_missed_small_cat_out_of_the_cat_montage(video: Video) -> None:
    scenes, tags, objects = _tables(video)
    params = NemoParams(short_min_s=16.5, short_max_s=17.0, min_negatives=2, min_scene_s=4.0,
                        min_scene_tags=1, check={"every_s": 1.0, "input_scale": 1.5})
    probe = build_probe(params, videos=[video], registry=default_registry())
    assert probe is not None
    with probe:
        seen = probe.sighting(scenes[1], "cat")
        assert seen is not None and seen.scene_id == scenes[1].scene_id
        assert scenes[1].start_s <= seen.t_s < scenes[1].end_s
        for clean in scenes[2:]:
            assert probe.sighting(clean, "cat") is None, clean.scene_id
        # 3 s shots: a frame a second is looked at; the 4 frames a verifier is shown (no time
        # shared) get the pose check only. The shots are stills, so the change gate gives the
        # detector each shot's first frame and nothing of the two after it.
        assert probe.cost.frames == sum(3 + 4 for _ in scenes[1:])
        assert probe.cost.detector_calls == sum(1 for _ in scenes[1:])
        assert probe.cost.detector_area == pytest.approx(len(scenes[1:]))
        result = generate(videos=[video], scenes=scenes, tags=tags, objects=objects,
                          params=params, describer=EmbeddedDescriber(),
                          verifier=EmbeddedVerifier(), probe=probe)
    question = next(q for q in result.releasable() if q.needle_type == "object")
    montage = next(m for m in result.montages if m.montage_id == question.montage_id)
    negatives = [s.scene_id for s in montage.segments if s.role == "negative"]
    assert len(negatives) == 4 and scenes[1].scene_id not in negatives
    assert {(r.sighting.scene_id, r.sighting.label) for r in result.rejected_negatives} <= {
        (scenes[1].scene_id, "cat")}


@pytest.mark.slow
def test_the_instance_check_finds_the_cat_the_detector_misses(tiny_video: Video) -> None:
    """The label check alone lets shot 1 in; the instance check refuses it from the target's
    own pixels (template decoded from the video at the track's largest box), and generate
    keeps it out of the cat's montage, listing the refusal as the instance check's."""
    scenes, tags, objects = _tables(tiny_video)
    target = Target("object", scenes[0], objects[0])
    params = NemoParams(short_min_s=16.5, short_max_s=17.0, min_negatives=2, min_scene_tags=1,
                        min_scene_s=4.0)  # the default check: a frame a second, 2x input
    label_only = build_probe(params.with_check(instances=False),
                             videos=[tiny_video], registry=default_registry())
    assert label_only is not None and label_only.instances is None
    with label_only:
        assert all(label_only.evidence(s, target) is None for s in scenes[1:])
    probe = build_probe(params, videos=[tiny_video], registry=default_registry())
    assert probe is not None
    with probe:
        refused = probe.evidence(scenes[1], target)
        assert refused is not None and refused.check == "instance"
        assert refused.sighting.box.iou(Box(TINY_AT[0] / 640, TINY_AT[1] / 360,
                                            TINY_PX[0] / 640, TINY_PX[1] / 360)) > 0.4
        assert all(probe.evidence(s, target) is None for s in scenes[2:])
        result = generate(videos=[tiny_video], scenes=scenes, tags=tags, objects=objects,
                          params=params, describer=EmbeddedDescriber(),
                          verifier=EmbeddedVerifier(), probe=probe)
    question = next(q for q in result.releasable() if q.needle_type == "object")
    montage = next(m for m in result.montages if m.montage_id == question.montage_id)
    assert scenes[1].scene_id not in {s.scene_id for s in montage.segments}
    assert {(r.sighting.scene_id, r.check) for r in result.rejected_negatives} <= {
        (scenes[1].scene_id, "instance")}
