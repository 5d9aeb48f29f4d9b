"""The scorer end to end on small JSONL files: metrics, breakdowns, coverage and bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from needleforge.errors import EvaluationError
from needleforge.evaluate import (
    Prediction,
    ScoreReport,
    load_predictions,
    load_questions,
    score,
    score_files,
)
from tests.evaluate.eval_helpers import choice_tries, grounding_q, letter_for, write_jsonl

GROUNDING = [
    grounding_q("q1", [[0, 9]]),
    grounding_q("q2", [[10, 19], [40, 49]], duration_s=300.0, bucket="medium",
                needle_type="scene", task="scene_grounding"),
    grounding_q("q3", [[0, 9]]),
    grounding_q("q4", [[5, 9]]),
    grounding_q("q5", [[0, 9]]),
    grounding_q("q6", [[0, 9]]),
]
GROUNDING_PREDS: list[Any] = [
    # exact seconds 6/9 (a hit at 0.5 only); whole seconds 7/10 = 0.7: counts at 0.7
    {"question_id": "q1", "pred_spans": [[0, 6]]},
    {"question_id": "q2", "response": "from 10 to 19 and 40-45"},  # 1 and 5/9 (6/10)
    {"question_id": "q3", "response": "I cannot determine when that happens."},
    {"question_id": "q4", "response": "somewhere in the middle"},
    # q5: no prediction
    {"question_id": "q6", "pred_spans": [[-3, 9]]},                # clipped to [0, 9]: perfect
]


def _choice_fixture() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """4 VNBench samples: s1 all right, s2 wrong on try 2, s3 right (one by option text),
    s4 right but try 3 missing."""
    s1 = choice_tries("s1", task="ret_edit1")
    s2 = choice_tries("s2", task="ord_insert1", options=("a b c", "b a c", "c b a", "a c b"))
    s3 = choice_tries("s3", task="cnt_edit2", options=("3", "5", "6", "7"), answer=0)
    s4 = choice_tries("s4", task="ret_insert1")
    preds = [{"question_id": q["question_id"], "try": q["try"],
              "response": f"The answer is {letter_for(q)}."} for q in s1 + s4[:3]]
    preds += [{"question_id": "s2", "try": q["try"],
               "response": f"({letter_for(q, right=q['try'] != 2)})"} for q in s2]
    preds += [{"question_id": "s3", "try": q["try"], "response": letter_for(q)} for q in s3[1:]]
    preds.append({"question_id": "s3", "try": 0, "response": "It appears 3 times."})
    return s1 + s2 + s3 + s4, preds


@pytest.fixture
def report(tmp_path: Path) -> ScoreReport:
    questions, preds = _choice_fixture()
    q_path = write_jsonl(tmp_path / "questions.jsonl", GROUNDING + questions)
    p_path = write_jsonl(tmp_path / "preds.jsonl", GROUNDING_PREDS + preds)
    return score_files(q_path, p_path)


def test_grounding_metrics_and_coverage(report: ScoreReport) -> None:
    overall = report.grounding["all"]["all"]
    assert (overall.n_questions, overall.n_targets) == (6, 7)
    assert overall.recall[0.7] == pytest.approx(2 / 7)  # q2's first target, q6
    assert overall.recall[0.5] == pytest.approx(4 / 7)  # and q1, q2's second target (5/9)
    paper = overall.second_set  # whole-second sets: q1 reaches 7/10
    assert (paper.recall[0.7], paper.recall[0.5]) == pytest.approx((3 / 7, 4 / 7))
    for m, (low, high) in overall.recall_ci.items():
        assert 0 <= low <= overall.recall[m] <= high <= 1 and high - low > 0.1  # 6 questions
    low, high = overall.average_map_ci
    assert low <= overall.average_map <= high
    cov = overall.coverage
    assert (cov.total, cov.answered, cov.refused, cov.unparsed, cov.missing) == (6, 3, 1, 1, 1)
    assert cov.refusal_rate == pytest.approx(1 / 6)


def test_grounding_breakdowns(report: ScoreReport) -> None:
    g = report.grounding
    assert list(g["bucket"]) == ["short", "medium"]
    assert g["needles"]["multi"].n_questions == 1
    assert g["needles"]["multi"].recall[0.7] == 0.5
    assert g["needle_type"]["scene"].recall[0.5] == 1.0
    assert g["task"]["object_grounding"].n_questions == 5
    assert g["family"]["nemo"].n_targets == 7
    assert "group" not in g


def test_choice_accuracy_and_circular(report: ScoreReport) -> None:
    overall = report.choice["all"]["all"]
    assert overall.n_samples == 4
    assert overall.accuracy_by_try == (1.0, 1.0, 0.75, 0.75)
    assert overall.accuracy == pytest.approx(14 / 16)
    assert overall.circular_accuracy == 0.5       # s1 and s3
    assert overall.coverage.missing == 1
    assert report.choice["group"]["retrieval"].circular_accuracy == 0.5
    assert report.choice["task"]["cnt_edit2"].circular_accuracy == 1.0


def test_vnbench_overall_is_the_mean_of_group_means(report: ScoreReport) -> None:
    assert report.vnbench is not None
    assert dict(report.vnbench.groups) == {"retrieval": 0.5, "ordering": 0.0, "counting": 1.0}
    assert report.vnbench.overall == 0.5
    assert report.vnbench.tasks["ret_insert1"] == 0.0


def test_issues_are_listed_and_the_report_serialises(report: ScoreReport) -> None:
    assert report.issue_counts() == {"missing": 2, "unparsed": 1, "refused": 1}
    kinds = {(i.question_id, i.try_index): i.kind for i in report.issues}
    assert kinds == {("q3", None): "refused", ("q4", None): "unparsed",
                     ("q5", None): "missing", ("s4", 3): "missing"}
    data = json.loads(json.dumps(report.to_dict()))
    assert data["grounding"]["all"]["all"]["recall"]["0.7"] == pytest.approx(2 / 7)
    assert data["grounding"]["all"]["all"]["second_set"]["recall"]["0.7"] == pytest.approx(3 / 7)
    assert len(data["grounding"]["all"]["all"]["recall_ci"]["0.7"]) == 2
    assert data["issues"][0]["try"] is None
    text = report.to_markdown()
    for fragment in ("## Grounding", "## Multiple choice", "**VNBench overall** 50.00",
                     "| bucket=medium |", "`s4` try 3: missing", "R@1x 0.7 (s)",
                     "| all | 6 | 28.57 [", "whole-second sets"):
        assert fragment in text


def test_empty_grounding_prediction_counts_as_answered_and_zero(tmp_path: Path) -> None:
    q = write_jsonl(tmp_path / "q.jsonl", [grounding_q("q1", [[0, 9]])])
    p = write_jsonl(tmp_path / "p.jsonl", [{"question_id": "q1", "pred_spans": []}])
    overall = score_files(q, p).grounding["all"]["all"]
    assert (overall.recall[0.7], overall.average_map, overall.coverage.answered) == (0, 0, 1)


def test_scored_spans_are_ranked_by_score(tmp_path: Path) -> None:
    q = write_jsonl(tmp_path / "q.jsonl", [grounding_q("q1", [[0, 9]])])
    p = write_jsonl(tmp_path / "p.jsonl", [
        {"question_id": "q1", "pred_spans": [[0, 9, 0.2], [50, 59, 0.8]]}])
    overall = score_files(q, p).grounding["all"]["all"]
    assert overall.recall[0.7] == 0.0       # the top-1 by score is the miss
    assert overall.map[0.5] == 0.5


def _fail(tmp_path: Path, questions: list[Any], preds: list[Any]) -> str:
    q = write_jsonl(tmp_path / "questions.jsonl", questions)
    p = write_jsonl(tmp_path / "preds.jsonl", preds)
    with pytest.raises(EvaluationError) as info:
        score_files(q, p)
    return str(info.value)


@pytest.mark.parametrize(("preds", "fragment"), [
    (['{"question_id": "q1", "pred_spans": [[0, 6]]}', "{not json"],
     "preds.jsonl:2: not valid JSON"),
    (["[1, 2]"], "preds.jsonl: line 1: a prediction must be a JSON object"),
    ([{"question_id": "zzz", "response": "1-2"}], "not in the questions: 'zzz'"),
    ([{"question_id": "q1", "pred_spans": [[0, 6]]}, {"question_id": "q1", "response": "0-6"}],
     "preds.jsonl:2: duplicate question_id 'q1', first on line 1"),
    ([{"question_id": "q1", "pred_spans": [[9, 1]]}],
     "preds.jsonl: line 1: prediction for 'q1': pred_spans[0] = [9, 1] is reversed"),
    (['{"question_id": "q1", "pred_spans": [[NaN, 3]]}'], "start = nan must be a finite number"),
    ([{"question_id": "q1", "try": 0, "response": "1-2"}], "try is for multiple-choice"),
    ([{"question_id": "s1", "response": "B"}], "needs try (0..3) and a response"),
    ([{"question_id": "s1", "try": 0, "pred_spans": [[1, 2]]}], "needs try (0..3)"),
])
def test_bad_predictions_stop_the_run(tmp_path: Path, preds: list[Any], fragment: str) -> None:
    message = _fail(tmp_path, [grounding_q("q1", [[0, 9]]), *choice_tries("s1")], preds)
    assert fragment in message


def test_bad_question_files(tmp_path: Path) -> None:
    tries = choice_tries("s1")
    assert "questions.jsonl:2: duplicate question_id 'q1'" in _fail(
        tmp_path, [grounding_q("q1", [[0, 9]])] * 2, [])
    assert "without all tries 0..3: 's1'" in _fail(tmp_path, tries[:3], [])
    other = [*tries[:3], tries[3] | {"options": ["x", "y", "z", "w"]}]
    assert "tries disagree on answer_text" in _fail(tmp_path, other, [])
    assert "used by grounding and multiple-choice" in _fail(
        tmp_path, [grounding_q("s1", [[0, 9]]), *tries], [])
    assert "questions.jsonl: line 1: question 'q1': answer_spans[0]" in _fail(
        tmp_path, [grounding_q("q1", [[float("nan"), 9]])], [])


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(EvaluationError, match="cannot read"):
        load_questions(tmp_path / "absent.jsonl")
    bad = tmp_path / "latin1.jsonl"
    bad.write_bytes(b'{"question_id": "caf\xe9"}\n')
    with pytest.raises(EvaluationError, match="cannot read"):
        load_predictions(bad)


def test_bom_and_crlf_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    line = json.dumps(grounding_q("q1", [[0, 9]]))
    path.write_bytes(b"\xef\xbb\xbf" + f"{line}\r\n\r\n".encode())
    assert [q.question_id for q in load_questions(path)] == ["q1"]


def test_in_memory_duplicates_and_blank_lines(tmp_path: Path) -> None:
    q = write_jsonl(tmp_path / "q.jsonl", ["", grounding_q("q1", [[0, 9]]), "   "])
    questions = load_questions(q)
    assert len(questions) == 1
    twice = [Prediction(question_id="q1", spans=((0.0, 9.0),))] * 2
    with pytest.raises(EvaluationError, match="duplicate"):
        score(questions, twice)
    with pytest.raises(EvaluationError, match="duplicate question"):
        score(questions * 2, [])


def test_odd_responses_never_crash(tmp_path: Path) -> None:
    tries = choice_tries("s1")
    odd = ["", "🙂" * 50, "A" * 10_000, "\x00\n\t", "[[[[", "1:2:3:4:5 - 9", "B" * 3]
    preds = [{"question_id": "s1", "try": t, "response": odd[t]} for t in range(4)]
    preds.append({"question_id": "q1", "response": " - ".join(odd)})
    report = score_files(write_jsonl(tmp_path / "q.jsonl", [grounding_q("q1", [[0, 9]]), *tries]),
                         write_jsonl(tmp_path / "p.jsonl", preds))
    assert report.choice["all"]["all"].coverage.total == 4
