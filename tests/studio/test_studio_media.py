"""The rendered videos match the ground truth: format, cuts, and object pixels.

Frames are decoded with PyAV and compared with what ground_truth.json says, using only the
file's fields (plus the package photo an object was cut from), never the planner's objects.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import av
import numpy as np
import pytest
from PIL import Image, ImageOps
from studio_helpers import Frames, packet_s

from needleforge.studio import StudioReport
from needleforge.studio.assets import asset_path


def _frame_diff(frames: Frames, a: int, b: int) -> float:
    return float(np.abs(frames[a].astype(np.int16) - frames[b].astype(np.int16)).mean())


def test_videos_have_the_promised_format(built: StudioReport, truth: dict[str, Any]) -> None:
    for video in truth["videos"]:
        with av.open(str(built.out_dir / video["path"])) as container:
            stream = container.streams.video[0]
            packets = [p for p in container.demux(stream) if p.size]
            keyframes = sorted(packet_s(p.pts, stream.time_base) for p in packets if p.is_keyframe)
            assert stream.codec_context.name == "h264"
            assert stream.codec_context.pix_fmt == "yuv420p"
            assert (stream.codec_context.width, stream.codec_context.height) == (160, 90)
            assert stream.average_rate == video["fps"] == 10.0
            assert len(packets) == video["n_frames"] == round(video["duration_s"] * 10)
        # One keyframe per second of video, on the second.
        assert keyframes == [float(s) for s in range(math.ceil(video["duration_s"]))]


def test_every_cut_is_a_big_change_and_nothing_else_is(
    truth: dict[str, Any], decoded: dict[str, Frames]
) -> None:
    for video in truth["videos"]:
        frames = decoded[video["path"]]
        assert len(frames) == video["n_frames"]
        cut_frames = [s["start_frame"] for s in video["scenes"][1:]]
        assert [round(f / video["fps"], 6) for f in cut_frames] == video["cuts_s"]
        across = [_frame_diff(frames, f - 1, f) for f in cut_frames]
        within = [
            _frame_diff(frames, f - 1, f) for f in range(1, len(frames)) if f not in cut_frames
        ]
        assert min(across) > 20
        assert min(across) > 4 * max(within), (video["path"], across, max(within))


def test_a_shot_detector_finds_exactly_the_cuts(built: StudioReport, truth: dict[str, Any]) -> None:
    scenedetect = pytest.importorskip("scenedetect")
    for video in truth["videos"]:
        scenes = scenedetect.detect(
            str(built.out_dir / video["path"]), scenedetect.ContentDetector(min_scene_len=3)
        )
        found = [round(start.seconds, 6) for start, _ in scenes[1:]]
        assert found == video["cuts_s"], video["path"]


def _expected_sprite(obj: dict[str, Any], width: int, height: int) -> Frames:
    """The object's pixels as the ground truth describes them: crop, resize, maybe mirror."""
    size = (round(obj["box_start"][2] * width), round(obj["box_start"][3] * height))
    with Image.open(asset_path(obj["source_image"])) as img:
        sprite = img.convert("RGB").crop(tuple(obj["source_crop_px"]))
    sprite = sprite.resize(size, Image.Resampling.LANCZOS)
    if obj["mirrored"]:
        sprite = ImageOps.mirror(sprite)
    return np.asarray(sprite, dtype=np.uint8)


def _top_left(obj: dict[str, Any], frame: int, width: int, height: int) -> tuple[int, int]:
    """Ground-truth top-left pixel at ``frame``: exact linear path, rounded half up."""
    u = Fraction(frame - obj["start_frame"], obj["end_frame"] - obj["start_frame"])
    x0, y0 = round(obj["box_start"][0] * width), round(obj["box_start"][1] * height)
    x1, y1 = round(obj["box_end"][0] * width), round(obj["box_end"][1] * height)
    return math.floor(x0 + (x1 - x0) * u + Fraction(1, 2)), math.floor(
        y0 + (y1 - y0) * u + Fraction(1, 2)
    )


def _mismatch(frame: Frames, sprite: Frames, x: int, y: int) -> float:
    h, w = sprite.shape[:2]
    if x < 0 or y < 0 or y + h > frame.shape[0] or x + w > frame.shape[1]:
        return math.inf
    region = frame[y : y + h, x : x + w].astype(np.int16)
    return float(np.abs(region - sprite.astype(np.int16)).mean())


def test_objects_are_where_the_ground_truth_says(
    truth: dict[str, Any], decoded: dict[str, Frames]
) -> None:
    checked = 0
    for video in truth["videos"]:
        width, height = video["width"], video["height"]
        for obj in video["objects"]:
            sprite = _expected_sprite(obj, width, height)
            if min(sprite.shape[:2]) < 12:
                continue  # too few pixels to survive 4:2:0 chroma and x264 intact
            for frame in (obj["start_frame"], (obj["start_frame"] + obj["end_frame"]) // 2):
                image = decoded[video["path"]][frame]
                x, y = _top_left(obj, frame, width, height)
                at_truth = _mismatch(image, sprite, x, y)
                assert at_truth < 16, (obj["object_id"], frame, at_truth)
                shifted = [
                    _mismatch(image, sprite, x + dx, y + dy)
                    for dx in (-2, 0, 2)
                    for dy in (-2, 0, 2)
                    if (dx, dy) != (0, 0)
                ]
                assert at_truth < min(shifted), (obj["object_id"], frame)
                checked += 1
    assert checked >= 4


def test_objects_appear_and_vanish_on_their_frames(
    truth: dict[str, Any], decoded: dict[str, Frames]
) -> None:
    """A brief object (inside its scene) is absent the frame before it starts."""
    brief = [
        (video, obj)
        for video in truth["videos"]
        for obj in video["objects"]
        if obj["start_frame"] > video["scenes"][obj["scene_index"]]["start_frame"]
    ]
    for video, obj in brief:
        width, height = video["width"], video["height"]
        sprite = _expected_sprite(obj, width, height)
        frames = decoded[video["path"]]
        x, y = _top_left(obj, obj["start_frame"], width, height)
        before = _mismatch(frames[obj["start_frame"] - 1], sprite, x, y)
        during = _mismatch(frames[obj["start_frame"]], sprite, x, y)
        assert during < before
