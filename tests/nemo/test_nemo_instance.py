"""The instance check: the target's own crop searched for in negative frames.

Frames are 640x360 stills made from scikit-image's photos: the target scene shows Chelsea
the cat large on gravel; negatives show her again small and mirrored (on gravel, where the
upscaled SSD misses her, and on brick), a brick wall alone, Chelsea's neighbour the coffee
cup at the same small size, and a black frame. Only the frames with Chelsea may match.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import pytest
from nemo_cases import backdrop, chelsea, make_scene, make_track, photo
from PIL import Image

from needleforge.backends.base import Keyframe, RGBImage
from needleforge.backends.embedded.detector import EmbeddedDetector
from needleforge.nemo.checks.instance import InstanceMatcher, is_instance_key
from needleforge.nemo.checks.negative_scan import TiledProbe
from needleforge.nemo.targets import Target
from needleforge.records import Box, ObjectTrack, Scene, TimedBox

TARGET_BOX = Box(220 / 640, 100 / 360, 200 / 640, 162 / 360)
SMALL_AT = (470, 230)
SMALL = (44, 36)  # 0.7 % of the frame


def _with(background: str, thing: Image.Image | None = None, *, mirrored: bool = False,
          size: tuple[int, int] = SMALL) -> RGBImage:
    frame = backdrop(background)
    if thing is not None:
        small = thing.resize(size)
        frame.paste(small.transpose(Image.Transpose.FLIP_LEFT_RIGHT) if mirrored else small,
                    SMALL_AT)
    return np.asarray(frame)


@pytest.fixture(scope="module")
def images() -> dict[int, RGBImage]:
    """Scene index -> its frame (see the module docstring)."""
    big = backdrop("gravel.png")
    big.paste(chelsea().resize((200, 162)), (220, 100))
    with photo("coffee.png") as img:
        cup = img.convert("RGB").crop((70, 10, 490, 395))
    return {0: np.asarray(big), 1: _with("gravel.png", chelsea(), mirrored=True),
            2: _with("brick.png", chelsea()), 3: _with("brick.png"),
            4: _with("brick.png", cup), 5: np.zeros((360, 640, 3), dtype=np.uint8)}


SCENES = [make_scene(k, 5.0 * k, 5.0 * k + 5.0) for k in range(6)]


def _track(box: Box = TARGET_BOX, *, smaller: bool = True) -> ObjectTrack:
    """The target's track: ``box`` at 2 s, after a smaller box at 1 s unless not ``smaller``."""
    boxes = ((TimedBox(1.0, Box(0.1, 0.1, 0.2, 0.2)),) if smaller else ()) + (
        TimedBox(2.0, box),)
    return dataclasses.replace(make_track(SCENES[0], 0, "cat"), boxes=boxes)


class _Source:
    """Frames by scene index (two per scene), counting calls; ``frame_at`` for templates."""

    def __init__(self, images: dict[int, RGBImage]) -> None:
        self.images, self.calls, self.exact = images, 0, []

    def __call__(self, scene: Scene) -> Sequence[Keyframe]:
        self.calls += 1
        image = self.images[scene.index]
        return (Keyframe(scene.start_s + 1.0, image), Keyframe(scene.start_s + 3.0, image))

    def frame_at(self, scene: Scene, t_s: float) -> Keyframe | None:
        self.exact.append((scene.scene_id, t_s))
        return Keyframe(t_s, self.images[scene.index])


def test_the_target_is_found_small_and_mirrored_and_nothing_else(
    images: dict[int, RGBImage],
) -> None:
    source = _Source(images)
    matcher = InstanceMatcher(source, source.frame_at)
    track = _track()
    for index in (1, 2):
        seen = matcher.seen(SCENES[index], track, target_scene=SCENES[0])
        assert seen is not None, index
        assert seen.label == "cat" and seen.score >= 0.75
        assert seen.box.iou(Box(SMALL_AT[0] / 640, SMALL_AT[1] / 360, SMALL[0] / 640,
                                SMALL[1] / 360)) > 0.4
    for index in (3, 4, 5):  # brick, the cup of the same size, black
        assert matcher.seen(SCENES[index], track, target_scene=SCENES[0]) is None, index
    # The template came from the largest box's frame, decoded once for five scenes.
    assert source.exact == [(SCENES[0].scene_id, 2.0)]
    assert matcher.cost.pairs == 5 and matcher.cost.frames == 10


