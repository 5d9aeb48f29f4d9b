"""The render stage leaves out montages no release can ship (issue 33: work not repeated).

The store of :mod:`tests.release.release_cases`: ``m-failed``'s one question failed
verification; ``m-shared`` has one question passed and one refused by a second verifier;
``m-unverified``'s question was never verified; ``m-multi``'s question fails in variant 1.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from needleforge.params import ReleaseParams
from needleforge.records import Montage
from needleforge.release import build_release
from needleforge.stages.release import read_release_data
from needleforge.stages.render import render_inputs, shippable
from tests.release.release_cases import (
    CASE_PARAMS,
    make_renders,
    make_store,
    montages,
    questions,
    verdicts,
)


def _ids(kept: list[Montage]) -> list[str]:
    return [m.montage_id for m in kept]


def test_a_montage_whose_every_question_failed_is_left_out() -> None:
    kept, refused = shippable(montages(), questions(0), verdicts(0), release=ReleaseParams())
    assert refused == ("m-failed",)
    assert _ids(kept) == ["m-obj", "m-multi", "m-shared", "m-unverified"]  # store order kept


def test_the_release_rule_decides_what_refused_means() -> None:
    # Variant 1: q-multi fails too, and q-unverified is verified and passes.
    _, refused = shippable(montages(), questions(1), verdicts(1), release=ReleaseParams())
    assert refused == ("m-failed", "m-multi")
    # m-shared stays either way: one of its questions passes every verifier.
    lenient = ReleaseParams(require_all_verdicts=False)
    assert shippable(montages(), questions(0), verdicts(0), release=lenient)[1] == ("m-failed",)


def test_unverified_and_unasked_montages_are_still_rendered() -> None:
    kept, refused = shippable(montages(), questions(0), [], release=ReleaseParams())
    assert refused == () and len(kept) == len(montages())
    kept, refused = shippable(montages(), [], verdicts(0), release=ReleaseParams())
    assert refused == () and len(kept) == len(montages())


def test_everything_a_release_ships_is_rendered(tmp_path: Path) -> None:
    db = make_store(tmp_path / "nf.duckdb")
    read = render_inputs(db=db, release=CASE_PARAMS.release)
    assert read.refused == ("m-failed",)
    report = build_release(data=read_release_data(db), name="v1", out_root=tmp_path / "rel",
                           render_dir=make_renders(tmp_path / "renders"), params=CASE_PARAMS)
    shipped = {p.stem for p in (report.path / "videos").glob("*.mp4")}
    assert shipped and shipped <= set(_ids(read.montages))


@pytest.mark.parametrize("variant", [0, 1])
def test_no_released_montage_is_ever_refused(tmp_path: Path, variant: int) -> None:
    db = make_store(tmp_path / "nf.duckdb", variant=variant)
    refused = set(render_inputs(db=db, release=CASE_PARAMS.release).refused)
    data = read_release_data(db)
    report = build_release(data=data, name="v1", out_root=tmp_path / "rel", render_dir=None,
                           params=CASE_PARAMS)
    released = {q.montage_id for q in data.questions if q.question_id not in report.failed
                and q.question_id not in report.unverified}
    assert released and not released & refused
