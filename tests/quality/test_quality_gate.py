"""The quality gate end to end with Great Expectations: clean data passes, each broken rule
fails the gate with its expectation named.

Every rule test copies one clean store, breaks exactly one thing with SQL (or one release
record), and asserts the *exact* set of failing checks, so a rule that fires too widely fails
as surely as one that never fires. Rule tests validate only the suite they break (``only``)
to stay fast; the clean run and the report tests run every suite and build the Data Docs.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from needleforge.params import Params, QualityParams
from needleforge.quality import GateResult, run_gate
from needleforge.quality.gate import GATE_STEPS, SUITE_NAMES
from needleforge.quality.suites import SUITES
from needleforge.stages.validate import run_checks, store_frames
from needleforge.store import Store
from tests.quality.quality_helpers import (
    CHECK_DAY,
    build_clean_store,
    choice_tries,
    clean_release,
    copy_db,
    grounding,
    sql,
)

PARAMS = QualityParams(as_of=CHECK_DAY)
REPO_CONTEXT = Path(__file__).resolve().parents[2] / "expectations"


@pytest.fixture(scope="module")
def clean_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_clean_store(tmp_path_factory.mktemp("gate") / "clean.duckdb")


@pytest.fixture(scope="module")
def clean_run(clean_db: Path, tmp_path_factory: pytest.TempPathFactory) -> GateResult:
    """One full gate over the clean store and release (shared: GX runs cost seconds)."""
    before = _snapshot(REPO_CONTEXT)
    result = run_gate(tables=store_frames(clean_db, params=PARAMS),
                      release_questions=clean_release(),
                      out_dir=tmp_path_factory.mktemp("release"), params=PARAMS)
    assert _snapshot(REPO_CONTEXT) == before, "a gate run must not touch expectations/"
    return result


def _snapshot(folder: Path) -> dict[str, float]:
    return {str(p.relative_to(folder)): p.stat().st_mtime for p in folder.rglob("*")}


def _gate(db: Path, *, out: Path, suite: str, records: Sequence[Any] | None = None,
          params: QualityParams = PARAMS) -> GateResult:
    return run_gate(tables=store_frames(db, params=params), release_questions=records,
                    out_dir=out, params=params, only=[suite])


def _broken(clean_db: Path, *statements: str, folder: Path, suite: str,
            params: QualityParams = PARAMS) -> GateResult:
    """Copy the clean store into ``folder``, apply ``statements``, validate ``suite``."""
    result = _gate(sql(copy_db(clean_db, into=folder), *statements), out=folder, suite=suite,
                   params=params)
    assert not result.passed
    return result


@pytest.mark.slow
def test_clean_store_and_release_pass_every_suite(clean_run: GateResult) -> None:
    assert clean_run.passed, clean_run.to_text()
    assert clean_run.failures == []
    assert [(s.suite, s.status) for s in clean_run.suites] == [
        *((name, "passed") for name in ("videos", "scenes", "objects", "montages",
                                        "montage_segments", "questions", "verifications",
                                        "release")), ("release_sources", "skipped"),
        ("release_bias", "passed")]
    assert all(s.n_expectations > 0 and s.n_rows > 0 for s in clean_run.suites
               if s.status != "skipped")


@pytest.mark.slow
def test_clean_run_builds_data_docs_and_summary(clean_run: GateResult) -> None:
    assert clean_run.docs_index is not None and clean_run.docs_index.name == "index.html"
    report = clean_run.docs_index.parent
    assert report.name == "quality"
    assert "<html" in clean_run.docs_index.read_text(encoding="utf-8").lower()
    suites = {p.stem for p in (report / "expectations").glob("*.html")}
    assert suites == {s.suite for s in clean_run.suites if s.status != "skipped"}
    assert len(list((report / "validations").rglob("*.html"))) == len(suites)
    assert clean_run.summary_path is not None
    assert json.loads(clean_run.summary_path.read_text())["passed"] is True


def test_the_gate_counts_its_steps_selected_or_not(clean_db: Path, tmp_path: Path) -> None:
    steps: list[tuple[int, int]] = []
    result = run_gate(tables=store_frames(clean_db, params=PARAMS), release_questions=None,
                      out_dir=tmp_path, params=PARAMS, only=["videos"],
                      on_step=lambda d, t: steps.append((d, t)))
    assert result.passed
    assert steps == [(d, GATE_STEPS) for d in range(1, GATE_STEPS + 1)]


@pytest.mark.parametrize(("shift", "meaning"), [(0.5, "gap"), (-0.5, "overlap")])
def test_scene_gap_or_overlap_fails(clean_db: Path, tmp_path: Path, shift: float,
                                    meaning: str) -> None:
    result = _broken(clean_db, f"UPDATE scenes SET start_s = start_s + {shift} WHERE idx = 1",
                     folder=tmp_path, suite="scenes")
    assert result.failed_checks == {"scenes.scenes_tile"}, meaning
    failure = result.failures[0]
    assert failure.column == "gap_s" and failure.expectation == "expect_column_values_to_be_between"
    assert "2 of 5 rows" in failure.observed and "-s0001'" in failure.details


@pytest.mark.parametrize(("bucket", "check"), [("medium", "medium_in_bucket"),
                                               ("long", "long_in_bucket")])
def test_montage_outside_its_bucket_fails(clean_db: Path, tmp_path: Path, bucket: str,
                                          check: str) -> None:
    result = _broken(clean_db,
                     f"UPDATE montages SET bucket = '{bucket}' WHERE montage_id = 'm-short'",
                     folder=tmp_path, suite="montages")
    assert result.failed_checks == {f"montages.{check}"}
    assert "montage_id='m-short'" in result.failures[0].details


def test_overlapping_target_segments_fail(clean_db: Path, tmp_path: Path) -> None:
    # The second piece of m-multi moves onto the first: needles overlap (and tiling breaks).
    result = _broken(clean_db, "UPDATE montage_segments SET montage_start_s = 2.0 "
                     "WHERE montage_id = 'm-multi' AND position = 2", folder=tmp_path,
                     suite="montage_segments")
    assert result.failed_checks == {"montage_segments.targets_do_not_overlap",
                                    "montage_segments.segments_tile"}


def test_short_multi_needle_piece_fails(clean_db: Path, tmp_path: Path) -> None:
    # The first 3 s piece shrinks to 1.5 s; the next segment grows so tiling still holds.
    result = _broken(clean_db, "UPDATE montage_segments SET src_end_s = 1.5 "
                     "WHERE montage_id = 'm-multi' AND position = 0",
                     "UPDATE montage_segments SET montage_start_s = 1.5, src_end_s = 31.5 "
                     "WHERE montage_id = 'm-multi' AND position = 1", folder=tmp_path,
                     suite="montage_segments")
    assert result.failed_checks == {"montage_segments.multi_needle_piece_length"}


@pytest.mark.slow
def test_expired_licence_fails_the_full_gate(clean_db: Path, tmp_path: Path) -> None:
    db = sql(copy_db(clean_db, into=tmp_path),
             "UPDATE videos SET valid_until = DATE '2030-05-31' WHERE title = 'a'")
    result = run_gate(tables=store_frames(db, params=PARAMS), release_questions=None,
                      out_dir=tmp_path, params=PARAMS)
    assert not result.passed
    assert result.failed_checks == {"videos.licence_valid"}
    assert "observed 1 of 2 rows unexpected, e.g. [-1]" in result.to_text()
    assert [s.status for s in result.suites if s.suite == "release"] == ["skipped"]
    summary = json.loads((tmp_path / "quality" / "summary.json").read_text())
    assert [f["check"] for f in summary["failures"]] == ["licence_valid"]


def test_licence_without_benchmark_scope_fails(clean_db: Path, tmp_path: Path) -> None:
    result = _broken(clean_db, "UPDATE videos SET scope = ['research']", folder=tmp_path,
                     suite="videos")
    assert result.failed_checks == {"videos.scope_granted"}


def test_low_verification_pass_rate_fails(clean_db: Path, tmp_path: Path) -> None:
    statement = "UPDATE verifications SET passed = false WHERE question_id = 'q-m-short'"
    strict = QualityParams(as_of=CHECK_DAY, min_pass_rate=0.75)
    result = _broken(clean_db, statement, folder=tmp_path, suite="verifications",
                     params=strict)
    assert result.failed_checks == {"verifications.pass_rate"}
    assert result.failures[0].observed == "0.5"
    # The threshold is inclusive: exactly the default 50 % passes.
    other = tmp_path / "default"
    other.mkdir()
    again = _gate(sql(copy_db(clean_db, into=other), statement), out=other,
                  suite="verifications")
    assert again.passed, again.to_text()


def test_question_without_verdict_fails(clean_db: Path, tmp_path: Path) -> None:
    result = _broken(clean_db, "DELETE FROM verifications WHERE question_id = 'q-m-multi'",
                     folder=tmp_path, suite="questions")
    assert result.failed_checks == {"questions.question_has_verdict"}


def test_blank_referring_expression_and_overlong_visibility_fail(
        clean_db: Path, tmp_path: Path) -> None:
    result = _broken(clean_db, "UPDATE objects SET referring_expression = '  ' WHERE idx = 0",
                     "UPDATE objects SET visible_s = 8.5 WHERE idx = 1", folder=tmp_path,
                     suite="objects")
    assert result.failed_checks == {"objects.referring_expression_not_empty",
                                    "objects.visible_within_track"}


def _release(clean_db: Path, tmp_path: Path, records: Sequence[Any]) -> GateResult:
    return _gate(clean_db, out=tmp_path, suite="release", records=records)


def test_unbalanced_answer_letters_fail(clean_db: Path, tmp_path: Path) -> None:
    # Four "rotations" that never rotate: the answer always sits under B.
    tries = [{**t, "options": ["Alice", "Bob", "Carol", "Dave"], "answer_index": 1}
             for t in choice_tries("s9")]
    result = _release(clean_db, tmp_path, [*clean_release(), *tries])
    assert result.failed_checks == {"release.letters_balanced"}
    assert "'BBBB'" in result.failures[0].observed and "key='s9#0'" in result.failures[0].details


def test_two_correct_options_fail(clean_db: Path, tmp_path: Path) -> None:
    tries = choice_tries("s9", options=("Alice", "Bob", "bob", "Dave"))
    result = _release(clean_db, tmp_path, [*clean_release(), *tries])
    assert result.failed_checks == {"release.one_correct_option", "release.options_distinct"}


def test_missing_try_fails(clean_db: Path, tmp_path: Path) -> None:
    result = _release(clean_db, tmp_path, [*clean_release(), *choice_tries("s9")[:3]])
    assert result.failed_checks == {"release.tries_complete", "release.letters_balanced"}


@pytest.mark.parametrize(("span", "check"), [((55.0, 61.0), "spans_end_inside"),
                                             ((-0.5, 4.0), "spans_start_inside")])
def test_answer_span_outside_the_video_fails(clean_db: Path, tmp_path: Path,
                                             span: tuple[float, float], check: str) -> None:
    result = _release(clean_db, tmp_path, [*clean_release(), grounding("q-out", [span])])
    assert result.failed_checks == {f"release.{check}"}
    assert "key='q-out'" in result.failures[0].details


def test_needle_counts_must_match_multi_needle_spans(clean_db: Path, tmp_path: Path) -> None:
    bad = grounding("q-m2", [(0.0, 1.5), (33.0, 36.0)], n_needles=1)
    result = _release(clean_db, tmp_path, [*clean_release(), bad])
    assert result.failed_checks == {"release.needles_match_spans",
                                    "release.multi_needles_at_least_two",
                                    "release.multi_needle_piece_length",
                                    "release.answer_window_length"}  # 1.5 s < 3 s


@pytest.mark.parametrize(("span", "minimum", "fails"), [
    ((10.0, 12.9), 3.0, True),     # 2.9 s: shorter than the default 3 s
    ((10.0, 13.0), 3.0, False),    # exactly 3 s passes
    ((10.0, 12.0), 2.0, False),    # a lower minimum lets a 2 s window through
])
def test_the_shortest_answer_window_is_checked(clean_db: Path, tmp_path: Path,
                                               span: tuple[float, float], minimum: float,
                                               fails: bool) -> None:
    params = QualityParams(as_of=CHECK_DAY, min_answer_window_s=minimum)
    result = _gate(clean_db, out=tmp_path, suite="release", params=params,
                   records=[*clean_release(), grounding("q-brief", [span])])
    assert result.failed_checks == ({"release.answer_window_length"} if fails else set())
    if fails:
        assert "key='q-brief'" in result.failures[0].details


def test_release_duration_outside_bucket_and_bad_records_fail(
        clean_db: Path, tmp_path: Path) -> None:
    records = [*clean_release(), grounding("q-long", [(1.0, 2.0)], duration_s=200.0),
               "not an object"]
    result = _release(clean_db, tmp_path, records)
    assert {"release.short_in_bucket", "release.kind_known"} <= result.failed_checks


def test_empty_release_fails(clean_db: Path, tmp_path: Path) -> None:
    result = _release(clean_db, tmp_path, [])
    assert result.failed_checks == {"release.questions_present"}


@pytest.mark.slow
def test_empty_store_fails_on_videos_and_skips_the_rest(tmp_path: Path) -> None:
    db = tmp_path / "empty.duckdb"
    Store(db).close()
    result = run_gate(tables=store_frames(db, params=PARAMS), release_questions=None,
                      out_dir=tmp_path, params=PARAMS)
    assert result.failed_checks == {"videos.videos_present"}
    notes = {s.suite: s.note for s in result.suites if s.status == "skipped"}
    assert notes["scenes"] == "table scenes is empty"
    assert notes["release"] == notes["release_sources"] == "no release given"
    assert notes["release_bias"] == "no release given"
    assert len(notes) == 9


@pytest.mark.slow
def test_validate_reads_jsonl_and_replaces_a_stale_report(clean_db: Path, tmp_path: Path) -> None:
    questions = tmp_path / "questions.jsonl"
    questions.write_text("\n".join(json.dumps(r) for r in clean_release()) + "\n")
    stale = tmp_path / "quality" / "validations" / "old" / "stale.html"
    stale.parent.mkdir(parents=True)
    stale.write_text("<html>old run</html>")
    result = run_checks(db=clean_db, out=tmp_path, questions=questions,
                        params=Params(quality=PARAMS))
    assert result.passed, result.to_text()
    assert not stale.exists()
    assert result.to_text().splitlines()[0] == "quality gate PASSED"


def test_suites_are_listed_once_with_unique_check_names() -> None:
    assert tuple(spec.name for spec in SUITES) == SUITE_NAMES
    for spec in SUITES:
        suite = spec.build(PARAMS)
        checks = [e.meta["check"] for e in suite.expectations]
        assert len(checks) == len(set(checks)), spec.name
        assert all(e.notes for e in suite.expectations), spec.name
