"""The active picture: letterbox and pillarbox bars are found and cut, nothing else is.

Frames are made in numpy (bars of exact sizes around a lit, textured picture) and by ffmpeg
lavfi through H.264 and back (the bars as a decoder gives them, with the ringing next to the
picture), as the NeMo check decodes real footage.
"""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from needleforge.backends.active_picture import DARK, Picture, active_picture
from needleforge.errors import BackendError
from needleforge.records import Box
from tests.conftest import ffmpeg

W, H = 640, 360


def _content(width: int, height: int, seed: int = 0) -> np.ndarray:
    """A lit, textured picture (no line of it dark)."""
    rng = np.random.default_rng(seed)
    return rng.integers(40, 256, size=(height, width, 3), dtype=np.uint8)


def _boxed(left: int, top: int, width: int, height: int, *, bar: int = 0) -> np.ndarray:
    frame = np.full((H, W, 3), bar, dtype=np.uint8)
    frame[top:top + height, left:left + width] = _content(width, height)
    return frame


@pytest.mark.parametrize(("left", "top", "width", "height"), [
    (80, 0, 480, 360),    # 4:3 pillarboxed in 16:9
    (0, 44, 640, 272),    # 2.35:1 letterboxed
    (40, 30, 560, 300),   # windowboxed
    (219, 0, 202, 360),   # 9:16 phone video: 0.32 of the width
    (0, 0, 640, 360),     # no bars
])
def test_bars_are_cut(left: int, top: int, width: int, height: int) -> None:
    picture = active_picture(_boxed(left, top, width, height))
    assert picture == Picture(left, top, width, height, W, H)
    assert picture.whole == (width == W and height == H)


def test_bars_of_near_black_with_a_few_lit_pixels_are_bars() -> None:
    frame = _boxed(80, 0, 480, 360, bar=DARK)  # limited-range black decoded a little high
    frame[100, 10] = frame[200, 600] = 255  # a dead pixel, a speck of noise
    assert active_picture(frame) == Picture(80, 0, 480, 360, W, H)


def test_a_black_frame_has_no_picture() -> None:
    assert active_picture(np.zeros((H, W, 3), dtype=np.uint8)) is None
    assert active_picture(np.full((H, W, 3), DARK, dtype=np.uint8)) is None


@pytest.mark.parametrize("value", [25, 128, 255])
def test_flat_frames_that_are_not_black_are_whole(value: int) -> None:
    assert active_picture(np.full((H, W, 3), value, dtype=np.uint8)).whole


def test_a_sky_gradient_is_whole() -> None:
    sky = np.linspace(30, 230, H, dtype=np.float64)[:, None, None] * np.array([0.7, 0.85, 1.0])
    frame = np.broadcast_to(sky, (H, W, 3)).astype(np.uint8)
    assert active_picture(frame).whole


def test_a_shadow_on_one_side_is_picture() -> None:
    # Bars come in pairs: a dark left third with a lit right is a shadow, not a pillarbox.
    frame = _boxed(0, 0, W, H)
    frame[:, :200] = 0
    assert active_picture(frame).whole
    frame[:, -60:] = 0  # a thinner dark run on the right: that much is cut on both sides
    assert active_picture(frame) == Picture(60, 0, W - 120, H, W, H)


def test_a_small_lit_thing_on_black_is_not_a_picture_in_bars() -> None:
    # A spotlit object, credits on black: cutting to it would hand the detector a close-up.
    frame = _boxed(270, 150, 100, 60)
    assert active_picture(frame).whole


def test_boxes_map_back_to_the_frame() -> None:
    picture = Picture(80, 0, 480, 360, W, H)
    box = picture.to_frame(Box(x=0.0, y=0.5, w=1.0, h=0.5))
    assert (box.x, box.y, box.w, box.h) == pytest.approx((0.125, 0.5, 0.75, 0.5))
    frame = _boxed(80, 0, 480, 360)
    np.testing.assert_array_equal(picture.crop(frame), frame[:, 80:560])


def test_a_picture_outside_its_frame_is_refused() -> None:
    with pytest.raises(ValueError, match="inside the 640x360 frame"):
        Picture(600, 0, 80, 360, W, H)


def test_an_image_that_is_not_rgb_is_refused() -> None:
    with pytest.raises(BackendError):
        active_picture(np.zeros((H, W), dtype=np.uint8))


@settings(max_examples=60, deadline=None)
@given(side_bar=st.integers(0, 200), top_bar=st.integers(0, 120), seed=st.integers(0, 9))
def test_symmetric_bars_are_found_exactly(side_bar: int, top_bar: int, seed: int) -> None:
    width, height = W - 2 * side_bar, H - 2 * top_bar
    frame = np.zeros((H, W, 3), dtype=np.uint8)
    frame[top_bar:top_bar + height, side_bar:side_bar + width] = _content(width, height, seed)
    assert active_picture(frame) == Picture(side_bar, top_bar, width, height, W, H)


def _encoded(tmp_path: Path, lavfi: str) -> np.ndarray:
    """The 5th frame of ``lavfi`` encoded as H.264 (yuv420p, CRF 30) and decoded to RGB."""
    clip = tmp_path / "clip.mp4"
    ffmpeg("-f", "lavfi", "-i", lavfi, "-frames:v", "5", "-c:v", "libx264",
           "-pix_fmt", "yuv420p", "-crf", "30", str(clip))
    with av.open(str(clip)) as container:
        frames = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    return frames[-1]


@pytest.mark.parametrize(("lavfi", "expected"), [
    # ffmpeg -f lavfi -i "testsrc2=size=480x360:rate=5,pad=640:360:80:0:black"
    ("testsrc2=size=480x360:rate=5,pad=640:360:80:0:black", (80, 0, 480, 360)),
    ("testsrc2=size=640x272:rate=5,pad=640:360:0:44:black", (0, 44, 640, 272)),
])
def test_bars_of_an_encoded_clip_are_cut(tmp_path: Path, lavfi: str,
                                         expected: tuple[int, int, int, int]) -> None:
    picture = active_picture(_encoded(tmp_path, lavfi))
    assert picture is not None
    # chroma subsampling and ringing may light the one or two bar lines next to the picture
    got = (picture.x, picture.y, picture.w, picture.h)
    assert all(abs(g - e) <= 2 for g, e in zip(got, expected, strict=True)), got
