"""The quality suites, defined in code so they are reviewed as code: one function per table.

Each function returns a GX 1.x :class:`~great_expectations.ExpectationSuite` over the
DataFrame of the same name (:mod:`needleforge.quality.dataframes`,
:mod:`needleforge.quality.release_frame`). Every expectation carries a stable ``check`` name in
its ``meta`` (what a :class:`~needleforge.quality.results.Failure` reports and tests match)
and ``notes`` saying why the rule exists (Data Docs render them beside the expectation).
Thresholds come from :class:`~needleforge.params.QualityParams`, so Data Docs show the values
actually enforced.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import great_expectations as gx

# Imported from their defining modules: GX's package __init__ files do not re-export
# explicitly, which mypy --strict (no implicit re-export) rejects.
from great_expectations.expectations.core.expect_column_mean_to_be_between import (
    ExpectColumnMeanToBeBetween,
)
from great_expectations.expectations.core.expect_column_pair_values_a_to_be_greater_than_b import (
    ExpectColumnPairValuesAToBeGreaterThanB,
)
from great_expectations.expectations.core.expect_column_pair_values_to_be_equal import (
    ExpectColumnPairValuesToBeEqual,
)
from great_expectations.expectations.core.expect_column_value_lengths_to_be_between import (
    ExpectColumnValueLengthsToBeBetween,
)
from great_expectations.expectations.core.expect_column_value_lengths_to_equal import (
    ExpectColumnValueLengthsToEqual,
)
from great_expectations.expectations.core.expect_column_values_to_be_between import (
    ExpectColumnValuesToBeBetween,
)
from great_expectations.expectations.core.expect_column_values_to_be_in_set import (
    ExpectColumnValuesToBeInSet,
)
from great_expectations.expectations.core.expect_column_values_to_be_unique import (
    ExpectColumnValuesToBeUnique,
)
from great_expectations.expectations.core.expect_column_values_to_not_be_null import (
    ExpectColumnValuesToNotBeNull,
)
from great_expectations.expectations.core.expect_table_row_count_to_be_between import (
    ExpectTableRowCountToBeBetween,
)
from great_expectations.expectations.expectation import Expectation
from great_expectations.expectations.row_conditions import Column, Condition

from needleforge.params import QualityParams
from needleforge.records.questions import (
    BUCKETS,
    FAMILIES,
    LETTERS,
    LONG_MIN_S,
    N_OPTIONS,
    N_TRIES,
    SHORT_MAX_S,
)

_TARGET = Column("role") == "target"
_GROUNDING = Column("kind") == "grounding"
_CHOICE = Column("kind") == "choice"


def _x(kind: type[Expectation], *, check: str, why: str, **kwargs: Any) -> Expectation:
    """A ``kind`` expectation named ``check``, with ``why`` as its Data Docs note."""
    return kind(meta={"check": check}, notes=why, **kwargs)


def _suite(name: str, *expectations: Expectation) -> gx.ExpectationSuite:
    suite = gx.ExpectationSuite(name=name)
    for expectation in expectations:
        suite.add_expectation(expectation)
    return suite


def _where(condition: Condition | None) -> dict[str, Any]:
    return {} if condition is None else {"row_condition": condition}


def _unique(column: str) -> Expectation:
    return _x(ExpectColumnValuesToBeUnique, check=f"{column}_unique", column=column,
              why=f"{column} identifies one row (ids never repeat).")


def _true(column: str, *, check: str, why: str) -> Expectation:
    return _x(ExpectColumnValuesToBeInSet, check=check, why=why, column=column,
              value_set=[True])


def _zero(column: str, *, check: str, why: str, tol: float) -> Expectation:
    """``column`` is 0 within ``tol`` (a gap, an overrun: float sums drift a little)."""
    return _x(ExpectColumnValuesToBeBetween, check=check, why=why, column=column,
              min_value=-tol, max_value=tol)


def _at_least(column: str, low: float, *, check: str, why: str,
              where: Condition | None = None) -> Expectation:
    return _x(ExpectColumnValuesToBeBetween, check=check, why=why, column=column,
              min_value=low, **_where(where))


def _positive(column: str, *, check: str, where: Condition | None = None) -> Expectation:
    return _x(ExpectColumnValuesToBeBetween, check=check, why=f"{column} is > 0.",
              column=column, min_value=0, strict_min=True, **_where(where))


def _non_empty(column: str, *, check: str) -> list[Expectation]:
    return [
        _x(ExpectColumnValuesToNotBeNull, check=f"{check}_not_null", column=column,
           why=f"every row has a {column}."),
        _x(ExpectColumnValueLengthsToBeBetween, check=f"{check}_not_empty", column=column,
           min_value=1, why=f"{column} is not blank."),
    ]


def _buckets(column: str) -> list[Expectation]:
    """A duration inside its NeMo bucket, one expectation per bucket (named in failures)."""
    def bucket(name: str) -> dict[str, Any]:
        return {"column": column, "row_condition": Column("bucket") == name}

    return [
        _x(ExpectColumnValuesToBeInSet, check="bucket_known", column="bucket",
           value_set=list(BUCKETS), why=f"bucket is one of {list(BUCKETS)}."),
        _x(ExpectColumnValuesToBeBetween, check="short_in_bucket", max_value=SHORT_MAX_S,
           strict_max=True, why=f"a short {column} is under {SHORT_MAX_S:g} s.",
           **bucket("short")),
        _x(ExpectColumnValuesToBeBetween, check="medium_in_bucket", min_value=SHORT_MAX_S,
           max_value=LONG_MIN_S, why=f"a medium {column} is {SHORT_MAX_S:g}–{LONG_MIN_S:g} s.",
           **bucket("medium")),
        _x(ExpectColumnValuesToBeBetween, check="long_in_bucket", min_value=LONG_MIN_S,
           strict_min=True, why=f"a long {column} is over {LONG_MIN_S:g} s.",
           **bucket("long")),
    ]


def videos_suite(params: QualityParams) -> gx.ExpectationSuite:
    """Ingested sources: authorized today for benchmarks, probed sanely, never duplicated.

    ``videos`` may not be empty: a release without sources is a broken pipeline.
    """
    scopes = ", ".join(params.required_scopes)
    return _suite(
        "videos",
        _x(ExpectTableRowCountToBeBetween, check="videos_present", min_value=1,
           why="a release needs at least one authorized source video."),
        _unique("video_id"), _unique("sha256"),
        _positive("duration_s", check="duration_positive"),
        _positive("fps", check="fps_positive"),
        _at_least("licence_days_left", 0, check="licence_valid",
                  why=f"licences are valid on {params.today().isoformat()} (days left >= 0): "
                      "an expired source is not authorized."),
        _x(ExpectColumnValueLengthsToEqual, check="scope_granted", column="missing_scopes",
           value=0, why=f"licences grant every required scope ({scopes}); the column lists "
                        "the scopes missing."),
    )


def scenes_suite(params: QualityParams) -> gx.ExpectationSuite:
    """Scenes: positive length, and the scenes of one video tile it (no gap, no overlap)."""
    return _suite(
        "scenes",
        _unique("scene_id"),
        _x(ExpectColumnPairValuesAToBeGreaterThanB, check="end_after_start", column_A="end_s",
           column_B="start_s", why="a scene ends after it starts."),
        _positive("duration_s", check="duration_positive"),
        _x(ExpectColumnValuesToNotBeNull, check="gap_not_null", column="gap_s",
           why="every scene has a gap to its predecessor."),
        _zero("gap_s", check="scenes_tile", tol=params.tolerance_s,
              why="a scene starts where the previous one of its video ends (the first at "
                  "0): gap_s = 0, negative = overlap."),
        _true("has_video", check="scene_has_video",
              why="every scene belongs to an ingested video."),
    )


def objects_suite(params: QualityParams) -> gx.ExpectationSuite:
    """Object tracks: visible no longer than tracked, a sane box area, a referring expression."""
    return _suite(
        "objects",
        _unique("object_id"),
        _at_least("visible_slack_s", -params.tolerance_s, check="visible_within_track",
                  why="visible_s <= end_s - start_s (slack >= 0)."),
        _x(ExpectColumnValuesToBeBetween, check="area_fraction_range",
           column="mean_area_frac", min_value=0, max_value=1, strict_min=True,
           why="mean_area_frac is in (0, 1]."),
        *_non_empty("referring_expression", check="referring_expression"),
        _true("has_scene", check="object_has_scene",
              why="every object belongs to a stored scene."),
    )


def montages_suite(params: QualityParams) -> gx.ExpectationSuite:
    """Montage plans: in their bucket, fully covered by segments, at least one needle."""
    return _suite(
        "montages",
        _unique("montage_id"),
        *_buckets("duration_s"),
        _at_least("n_target_segments", 1, check="has_target",
                  why="a montage holds at least one target segment."),
        _at_least("n_segments_found", 1, check="has_segments",
                  why="a montage holds at least one segment."),
        _x(ExpectColumnPairValuesToBeEqual, check="segment_count_matches",
           column_A="n_segments", column_B="n_segments_found",
           why="n_segments equals the segments stored."),
        _zero("end_gap_s", check="segments_reach_end", tol=params.tolerance_s,
              why="the last segment ends at duration_s."),
    )


def montage_segments_suite(params: QualityParams) -> gx.ExpectationSuite:
    """Montage segments: they tile the montage, needles never overlap, answers stay inside."""
    tol = params.tolerance_s
    return _suite(
        "montage_segments",
        _x(ExpectColumnValuesToBeInSet, check="role_known", column="role",
           value_set=["target", "negative"], why="role is target or negative."),
        _positive("duration_s", check="duration_positive"),
        _zero("gap_s", check="segments_tile", tol=tol,
              why="a segment starts where the previous one ends (the first at 0): gap_s = 0, "
                  "negative = overlap."),
        _x(ExpectColumnValuesToNotBeNull, check="target_has_needle_index",
           column="needle_index", row_condition=_TARGET,
           why="target segments are numbered needles."),
        _at_least("target_gap_s", -tol, check="targets_do_not_overlap",
                  why="a target segment starts after the previous target segment ends "
                      "(target_gap_s >= 0)."),
        _at_least("montage_start_s", 0, check="answers_start_inside_montage", where=_TARGET,
                  why="answers start at or after 0."),
        _x(ExpectColumnValuesToBeBetween, check="answers_inside_montage", column="overrun_s",
           max_value=tol, row_condition=_TARGET,
           why="answers end by the montage's end (overrun_s <= 0)."),
        _at_least("duration_s", params.min_piece_s - tol, check="multi_needle_piece_length",
                  where=_TARGET & (Column("n_pieces") >= 2),
                  why=f"each piece of a multi-needle target lasts at least "
                      f"{params.min_piece_s:g} s."),
        _true("has_montage", check="segment_has_montage",
              why="every segment belongs to a stored montage."),
    )


def questions_suite(params: QualityParams) -> gx.ExpectationSuite:
    """Generated questions: written text and description, a verdict, a montage."""
    del params  # no thresholds; the signature matches every suite function
    return _suite(
        "questions",
        _unique("question_id"),
        *_non_empty("description", check="description"), *_non_empty("text", check="text"),
        _x(ExpectColumnValuesToBeInSet, check="needle_type_known", column="needle_type",
           value_set=["object", "scene"], why="needle_type is object or scene."),
        _at_least("n_verdicts", 1, check="question_has_verdict",
                  why="every question was verified (n_verdicts >= 1)."),
        _true("has_montage", check="question_has_montage",
              why="every question refers to a stored montage."),
    )


def verifications_suite(params: QualityParams) -> gx.ExpectationSuite:
    """Verdicts: a reason each, and a pass rate high enough to trust the generator."""
    return _suite(
        "verifications",
        _x(ExpectColumnMeanToBeBetween, check="pass_rate", column="passed",
           min_value=params.min_pass_rate,
           why=f"at least {params.min_pass_rate:.0%} of verdicts pass (the mean of passed is "
               "the pass rate)."),
        *_non_empty("reason", check="reason"),
        _true("has_question", check="verdict_has_question",
              why="every verdict judges a stored question."),
    )


def _release_grounding(params: QualityParams) -> list[Expectation]:
    multi = _GROUNDING & (Column("needles") == "multi")
    return [
        _at_least("n_spans", 1, check="spans_present", where=_GROUNDING,
                  why="a grounding question has at least one answer span."),
        _zero("n_bad_spans", check="spans_well_formed", tol=0,
              why="every span is [start_s, end_s] of finite numbers, start <= end."),
        _at_least("span_start_min_s", 0, check="spans_start_inside",
                  why="answer spans start at or after 0."),
        _x(ExpectColumnValuesToBeBetween, check="spans_end_inside", column="span_overrun_s",
           max_value=params.tolerance_s, why="answer spans end by duration_s (overrun <= 0)."),
        _x(ExpectColumnPairValuesToBeEqual, check="needles_match_spans", column_A="n_needles",
           column_B="n_spans", row_condition=_GROUNDING,
           why="n_needles equals the number of answer spans."),
        _at_least("n_needles", 2, check="multi_needles_at_least_two", where=multi,
                  why="a multi-needle question has n_needles >= 2."),
        _at_least("span_min_len_s", params.min_piece_s - params.tolerance_s,
                  check="multi_needle_piece_length", where=multi,
                  why=f"each multi-needle span lasts at least {params.min_piece_s:g} s."),
        _at_least("span_min_len_s", params.min_answer_window_s - params.tolerance_s,
                  check="answer_window_length", where=_GROUNDING,
                  why=f"every answer window lasts at least {params.min_answer_window_s:g} s "
                      "(quality.min_answer_window_s: shorter ones cannot be judged at tIoU "
                      "0.5 by a model sampling a frame a second)."),
    ]


def _release_choice() -> list[Expectation]:
    def exactly(column: str, value: object, *, check: str, why: str) -> Expectation:
        return _x(ExpectColumnValuesToBeInSet, check=check, why=why, column=column,
                  value_set=[value], row_condition=_CHOICE)

    return [
        exactly("n_options", N_OPTIONS, check="four_options",
                why=f"a multiple-choice question has {N_OPTIONS} options."),
        exactly("n_distinct_options", N_OPTIONS, check="options_distinct",
                why=f"the {N_OPTIONS} options are distinct (case-insensitively)."),
        exactly("n_correct_options", 1, check="one_correct_option",
                why="exactly one option equals the answer."),
        exactly("sample_letters", LETTERS, check="letters_balanced",
                why=f"over a sample's {N_TRIES} rotations the answer sits under "
                    f"{', '.join(LETTERS[:-1])} and {LETTERS[-1]} once each (sorted letters = "
                    f"{LETTERS})."),
        exactly("sample_tries", "".join(map(str, range(N_TRIES))), check="tries_complete",
                why=f"a sample has tries {', '.join(map(str, range(N_TRIES - 1)))} and "
                    f"{N_TRIES - 1}, once each."),
        exactly("sample_answers", 1, check="rotations_share_answer",
                why="the tries of a sample share one answer text."),
        _zero("needle_count_gap", check="needles_match_needle_spans", tol=0,
              why="a VNBench try lists one needle span per needle (n_needles = spans)."),
        _x(ExpectColumnValuesToBeBetween, check="needles_inside_video",
           column="needle_overrun_s", max_value=1e-6,
           why="VNBench needles end by the video's end (overrun <= 0)."),
    ]


def _release_files() -> list[Expectation]:
    """Checks that need the release folder and its source list (null = not checked)."""
    return [
        _true("video_ok", check="video_exists",
              why="every question's video is a file inside the release (VNBench always; "
                  "NeMo when rendered montages ship)."),
        _zero("n_unlicensed_sources", check="sources_listed", tol=0,
              why="every source a question was built from is listed, with its licence, in "
                  "sources.json (whose licences the release_sources suite checks)."),
    ]


def release_suite(params: QualityParams) -> gx.ExpectationSuite:
    """A release's question records: answers inside the video, needle counts, letter balance.

    The release may not be empty: shipping no questions is a broken pipeline.
    """
    return _suite(
        "release",
        _x(ExpectTableRowCountToBeBetween, check="questions_present", min_value=1,
           why="a release ships at least one question."),
        _unique("key"),
        _x(ExpectColumnValuesToBeInSet, check="kind_known", column="kind",
           value_set=["grounding", "choice"],
           why="each record is grounding (answer_spans) or multiple choice (options), not "
               "both."),
        _x(ExpectColumnValuesToBeInSet, check="family_known", column="family",
           value_set=list(FAMILIES), why=f"family is {' or '.join(FAMILIES)}."),
        *_non_empty("question_id", check="question_id"),
        _x(ExpectColumnValuesToNotBeNull, check="duration_not_null", column="duration_s",
           why="every question has a finite duration_s."),
        _positive("duration_s", check="duration_positive"),
        *_buckets("duration_s"),
        _at_least("n_needles", 1, check="needles_at_least_one",
                  why="every question has n_needles >= 1."),
        _x(ExpectColumnValuesToNotBeNull, check="needles_not_null", column="n_needles",
           why="every question has an integer n_needles."),
        *_release_grounding(params),
        *_release_choice(),
        *_release_files(),
    )


def release_sources_suite(params: QualityParams) -> gx.ExpectationSuite:
    """The sources a release ships (``sources.json``): authorized on the release day.

    The release build already leaves unauthorized sources out (a code check); this suite
    checks the written list again, so a hand-edited or buggy release cannot pass the gate.
    The days left and missing scopes are computed for the release's own day and required
    scopes (:func:`~needleforge.quality.release_frame.sources_frame`).
    """
    del params  # the day and scopes are bound into the frame
    return _suite(
        "release_sources",
        _x(ExpectTableRowCountToBeBetween, check="sources_present", min_value=1,
           why="a release lists the source of every question it ships."),
        _unique("video_id"), _unique("sha256"),
        *_non_empty("rights_holder", check="rights_holder"),
        *_non_empty("licence_id", check="licence_id"),
        _x(ExpectColumnValuesToNotBeNull, check="licence_date_readable",
           column="licence_days_left",
           why="valid_until is an ISO date (YYYY-MM-DD)."),
        _at_least("licence_days_left", 0, check="licence_valid",
                  why="no licence expires before the release day (days left >= 0)."),
        _x(ExpectColumnValueLengthsToEqual, check="scope_granted", column="missing_scopes",
           value=0, why="every licence grants the release's required scopes; the column "
                        "lists the scopes missing."),
    )


def release_bias_suite(params: QualityParams) -> gx.ExpectationSuite:
    """The release's blind baselines (:mod:`needleforge.quality.bias`): none may beat the
    random baseline by more than ``blind_margin`` beyond sampling error; a failure names the
    baseline, its metric and its score with its confidence interval."""
    margin = params.blind_margin
    return _suite(
        "release_bias",
        _x(ExpectColumnValuesToBeBetween, check="blind_within_margin_of_random",
           column="excess_low", max_value=margin,
           why=f"a baseline answering from metadata and question text alone (never the "
               f"pixels), fitted on one half of the release and scored on the other, beats "
               f"the random baseline's expected score by at most {100 * margin:g} points at "
               "the low end of its interval (95 % together over the rows; excess_low = ci_low "
               "- random): otherwise the answers can be guessed without watching the videos."),
    )


@dataclasses.dataclass(frozen=True, slots=True)
class SuiteSpec:
    """How the gate runs one suite.

    ``id_columns`` name the offending rows in failures. A ``required`` suite runs (and fails
    on its row-count expectation) even when its DataFrame is empty; the others are skipped.
    """

    name: str
    build: Callable[[QualityParams], gx.ExpectationSuite]
    id_columns: tuple[str, ...]
    required: bool = False


#: Every suite, in the order the gate runs them (store tables first, then the release).
SUITES: tuple[SuiteSpec, ...] = (
    SuiteSpec("videos", videos_suite, ("video_id",), required=True),
    SuiteSpec("scenes", scenes_suite, ("scene_id",)),
    SuiteSpec("objects", objects_suite, ("object_id",)),
    SuiteSpec("montages", montages_suite, ("montage_id",)),
    SuiteSpec("montage_segments", montage_segments_suite, ("montage_id", "position")),
    SuiteSpec("questions", questions_suite, ("question_id",)),
    SuiteSpec("verifications", verifications_suite, ("question_id", "verifier")),
    SuiteSpec("release", release_suite, ("key",), required=True),
    SuiteSpec("release_sources", release_sources_suite, ("video_id",), required=True),
    SuiteSpec("release_bias", release_bias_suite, ("baseline", "metric", "summary")),
)
