"""Needle assets: the package-built image set, folder layouts, Tux Paint import, motion clips."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from needleforge.vnbench.assets import (
    BUILTIN_IMAGES,
    build_builtin_images,
    import_tuxpaint,
    load_image_sets,
    load_rgb,
)
from needleforge.vnbench.clip_seconds import decode_file
from needleforge.vnbench.clips import MOTIONS, build_builtin_clips, load_clip_sets, motion_frames
from needleforge.vnbench.names import SECRET_NAMES
from needleforge.vnbench.records import VNBenchError

TUXPAINT = Path("/usr/share/tuxpaint/stamps")


@pytest.fixture(scope="module")
def builtin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_builtin_images(tmp_path_factory.mktemp("vnb-assets"))


def test_builtin_set_covers_the_four_categories(builtin: Path) -> None:
    images, skips = load_image_sets([builtin])
    assert skips == [] and len(images.images) == len(BUILTIN_IMAGES)
    categories = {i.category for i in images.images}
    assert categories == {"fruit", "animal", "object", "landmark"}
    assert len(images.labels(["fruit", "animal", "object"])) >= 8  # level 1 (ordering: 4)
    assert len(images.labels(["landmark"])) >= 4  # level 2
    assert len(images.of_label("cat")) == 2
    for image in images.images:
        rgb = load_rgb(image.path)
        assert rgb.ndim == 3 and min(rgb.shape[:2]) >= 100 and max(rgb.shape[:2]) <= 720


def test_builtin_set_is_byte_identical_when_rebuilt(builtin: Path, tmp_path: Path) -> None:
    again = build_builtin_images(tmp_path)
    first = {p.relative_to(builtin): p.read_bytes() for p in builtin.rglob("*.png")}
    second = {p.relative_to(again): p.read_bytes() for p in again.rglob("*.png")}
    assert first == second
    assert build_builtin_images(tmp_path) == again  # present: reused, not rebuilt


def write_png(path: Path, colour: tuple[int, int, int, int]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGBA", (40, 30), colour).save(path)


def test_folder_layout_rules(tmp_path: Path) -> None:
    mine, other = tmp_path / "mine", tmp_path / "other"
    write_png(mine / "fruit" / "apple" / "a.png", (200, 0, 0, 255))
    write_png(mine / "fruit" / "apple" / "b.png", (0, 200, 0, 255))
    write_png(mine / "fruit" / "pear, green" / "p.png", (0, 200, 0, 255))
    write_png(mine / "fruit" / ".hidden" / "h.png", (0, 0, 0, 255))
    (mine / "fruit" / "apple" / "notes.txt").write_text("not an image")
    write_png(other / "object" / "apple" / "c.png", (0, 0, 200, 255))
    write_png(other / "fruit" / "apple" / "d.png", (9, 9, 9, 255))
    images, skips = load_image_sets([mine, other])
    assert [(i.category, i.label, i.path.name) for i in images.images] == [
        ("fruit", "apple", "a.png"), ("fruit", "apple", "b.png"), ("fruit", "apple", "d.png")]
    reasons = sorted(s.reason for s in skips)
    assert reasons == ["a label must not contain a comma",
                       "label 'apple' is already in category 'fruit'"]
    with pytest.raises(VNBenchError, match="not a directory"):
        load_image_sets([tmp_path / "missing"])


def test_transparent_pixels_get_a_white_matte(tmp_path: Path) -> None:
    write_png(tmp_path / "clear.png", (255, 0, 0, 0))
    assert (load_rgb(tmp_path / "clear.png") == 255).all()
    with pytest.raises(VNBenchError, match="not a readable image"):
        (tmp_path / "bad.png").write_text("nope")
        load_rgb(tmp_path / "bad.png")


def test_tuxpaint_layout_from_a_fake_stamps_tree(tmp_path: Path) -> None:
    stamps = tmp_path / "stamps"
    write_png(stamps / "food" / "fruit" / "apple_red.png", (200, 0, 0, 255))
    (stamps / "food" / "fruit" / "apple_red.txt").write_text("A red apple.\nfr.utf8=Pomme\n")
    write_png(stamps / "animals" / "mammals" / "giraffe2.png", (200, 200, 0, 255))
    write_png(stamps / "animals" / "cartoon" / "tux.png", (0, 0, 0, 255))
    write_png(stamps / "town" / "monuments" / "obelisk.png", (90, 90, 90, 255))
    (stamps / "town" / "monuments" / "obelisk.txt").write_text("An obelisk.\n")
    images, skips = load_image_sets([import_tuxpaint(stamps, cache_dir=tmp_path / "cache")])
    assert skips == []
    assert [(i.category, i.label) for i in images.images] == [
        ("animal", "giraffe"), ("fruit", "red apple"), ("landmark", "obelisk")]
    with pytest.raises(VNBenchError, match="tuxpaint-stamps-default"):
        import_tuxpaint(tmp_path / "nowhere", cache_dir=tmp_path / "cache")


@pytest.mark.skipif(not TUXPAINT.is_dir(), reason="Debian tuxpaint-stamps-default not installed")
def test_real_tuxpaint_stamps_when_installed(tmp_path: Path) -> None:
    images, _ = load_image_sets([import_tuxpaint(TUXPAINT, cache_dir=tmp_path)])
    assert len(images.labels(["fruit"])) >= 10 and len(images.labels(["landmark"])) >= 4


def test_names_are_unique_and_exercise_escaping() -> None:
    assert len(set(SECRET_NAMES)) == len(SECRET_NAMES) >= 40
    assert any("'" in n for n in SECRET_NAMES) and any('"' in n for n in SECRET_NAMES)
    assert not any("," in n for n in SECRET_NAMES)
    assert any("\u4e00" <= c <= "\u9fff" for n in SECRET_NAMES for c in n)


def ball_x(frame: np.ndarray) -> float:
    red = (frame[..., 0] > 150) & (frame[..., 1] < 120)
    return float(np.nonzero(red)[1].mean())


def test_motion_clips_do_what_their_labels_say(tmp_path: Path) -> None:
    frames = list(motion_frames("ball rolling left to right", seconds=1))
    assert len(frames) == 25 and ball_x(frames[0]) < ball_x(frames[12]) < ball_x(frames[-1])
    back = list(motion_frames("ball rolling right to left", seconds=1))
    assert ball_x(back[0]) > ball_x(back[-1])
    root = build_builtin_clips(tmp_path, seconds=1)
    clips, skips = load_clip_sets([root])
    assert skips == [] and clips.labels() == tuple(sorted(MOTIONS))
    decoded = decode_file(clips.of_label("ball rolling left to right")[0].path)
    assert len(decoded) == 25 and ball_x(decoded[0]) < ball_x(decoded[-1])
    with pytest.raises(VNBenchError, match="no built-in motion"):
        next(motion_frames("ball juggling", seconds=1))
