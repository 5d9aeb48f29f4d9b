"""Contact sheets from a tiny real store: files, layout facts, target frames and the box."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from needleforge.nemo.stats import answer_spans
from needleforge.review import (
    build_items,
    choose_items,
    load_verdicts,
    target_segments,
)
from needleforge.review.draw import BOX, box_at, crop_box, wrap
from needleforge.review.draw import font as load_font
from needleforge.review.sheets import WIDTH
from needleforge.stages.review import review_store
from needleforge.store import Store
from tests.review.review_cases import COLOURS, KITE_BOX, World, make_world


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return make_world(tmp_path_factory.mktemp("review-world"))


@pytest.fixture(scope="module")
def review_dir(world: World, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("review-out") / "sheets"
    review_store(world.db, out, all_buckets=True)
    return out


def _sheet(folder: Path, qid: str) -> np.ndarray:
    with Image.open(folder / f"{qid}.png") as image:
        assert image.format == "PNG" and image.mode == "RGB"
        pixels: np.ndarray = np.asarray(image.convert("RGB")).astype(int)
    return pixels


def _mask(sheet: np.ndarray, rgb: tuple[int, int, int], tol: int = 24) -> np.ndarray:
    close: np.ndarray = np.abs(sheet - np.array(rgb)) <= tol
    return np.asarray(close.all(axis=2))


def _rows(mask: np.ndarray) -> np.ndarray:
    return np.flatnonzero(mask.any(axis=1))


def test_every_question_gets_a_sane_png_and_the_index_lists_it(review_dir: Path) -> None:
    for qid in ("q-obj", "q-scene", "q-multi"):
        with Image.open(review_dir / f"{qid}.png") as image:
            image.verify()
        with Image.open(review_dir / f"{qid}.png") as image:
            assert image.width == WIDTH and 500 <= image.height <= 3000, image.size
        index = (review_dir / "index.html").read_text(encoding="utf-8")
        assert f'href="{qid}.png"' in index
    assert "When does the magenta kite in the centre appear?" in index
    assert not [p for p in review_dir.iterdir() if p.name.startswith(".")]  # no scratch left


def test_answer_row_shows_the_target_scene_above_every_negative(review_dir: Path) -> None:
    sheet = _sheet(review_dir, "q-scene")
    target = _mask(sheet, COLOURS[4])  # orange scene 4
    # three answer frames of a 3 s span, each a 240x135 thumbnail of the flat colour
    assert target.sum() >= 3 * 0.9 * 240 * 135
    negatives = _mask(sheet, COLOURS[5]) | _mask(sheet, COLOURS[0])
    assert negatives.sum() >= 2 * 3 * 0.9 * 240 * 135
    assert _rows(target).max() < _rows(negatives).min()
    # the negatives never show the target colour, the answer row never a negative's
    for other in (1, 2, 3):
        assert _mask(sheet, COLOURS[other]).sum() == 0


def test_object_sheet_draws_the_box_on_the_target_frames_only(review_dir: Path) -> None:
    obj = _sheet(review_dir, "q-obj")
    magenta, yellow = _mask(obj, COLOURS[1]), _mask(obj, BOX, tol=10)
    assert magenta.sum() >= 3 * 0.5 * 240 * 135
    rows = _rows(yellow)
    assert rows.size > 0 and yellow.sum() > 3 * 300  # an outline on each answer frame
    # the box lies inside the answer row: between the magenta frames' top and bottom
    assert _rows(magenta).min() <= rows.min() and rows.max() <= _rows(magenta).max()
    # a scene question has no box at all
    assert _mask(_sheet(review_dir, "q-scene"), BOX, tol=10).sum() == 0


def test_default_selection_is_short_single_needle_with_a_limit(world: World,
                                                               tmp_path: Path) -> None:
    outcome = review_store(world.db, tmp_path / "a")
    assert [p.name for p in outcome.sheets] == ["q-obj.png", "q-scene.png"]
    assert outcome.missing_frames == 0 and outcome.report is None
    template = load_verdicts(outcome.template)
    assert sorted(v.question_id for v in template.values()) == ["q-obj", "q-scene"]
    assert not any(v.judged for v in template.values())
    limited = review_store(world.db, tmp_path / "b", all_buckets=True, limit=1)
    assert [p.name for p in limited.sheets] == ["q-multi.png"]


def test_target_segments_follow_the_release_answer_rule(world: World) -> None:
    with Store(world.db, read_only=True) as store:
        questions, montages = store.questions(), {m.montage_id: m for m in store.montages()}
        items = build_items(questions, montages.values(), objects=store.objects(),
                            verifications=store.verifications())
    for q in questions:
        montage = montages[q.montage_id]
        spans = [(s.montage_start_s, s.montage_end_s) for s in target_segments(q, montage)]
        assert spans == answer_spans(montage, q)
    by_id = {i.question_id: i for i in items}
    assert by_id["q-multi"].needles == 2 and by_id["q-multi"].verifier_passed is None
    assert by_id["q-obj"].verifier_passed is True and by_id["q-scene"].verifier_passed is False
    assert [i.question_id for i in choose_items(items)] == ["q-obj", "q-scene"]
    with pytest.raises(ValueError, match="limit = 0"):
        choose_items(items, limit=0)


def test_vanished_video_gives_placeholders_not_a_crash(world: World, tmp_path: Path) -> None:
    moved = tmp_path / "gone.mp4"
    Path(world.video.stored_path).rename(moved)
    try:
        outcome = review_store(world.db, tmp_path / "out", limit=1)
    finally:
        moved.rename(world.video.stored_path)
    assert outcome.missing_frames == 3 + 3 * 3  # answer frames + three negatives of three
    assert len(outcome.sheets) == 1


def test_box_interpolation_wrapping_and_crop(world: World) -> None:
    assert box_at(world.kite, 4.25) == KITE_BOX
    assert box_at(world.kite, 2.6) == KITE_BOX  # within reach of the first box
    assert box_at(world.kite, 2.0) is None and box_at(world.kite, 6.5) is None
    face = load_font(14)
    lines = wrap("a " * 200 + "x" * 300, face, 200)
    assert all(face.getlength(line) <= 200 for line in lines) and len(lines) > 5
    crop = crop_box(np.zeros((90, 160, 3), np.uint8), KITE_BOX, margin=0.0)
    assert crop.shape == (46, 80, 3)  # rows 22.5–67.5 taken outward: 22..67
