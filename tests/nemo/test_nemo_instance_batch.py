"""The instance check searched in company and only where frames changed.

Stage 3 asks the instance check about every eligible scene of a program for each object
target, so a scene is searched for many targets. One :class:`FramePyramid` a frame serves
them all, and a pair searched in company waits, unstored, until it is asked. With
``changed_only`` a scene's later frames are searched only where they changed. Frames are the
stills of ``test_nemo_instance``: Chelsea the cat large on gravel in the target scene, small
and mirrored on gravel or on brick in others, a brick wall, a coffee cup, a black frame.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence

import numpy as np
import pytest
from nemo_cases import backdrop, chelsea, make_scene, make_track, photo
from PIL import Image

from needleforge.backends.base import Keyframe, RGBImage
from needleforge.nemo.checks.change_gate import SPEC as GATE_SPEC
from needleforge.nemo.checks.instance import InstanceMatcher
from needleforge.nemo.checks.template_search import (
    FramePyramid,
    Search,
    Template,
    best_match,
    grey_of,
    match,
)
from needleforge.records import Box, ObjectTrack, Scene, TimedBox

CAT_BOX = Box(220 / 640, 100 / 360, 200 / 640, 162 / 360)
CUP_BOX = Box(60 / 640, 40 / 360, 120 / 640, 110 / 360)
SMALL_AT = (470, 230)
SCENES = [make_scene(k, 5.0 * k, 5.0 * k + 5.0) for k in range(7)]
SEARCH = Search(min_score=0.8, min_width=0.04, max_width=0.5, scale_step=1.1,
                search="coarse-to-fine", coarse_margin=0.2, coarse_peaks=8)


def _small(background: str, thing: Image.Image | None, *, mirrored: bool = False,
           at: tuple[int, int] = SMALL_AT) -> RGBImage:
    frame = backdrop(background)
    if thing is not None:
        small = thing.resize((44, 36))
        frame.paste(small.transpose(Image.Transpose.FLIP_LEFT_RIGHT) if mirrored else small, at)
    return np.asarray(frame)


@pytest.fixture(scope="module")
def frames() -> dict[int, tuple[RGBImage, ...]]:
    """Scene index -> its frames, one a second from ``start_s + 1``."""
    target = backdrop("gravel.png")
    target.paste(chelsea().resize((200, 162)), (220, 100))
    with photo("coffee.png") as img:
        cup = img.convert("RGB").crop((70, 10, 490, 395))
    target.paste(cup.resize((120, 110)), (60, 40))
    brick = _small("brick.png", None)
    return {0: (np.asarray(target),) * 2,
            1: (_small("gravel.png", chelsea(), mirrored=True),) * 2,  # still: one frame new
            2: (brick, _small("brick.png", chelsea())),  # the cat comes in on the second
            3: (brick, brick, brick),
            4: (_small("brick.png", cup),) * 2,
            5: (np.zeros((360, 640, 3), dtype=np.uint8),) * 2,
            # the cat walks: every frame changes where she was and where she is
            6: tuple(_small("brick.png", chelsea(), at=(100 + 150 * k, 230)) for k in range(3))}


class _Source:
    """Each scene's frames, counting decodes; ``frame_at`` for the templates."""

    def __init__(self, frames: dict[int, tuple[RGBImage, ...]]) -> None:
        self.frames, self.calls, self.streams = frames, 0, 0

    def __call__(self, scene: Scene) -> Sequence[Keyframe]:
        self.calls += 1
        return tuple(Keyframe(scene.start_s + 1.0 + k, image)
                     for k, image in enumerate(self.frames[scene.index]))

    def frame_at(self, scene: Scene, t_s: float) -> Keyframe | None:
        return Keyframe(t_s, self.frames[scene.index][0])

    def stream(self, scene: Scene) -> Iterator[Keyframe]:
        """The same frames one at a time, counting streams."""
        self.streams += 1
        for k, image in enumerate(self.frames[scene.index]):
            yield Keyframe(scene.start_s + 1.0 + k, image)


def _track(index: int, box: Box, tag: str) -> ObjectTrack:
    return dataclasses.replace(make_track(SCENES[0], index, tag), boxes=(TimedBox(1.0, box),))


CAT, CUP = _track(0, CAT_BOX, "cat"), _track(1, CUP_BOX, "cup")