def test_the_upscaled_detector_misses_the_small_cat_on_gravel(
    images: dict[int, RGBImage],
) -> None:
    """Why the instance check exists: the label check's detector, at the default 2x input,
    does not see the 44-pixel cat that the instance check finds."""
    detector = EmbeddedDetector(score_threshold=0.3, input_scale=2.0, num_threads=1)
    assert "cat" not in {d.label for d in detector.detect(images[1], t_s=0.0)}
    bigger = _with("gravel.png", chelsea(), mirrored=True, size=(80, 65))
    assert "cat" in {d.label for d in detector.detect(bigger, t_s=0.0)}  # 1.3 %: seen


def test_scans_are_keyed_by_object_box_and_settings_and_reused(
    images: dict[int, RGBImage],
) -> None:
    source = _Source(images)
    first = InstanceMatcher(source, source.frame_at)
    track = _track()
    seen = first.seen(SCENES[1], track, target_scene=SCENES[0])
    assert first.seen(SCENES[3], track, target_scene=SCENES[0]) is None
    scans = first.new_scans()
    assert [s.scene_id for s in scans] == [SCENES[1].scene_id, SCENES[3].scene_id]
    assert first.new_scans() == []  # handed out once
    key = first.key_for(track)
    assert all(s.probe_key == key for s in scans)
    assert key.startswith(f"instance {track.object_id}@2.000 ") and key.endswith(first.spec)
    assert scans[0].sightings == (seen,) and scans[1].sightings == ()

    again_source = _Source(images)
    again = InstanceMatcher(again_source, again_source.frame_at)
    assert again.preload(scans) == 2
    assert again.seen(SCENES[1], track, target_scene=SCENES[0]) == seen
    assert again.seen(SCENES[3], track, target_scene=SCENES[0]) is None
    assert again_source.calls == 0 and again.cost.reused == 2 and again.new_scans() == []

    other = InstanceMatcher(source, source.frame_at, min_score=0.9)
    assert other.preload(scans) == 0  # other settings: not its facts
    moved = _track(Box(0.3, 0.25, 0.32, 0.45))
    assert first.key_for(moved) != key  # another template box: another key


def test_unusable_templates_and_bad_requests(images: dict[int, RGBImage]) -> None:
    source = _Source(images)
    matcher = InstanceMatcher(source, source.frame_at)
    tiny = _track(Box(0.5, 0.5, 0.01, 0.01), smaller=False)  # 6x4 px: too small to search
    assert matcher.seen(SCENES[1], tiny, target_scene=SCENES[0]) is None
    black = dict(images)
    black[0] = images[5]
    flat_source = _Source(black)
    flat = InstanceMatcher(flat_source, flat_source.frame_at)
    assert flat.seen(SCENES[1], _track(), target_scene=SCENES[0]) is None  # a flat template
    assert matcher.cost.unusable == 1 and flat.cost.unusable == 1 and source.calls == 0
    with pytest.raises(ValueError, match="its own scene"):
        matcher.seen(SCENES[0], _track(), target_scene=SCENES[0])


@pytest.mark.parametrize(("kwargs", "named"), [
    ({"min_score": 0.0}, "min_score"), ({"min_score": 1.5}, "min_score"),
    ({"template_px": 4}, "template_px"), ({"min_width": 0.6}, "min_width"),
    ({"max_width": 1.5}, "max_width"), ({"scale_step": 1.0}, "scale_step"),
    ({"inner": 0.5}, "inner"), ({"search": "fast"}, "search 'fast' \\(one of"),
    ({"coarse_margin": 1.0}, "coarse_margin"), ({"coarse_peaks": 0}, "coarse_peaks"),
    ({"grey_cache_mb": -1}, "grey_cache_mb"), ({"threads": 0}, "threads"),
])
def test_bad_settings_are_refused_by_name(kwargs: dict[str, float], named: str) -> None:
    with pytest.raises(ValueError, match=named):
        InstanceMatcher(lambda scene: (), lambda scene, t: None, **kwargs)  # type: ignore[arg-type]


def test_a_scene_is_decoded_once_for_many_targets(images: dict[int, RGBImage]) -> None:
    """The grey frames of a negative are kept between targets; its colour frames are decoded
    again only to confirm a window that reached the threshold in grey. Without the cache
    every pair decodes."""
    moved = _track(Box(0.3, 0.25, 0.32, 0.45))  # another template: another target
    source = _Source(images)
    matcher = InstanceMatcher(source, source.frame_at)
    for track in (_track(), moved):
        assert matcher.seen(SCENES[3], track, target_scene=SCENES[0]) is None
    assert source.calls == 1
    assert matcher.seen(SCENES[1], _track(), target_scene=SCENES[0]) is not None
    assert source.calls == 3  # grey once, colour once for the cat found in grey
    uncached_source = _Source(images)
    uncached = InstanceMatcher(uncached_source, uncached_source.frame_at, grey_cache_mb=0)
    for track in (_track(), moved):
        assert uncached.seen(SCENES[3], track, target_scene=SCENES[0]) is None
    assert uncached_source.calls == 2


