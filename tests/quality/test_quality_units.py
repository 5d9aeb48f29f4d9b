"""Quality gate pieces that need no Great Expectations: DataFrames, config, params, reports.

These run in well under a second: the SQL facts (gaps, overlaps, licence days) and the release
facts (letters, tries, spans) are checked here directly, so the GX tests only need to show that
each fact reaches a named expectation.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from needleforge.errors import StoreError
from needleforge.params import Params, ParamsError, QualityParams, parse_params
from needleforge.quality import Failure, GateResult, QualityError, SuiteOutcome, run_gate
from needleforge.quality.context import render_config
from needleforge.quality.gate import read_questions_jsonl
from needleforge.quality.release_frame import release_frame
from needleforge.stages.validate import store_frames
from tests.quality.quality_helpers import (
    CHECK_DAY,
    build_clean_store,
    choice_tries,
    clean_release,
    copy_db,
    grounding,
    sql,
)

REPO = Path(__file__).resolve().parents[2]
PARAMS = QualityParams(as_of=CHECK_DAY)


@pytest.fixture(scope="module")
def clean_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_clean_store(tmp_path_factory.mktemp("units") / "clean.duckdb")


def _rows(frame: Any, key: str) -> dict[Any, dict[str, Any]]:
    return {r[key]: r for r in frame.to_dict(orient="records")}


def test_committed_gx_config_is_the_rendered_one() -> None:
    committed = (REPO / "expectations" / "great_expectations.yml").read_text(encoding="utf-8")
    assert committed == render_config()
    ignored = (REPO / "expectations" / ".gitignore").read_text(encoding="utf-8")
    assert "uncommitted/" in ignored and "suites/" in ignored


def test_quality_params_defaults_and_unknown_keys() -> None:
    quality = Params().quality
    assert quality.min_pass_rate == 0.5 and quality.required_scopes == ["benchmark"]
    assert QualityParams(as_of=CHECK_DAY).today() == CHECK_DAY
    with pytest.raises(ParamsError, match=r"unknown key 'quality\.min_pass_rat'"):
        parse_params({"quality": {"min_pass_rat": 0.9}})
    with pytest.raises(ParamsError, match=r"quality\.min_pass_rate"):
        parse_params({"quality": {"min_pass_rate": 1.5}})


def test_store_frames_compute_gaps_overlaps_and_licences(clean_db: Path, tmp_path: Path) -> None:
    frames = store_frames(clean_db, params=PARAMS)
    assert {n: len(f) for n, f in frames.items()} == {
        "videos": 2, "scenes": 5, "objects": 2, "montages": 2, "montage_segments": 7,
        "questions": 2, "verifications": 2}
    assert frames["scenes"]["gap_s"].abs().max() == 0.0
    videos = frames["videos"]
    assert set(videos["missing_scopes"]) == {""}
    assert set(videos["licence_days_left"]) == {(dt.date(2099, 12, 31) - CHECK_DAY).days}
    segments = _rows(frames["montage_segments"].query("montage_id == 'm-multi'"), "position")
    assert [segments[p]["n_pieces"] for p in (0, 2)] == [2, 2]
    assert segments[2]["target_gap_s"] == 30.0 and math.isnan(segments[0]["target_gap_s"])
    assert math.isnan(segments[1]["n_pieces"])  # negatives are no needle pieces

    broken = sql(copy_db(clean_db, into=tmp_path),
                 "UPDATE videos SET scope = ['research'], valid_until = DATE '2030-05-30'",
                 "UPDATE scenes SET start_s = start_s + 0.5 WHERE idx = 1")
    frames = store_frames(broken, params=PARAMS)
    assert set(frames["videos"]["missing_scopes"]) == {"benchmark"}
    assert set(frames["videos"]["licence_days_left"]) == {-2}
    assert sorted(frames["scenes"]["gap_s"].round(6)) == [0, 0, 0, 0.5, 0.5]


def test_missing_store_or_column_is_a_store_error(clean_db: Path, tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="store not found"):
        store_frames(tmp_path / "nope.duckdb", params=PARAMS)
    # A store written before a column was added under the same schema version.
    stale = sql(copy_db(clean_db, into=tmp_path),
                "ALTER TABLE montage_segments DROP COLUMN target_id")
    with pytest.raises(StoreError, match="cannot read the montage_segments table"):
        store_frames(stale, params=PARAMS)


def test_release_frame_facts() -> None:
    records: list[Any] = [
        *clean_release(),
        grounding("q-out", [(-1.0, 2.0), (50.0, 61.0)]),
        grounding("q-bad", [[3.0, 1.0], ["x", 2]]),
        {"question_id": "q-both", "answer_spans": [], "options": []},
        "not an object",
    ]
    frame = _rows(release_frame(records), "key")
    assert frame["q-short"]["needles"] == "single" and frame["q-multi"]["needles"] == "multi"
    assert frame["q-multi"]["span_min_len_s"] == 3.0
    assert frame["q-out"]["span_start_min_s"] == -1.0 and frame["q-out"]["span_overrun_s"] == 1.0
    assert frame["q-bad"]["n_bad_spans"] == 2
    assert frame["q-both"]["kind"] == "ambiguous"
    assert frame["'not an object'"]["kind"] == "not_an_object"
    tries = [frame[f"s1#{t}"] for t in range(4)]
    assert {r["sample_letters"] for r in tries} == {"ABCD"}
    assert {r["sample_tries"] for r in tries} == {"0123"}
    assert {(r["n_correct_options"], r["n_distinct_options"], r["sample_answers"])
            for r in tries} == {(1, 4, 1)}


def test_release_frame_flags_duplicate_answers_and_missing_tries() -> None:
    tries = choice_tries("s2", options=("Alice", "Bob", " bob", "Dave"))[:3]
    rows = release_frame(tries).to_dict(orient="records")
    assert {r["sample_tries"] for r in rows} == {"012"}
    assert {r["n_correct_options"] for r in rows} == {2}
    assert {r["n_distinct_options"] for r in rows} == {3}


@given(st.permutations(["w", "x", "y", "z"]), st.integers(0, 3))
def test_true_rotations_always_balance_letters(options: list[str], answer: int) -> None:
    rows = release_frame(choice_tries("s", options=options, answer=answer))
    assert set(rows["sample_letters"]) == {"ABCD"}
    assert set(rows["sample_answers"]) == {1}


def test_read_questions_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps(grounding("a", [(1, 2)])) + "\n\n[1]\n", encoding="utf-8")
    assert [r if isinstance(r, list) else r["question_id"]
            for r in read_questions_jsonl(path)] == ["a", [1]]
    path.write_text('{"a": 1}\n{oops\n', encoding="utf-8")
    with pytest.raises(QualityError, match="line 2 is not JSON"):
        read_questions_jsonl(path)
    with pytest.raises(QualityError, match="not found"):
        read_questions_jsonl(tmp_path / "missing.jsonl")


def test_unknown_suite_is_refused_before_any_work(tmp_path: Path) -> None:
    with pytest.raises(QualityError, match=r"unknown suites \['scene'\]"):
        run_gate(tables={}, release_questions=None, out_dir=tmp_path, params=PARAMS,
                 only=["scene"])


def test_gate_result_text_names_every_failure() -> None:
    failure = Failure("scenes", "expect_column_values_to_be_between", "gap_s",
                      "1 of 5 rows unexpected, e.g. [0.5]", "gap_s must be 0. Offending rows: "
                      "scene_id='v1-s0001'.", check="scenes_tile")
    result = GateResult(passed=False, failures=[failure], suites=[
        SuiteOutcome("videos", "passed", 2, 7), SuiteOutcome("scenes", "failed", 5, 6, 1),
        SuiteOutcome("release", "skipped", 0, note="no release questions given")])
    text = result.to_text()
    assert text.splitlines()[0] == "quality gate FAILED (1 expectations)"
    assert "FAIL scenes.scenes_tile: expect_column_values_to_be_between(gap_s)" in text
    assert "scene_id='v1-s0001'" in text and "skipped: no release questions given" in text
    assert result.failed_checks == {"scenes.scenes_tile"}
    assert result.to_dict()["failures"][0]["check"] == "scenes_tile"