def _template(image: RGBImage, box: Box) -> Template:
    import cv2

    x0, y0 = round(box.x * 640), round(box.y * 360)
    crop = image[y0:y0 + round(box.h * 360), x0:x0 + round(box.w * 640)]
    rows = round(24 * crop.shape[0] / crop.shape[1])
    template = Template.from_colour(cv2.resize(np.ascontiguousarray(crop), (24, rows),
                                               interpolation=cv2.INTER_AREA).astype(np.float32))
    assert template is not None
    return template


def test_one_pyramid_for_many_templates_finds_what_each_alone_finds(
    frames: dict[int, tuple[RGBImage, ...]],
) -> None:
    """A frame's shared pyramid gives every template exactly the match its own pyramid
    gives, in both searches."""
    templates = [_template(frames[0][0], CAT_BOX), _template(frames[0][0], CUP_BOX)]
    assert templates[0].grey[0].shape != templates[1].grey[0].shape  # rows differ
    for search in ("coarse-to-fine", "exhaustive"):
        settings = dataclasses.replace(SEARCH, search=search)
        for index in (1, 2, 4, 5):
            image = frames[index][-1]
            shared = FramePyramid(grey_of(image), lambda image=image: image, settings, cols=24,
                                  min_rows=min(t.grey[0].shape[0] for t in templates))
            for template in templates:
                alone = best_match(grey_of(image), lambda image=image: image, template,
                                   settings)
                assert match(shared, template) == alone, (search, index)
    cat_on_gravel = match(FramePyramid(grey_of(frames[1][0]), lambda: frames[1][0], SEARCH,
                                       cols=24, min_rows=4), templates[0])
    assert cat_on_gravel is not None and cat_on_gravel[0] >= 0.8


def test_a_region_limits_the_search_to_windows_that_overlap_it(
    frames: dict[int, tuple[RGBImage, ...]],
) -> None:
    """Around the cat, the region's search scores her as the whole frame's does; a region
    away from her does not find her."""
    image = frames[2][1]
    template = _template(frames[0][0], CAT_BOX)
    whole = best_match(grey_of(image), lambda: image, template, SEARCH)
    assert whole is not None and whole[0] >= 0.8
    for search in ("coarse-to-fine", "exhaustive"):
        settings = dataclasses.replace(SEARCH, search=search)
        near = match(FramePyramid(grey_of(image), lambda: image, settings, cols=24, min_rows=4,
                                  region=(440, 200, 540, 290)), template)
        assert near is not None and near[0] == pytest.approx(whole[0], abs=1e-4), search
        assert near[1].iou(whole[1]) > 0.9
        away = match(FramePyramid(grey_of(image), lambda: image, settings, cols=24, min_rows=4,
                                  region=(0, 0, 200, 150)), template)
        assert away is None or away[0] < 0.8, search


def test_company_scans_are_the_same_and_stored_only_when_asked(
    frames: dict[int, tuple[RGBImage, ...]],
) -> None:
    """Asking pairs in company finds and hands out exactly what asking them alone does, in
    the order asked; a scan made in company and never asked is dropped and counted."""
    asks = [(scene, track) for scene in SCENES[1:] for track in (CAT, CUP)]
    alone_source, company_source = _Source(frames), _Source(frames)
    alone = InstanceMatcher(alone_source, alone_source.frame_at)
    together = InstanceMatcher(company_source, company_source.frame_at)
    company = [(CAT, SCENES[0]), (CUP, SCENES[0])]
    for scene, track in asks:
        expected = alone.seen(scene, track, target_scene=SCENES[0])
        assert together.seen(scene, track, target_scene=SCENES[0], company=company) \
            == expected, (scene.index, track.tag)
    assert together.new_scans() == alone.new_scans()
    assert alone.cost.pairs == together.cost.pairs == len(asks)
    found = {(s.scene_id, s.label) for scene, track in asks
             if (s := alone.seen(scene, track, target_scene=SCENES[0])) is not None}
    assert found == {(SCENES[k].scene_id, "cat") for k in (1, 2, 6)} | {
        (SCENES[4].scene_id, "cup")}

    lone_source = _Source(frames)
    lone = InstanceMatcher(lone_source, lone_source.frame_at)
    assert lone.seen(SCENES[4], CAT, target_scene=SCENES[0], company=company) is None
    assert lone.cost.pairs == 2  # the cup was searched for in the same pass
    assert [s.probe_key for s in lone.new_scans()] == [lone.key_for(CAT)]  # only what was asked
    lone.close()
    assert lone.cost.unasked == 1 and lone.new_scans() == []