def test_coarse_to_fine_finds_what_every_window_finds(images: dict[int, RGBImage]) -> None:
    """The two searches agree on every scene (the same score and box where the cat is, no
    match elsewhere), but under different keys: a stored scan belongs to one search. The
    exhaustive search keeps the key it had before there were two."""
    track = _track()
    found = {}
    for search in ("exhaustive", "coarse-to-fine"):
        source = _Source(images)
        matcher = InstanceMatcher(source, source.frame_at, search=search)
        found[search] = [matcher.seen(SCENES[k], track, target_scene=SCENES[0])
                         for k in range(1, 6)]
        found[search + " key"] = matcher.key_for(track)
        assert ("coarse" in matcher.spec) is (search == "coarse-to-fine")
    for full, fast in zip(found["exhaustive"], found["coarse-to-fine"], strict=True):
        assert (full is None) is (fast is None)
        if full is not None and fast is not None:
            assert fast.score == pytest.approx(full.score, abs=1e-5) and fast.box == full.box
    assert found["exhaustive"][0] is not None and found["exhaustive"][1] is not None
    assert found["exhaustive key"] != found["coarse-to-fine key"]
    one_source = _Source(images)
    one_thread = InstanceMatcher(one_source, one_source.frame_at, threads=1)
    assert [one_thread.seen(SCENES[k], track, target_scene=SCENES[0]) for k in range(1, 6)] \
        == found["coarse-to-fine"]  # the frames' threads change nothing found


def test_coarse_to_fine_never_scores_above_every_window(images: dict[int, RGBImage]) -> None:
    """In grey (a threshold no window reaches, so none is confirmed in colour), the
    coarse-to-fine search scores a subset of the windows the exhaustive one scores: on any
    frame its best is at most the exhaustive best, and on the cat's frames it is the same."""
    track = _track()
    source = _Source(images)
    full = InstanceMatcher(source, source.frame_at, search="exhaustive", min_score=0.999,
                           coarse_margin=0.5)
    fast = InstanceMatcher(source, source.frame_at, min_score=0.999, coarse_margin=0.5)
    for index in range(1, 6):
        best_full = full.best_in(images[index], track, target_scene=SCENES[0])
        best_fast = fast.best_in(images[index], track, target_scene=SCENES[0])
        assert best_full is not None
        if best_fast is None:  # no coarse place came near: the cat is not on these frames
            assert index not in (1, 2) and best_full[0] < fast.min_score - fast.coarse_margin
            continue
        assert best_fast[0] <= best_full[0] + 1e-4, index  # float noise of the two paths
        if index in (1, 2):
            assert best_fast[0] == pytest.approx(best_full[0], abs=1e-5)


def test_the_probe_asks_the_label_first_then_the_instance(images: dict[int, RGBImage]) -> None:
    """``TiledProbe.evidence``: a label sighting wins (no instance search); where the label
    check sees nothing, the instance check's sighting refuses the scene; scene targets and
    clean scenes get None; both checks' scans come back from ``new_scans``."""
    source = _Source(images)
    detector = EmbeddedDetector(score_threshold=0.3, input_scale=2.0, num_threads=1)
    matcher = InstanceMatcher(source, source.frame_at)
    probe = TiledProbe(detector, source, cols=1, rows=1, overlap=0.2, min_score=0.3,
                       instances=matcher)
    target = Target("object", SCENES[0], _track())
    seen_by_label = _with("brick.png", chelsea(), size=(80, 65))
    source.images = {**images, 4: seen_by_label}  # the detector sees this cat: a label hit
    label = probe.evidence(SCENES[4], target)
    assert label is not None and label.check == "label" and matcher.cost.pairs == 0
    itself = probe.evidence(SCENES[1], target)
    assert itself is not None and itself.check == "instance"
    assert itself.describe().startswith("instance check: cat at")
    assert probe.evidence(SCENES[3], target) is None
    assert probe.evidence(SCENES[3], Target("scene", SCENES[0])) is None
    kinds = [is_instance_key(s.probe_key) for s in probe.new_scans()]
    assert kinds == [False, False, False, True, True]
    assert probe.cost.instances is matcher.cost
    assert "instance check: 2 target/scene pair(s) matched" in probe.cost.describe()
