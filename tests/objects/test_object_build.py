"""build_objects on synthetic keyframes, scene_tags union/max, and the objects params."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from object_cases import det, params, timeline

from needleforge.objects import build_objects, scene_tags
from needleforge.params import ObjectParams, Params, ParamsError, parse_params
from needleforge.records import Detection, ObjectTrack, TagScore
from needleforge.records.phrases import UNTELLABLE_MARK

H, W = 90, 160
TIMES = [10.0, 11.0, 12.0, 13.0]


def _frame(*squares: tuple[float, float, tuple[int, int, int]]) -> np.ndarray:
    """A grey 90x160 frame with 0.2x0.2 squares of the given colours at normalized (x, y)."""
    image = np.full((H, W, 3), 128, dtype=np.uint8)
    for x, y, rgb in squares:
        image[round(y * H):round((y + 0.2) * H), round(x * W):round((x + 0.2) * W)] = rgb
    return image


def _scene() -> tuple[list[tuple[float, np.ndarray]], list[tuple[float, list[Detection]]]]:
    """A red cup drifting right on the left, a blue cup still on the right (missed at t=12)."""
    keyframes, dets = [], []
    for k, t in enumerate(TIMES):
        red_x = 0.05 + 0.02 * k
        keyframes.append((t, _frame((red_x, 0.4, (220, 20, 30)), (0.75, 0.4, (30, 60, 200)))))
        dets.append(det(t, "cup", red_x, 0.4, score=0.8))
        if t != 12.0:
            dets.append(det(t, "cup", 0.75, 0.4, score=0.6))
    return keyframes, timeline(TIMES, *dets)


def _build(keyframes: list[tuple[float, np.ndarray]],
           frames: list[tuple[float, list[Detection]]], **kwargs: str) -> list[ObjectTrack]:
    opts = {"backend": "embedded-ssd", "model_version": "0.4.4-abc123", **kwargs}
    return build_objects(keyframes, frames, scene_id="v0123-s0002", scene_start_s=10.0,
                         scene_end_s=14.0, params=params(min_hits=2),
                         backend=opts["backend"], model_version=opts["model_version"])


def test_build_objects_composes_tracks_attributes_and_expressions() -> None:
    red, blue = _build(*_scene())
    assert (red.object_id, blue.object_id) == ("v0123-s0002-o000", "v0123-s0002-o001")
    assert (red.attributes.colour, red.attributes.position) == ("red", "left")
    assert (blue.attributes.colour, blue.attributes.position) == ("blue", "right")
    assert (red.referring_expression, blue.referring_expression) == ("the red cup",
                                                                    "the blue cup")
    assert (red.start_s, red.end_s, red.visible_s) == (10.0, 13.0, 3.0)
    assert (blue.start_s, blue.end_s, blue.visible_s) == (10.0, 13.0, 1.0)
    assert red.mean_area_frac == pytest.approx(0.04)
    assert red.mean_score == pytest.approx(0.8)
    assert red.attributes.size_rank == blue.attributes.size_rank == 1
    assert [b.t_s for b in blue.boxes] == [10.0, 11.0, 13.0]
    assert red.backend == "embedded-ssd" and red.model_version == "0.4.4-abc123"


def test_build_objects_errors_name_the_problem() -> None:
    keyframes, frames = _scene()
    with pytest.raises(ValueError, match=re.escape("no keyframe image at t_s = 11.0")):
        _build([keyframes[0], *keyframes[2:]], frames)
    with pytest.raises(ValueError, match="keyframe times must increase"):
        _build(keyframes[::-1], frames)
    with pytest.raises(ValueError, match="backend = ''"):
        _build(keyframes, frames, backend="")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.tuples(st.sampled_from(["cup", "dog"]), st.floats(0.0, 0.8),
                                   st.floats(0.0, 0.8)), max_size=3),
                min_size=1, max_size=6))
def test_build_objects_always_yields_valid_unique_records(
        specs: list[list[tuple[str, float, float]]]) -> None:
    times = [float(k) for k in range(len(specs))]
    image = _frame((0.1, 0.1, (30, 160, 60)))
    frames = [(t, [det(t, label, x, y) for label, x, y in spec])
              for t, spec in zip(times, specs, strict=True)]
    tracks = build_objects([(t, image) for t in times], frames, scene_id="v-s0000",
                           scene_start_s=0.0, scene_end_s=len(times), params=params(),
                           backend="b", model_version="1")
    assert [t.index for t in tracks] == list(range(len(tracks)))
    phrases = [t.referring_expression for t in tracks]
    tellable = [p for p in phrases if UNTELLABLE_MARK not in p]  # look-alikes may repeat
    assert len(set(tellable)) == len(tellable)
    assert not any("(object" in p for p in phrases)


def _tags(tags: list[list[TagScore]], tracks: list[ObjectTrack], *, min_score: float = 0.3,
          min_keyframes: int = 2, min_label_keyframes: int = 2) -> list[TagScore]:
    return scene_tags(tags, tracks, min_score=min_score, min_keyframes=min_keyframes,
                      min_label_keyframes=min_label_keyframes)


def test_scene_tags_need_consensus_and_tracked_labels() -> None:
    red, blue = _build(*_scene())
    tags = [[TagScore("tabby cat", 0.4), TagScore("Sofa", 0.9)],
            [TagScore("tabby cat", 0.7), TagScore("lamp", 0.1)]]
    # "Sofa" scores 0.9 on one keyframe only: one frame's guess is no scene word.
    assert [(t.tag, round(t.score, 6)) for t in _tags(tags, [red, blue])] == [
        ("cup", 0.8), ("tabby cat", 0.55)]
    assert [t.tag for t in _tags(tags, [red, blue], min_keyframes=1)] == [
        "cup", "tabby cat", "sofa"]
    # The mean counts a keyframe without the tag as 0.
    assert [t.tag for t in _tags(tags, [], min_keyframes=1, min_score=0.3)] == [
        "tabby cat", "sofa"]
    # A label counts only from a track seen on enough keyframes.
    assert [t.tag for t in _tags(tags, [red], min_label_keyframes=5)] == ["tabby cat"]
    assert _tags([], []) == []
    equal = _tags([[TagScore("b", 0.5), TagScore("a", 0.5)]], [], min_score=0.0)
    assert [t.tag for t in equal] == ["a", "b"]
    with pytest.raises(ValueError, match=re.escape("min_score = 1.5")):
        _tags(tags, [], min_score=1.5)
    with pytest.raises(ValueError, match=re.escape("min_keyframes = 0")):
        _tags(tags, [], min_keyframes=0)


def test_a_tagger_that_only_returns_low_scores_gives_no_scene_words() -> None:
    low = [[TagScore("window screen", 0.12), TagScore("street sign", 0.2)]] * 3
    assert _tags(low, []) == []


def test_objects_params_defaults_and_validation() -> None:
    section = Params().objects
    assert isinstance(section, ObjectParams)
    assert (section.detector, section.tagger, section.ocr) == ("embedded", "embedded", True)
    assert parse_params({"objects": {"min_hits": 3}}).objects.min_hits == 3
    with pytest.raises(ParamsError, match=re.escape("unknown key 'objects.iou'")):
        parse_params({"objects": {"iou": 0.5}})
    with pytest.raises(ParamsError, match=re.escape("objects.iou_threshold")):
        parse_params({"objects": {"iou_threshold": 0.0}})
    with pytest.raises(ParamsError, match=re.escape("objects.min_hits")):
        parse_params({"objects": {"min_hits": 0}})