@pytest.mark.parametrize("changed_only", [False, True])
def test_frames_searched_as_they_decode_give_the_same_scans(
    frames: dict[int, tuple[RGBImage, ...]], changed_only: bool,
) -> None:
    """With a stream, a scene not kept yet is searched frame by frame as it decodes (its
    colour images at hand, so the frame source is not called for them); the scans and
    costs are those of the search over the decoded scene."""
    asks = [(scene, track) for scene in SCENES[1:] for track in (CAT, CUP)]
    plain_source, streamed_source = _Source(frames), _Source(frames)
    plain = InstanceMatcher(plain_source, plain_source.frame_at, changed_only=changed_only)
    streamed = InstanceMatcher(streamed_source, streamed_source.frame_at,
                               changed_only=changed_only, stream=streamed_source.stream)
    for scene, track in asks:
        assert streamed.seen(scene, track, target_scene=SCENES[0]) == \
            plain.seen(scene, track, target_scene=SCENES[0]), (scene.index, track.tag)
    assert streamed.new_scans() == plain.new_scans()
    assert (streamed.cost.pairs, streamed.cost.frames) == (plain.cost.pairs, plain.cost.frames)
    # Each scene streamed once (its greys kept for the cup); the one decode is the cup of
    # scene 4 confirmed in colour while searched from the kept greys.
    assert streamed_source.streams == 6 and streamed_source.calls == 1
    assert plain_source.calls > streamed_source.calls


def test_changed_only_searches_what_changed_and_finds_the_same(
    frames: dict[int, tuple[RGBImage, ...]],
) -> None:
    """A scene's repeated frame is not searched again; a cat coming in or walking is found
    where the whole-frame search finds her, with her score; the gate is in the scan key."""
    whole_source, gated_source = _Source(frames), _Source(frames)
    whole = InstanceMatcher(whole_source, whole_source.frame_at)
    gated = InstanceMatcher(gated_source, gated_source.frame_at, changed_only=True)
    assert gated.spec == f"{whole.spec} {GATE_SPEC}" and gated.key_for(CAT) != whole.key_for(CAT)
    for index in range(1, 7):
        full = whole.seen(SCENES[index], CAT, target_scene=SCENES[0])
        fast = gated.seen(SCENES[index], CAT, target_scene=SCENES[0])
        assert (full is None) is (fast is None), index
        if full is not None and fast is not None:
            assert fast.score == pytest.approx(full.score, abs=1e-4), index
            assert fast.t_s == full.t_s and fast.box.iou(full.box) > 0.9, index
    # Frames searched: 1+1 (still), 2 (the cat came in), 1 (a wall), 1, 1, 3 (walking).
    assert whole.cost.frames == 14 and gated.cost.frames == 9
    index_of = {scene.scene_id: scene.index for scene in SCENES}
    assert [s.n_frames for s in gated.new_scans()] == [len(frames[index_of[s.scene_id]])
                                                       for s in whole.new_scans()]


@pytest.mark.parametrize("seed", range(20))
def test_merged_boxes_hold_every_box_and_do_not_overlap(seed: int) -> None:
    """The refine scores each group of nearby places in one box: every place's box lies in
    exactly one merged box, and merged boxes never overlap."""
    from needleforge.nemo.checks.template_search import _merged

    rng = np.random.default_rng(seed)
    boxes = []
    for _ in range(int(rng.integers(1, 25))):
        x, y = (int(v) for v in rng.integers(0, 120, 2))
        boxes.append([x, y, x + int(rng.integers(0, 10)), y + int(rng.integers(0, 10))])
    merged = _merged([list(b) for b in boxes])

    def overlap(a: list[int], b: list[int]) -> bool:
        return a[0] <= b[2] and b[0] <= a[2] and a[1] <= b[3] and b[1] <= a[3]

    for box in boxes:
        assert sum(m[0] <= box[0] and m[1] <= box[1] and box[2] <= m[2] and box[3] <= m[3]
                   for m in merged) == 1
    assert not any(overlap(a, b) for i, a in enumerate(merged) for b in merged[i + 1:])
