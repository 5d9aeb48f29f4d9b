"""moment_detr submissions and the QVHighlights metrics on hand-worked cases; the VNBench
overall over the 9 official tasks only."""

from __future__ import annotations

from pathlib import Path

import pytest

from needleforge.errors import EvaluationError
from needleforge.evaluate import (
    GroundingQuestion,
    Prediction,
    load_prediction_file,
    prediction_from_submission,
    question_from_json,
    qvhighlights_scores,
    score,
)
from needleforge.evaluate.qvhighlights import average_precisions
from tests.evaluate.eval_helpers import choice_tries, grounding_q, letter_for, write_jsonl


def _question(spans: list[tuple[float, float]]) -> GroundingQuestion:
    q = question_from_json(grounding_q("q1", spans))
    assert isinstance(q, GroundingQuestion)
    return q


def test_a_submission_line_keeps_windows_and_scores_and_ignores_the_rest() -> None:
    p = prediction_from_submission({"qid": 7, "query": "x", "vid": "v",
                                    "pred_relevant_windows": [[1, 5, 0.9], [8, 9, 0.2]],
                                    "pred_saliency_scores": [0.1, 0.3]}, line=3)
    assert (p.question_id, p.spans, p.scores, p.line) == ("7", ((1, 5), (8, 9)), (0.9, 0.2), 3)
    with pytest.raises(EvaluationError, match="line 2: qid 'a'"):
        prediction_from_submission({"qid": "a", "pred_relevant_windows": [[1]]}, line=2)
    with pytest.raises(EvaluationError, match="needs qid"):
        prediction_from_submission({"pred_relevant_windows": []})


def test_a_file_is_read_in_its_own_layout(tmp_path: Path) -> None:
    ours = write_jsonl(tmp_path / "a.jsonl", [{"question_id": "q1", "response": "1 - 2"}])
    theirs = write_jsonl(tmp_path / "b.jsonl", [{"qid": "q1", "pred_relevant_windows": []}])
    assert load_prediction_file(ours)[1] == "needleforge"
    assert load_prediction_file(theirs)[1] == "moment_detr"
    mixed = write_jsonl(tmp_path / "c.jsonl", [{"qid": "q1", "pred_relevant_windows": []},
                                               {"question_id": "q2", "response": ""}])
    with pytest.raises(EvaluationError, match=r"c\.jsonl:2: not a moment_detr line"):
        load_prediction_file(mixed)


def test_average_precision_by_hand() -> None:
    gt = [(0.0, 10.0), (20.0, 30.0)]
    # Ranked: hit, miss, hit -> precision 1, 1/2, 2/3 at recall 1/2, 1/2, 1.
    ap = average_precisions(gt, [(20.0, 30.0), (50.0, 60.0), (0.0, 10.0)])
    assert ap == pytest.approx([0.5 * 1 + 0.5 * (2 / 3)] * 10)
    # tIoU of (0, 8) with (0, 10) is 0.8: a hit up to 0.8, a miss from 0.85.
    ap = average_precisions([(0.0, 10.0)], [(0.0, 8.0)])
    assert ap == [1.0] * 7 + [0.0] * 3
    assert average_precisions(gt, []) == [0.0] * 10


def test_r1_takes_the_first_window_as_written_and_map_ranks_by_score() -> None:
    q = _question([(0.0, 10.0)])
    p = Prediction(question_id="q1", spans=((50.0, 60.0), (0.0, 10.0)), scores=(0.1, 0.9))
    result = qvhighlights_scores([q], [p])
    assert result.r1[0.5] == 0.0 and result.average_map == 1.0
    assert result.range_map == {"short": 1.0, "middle": None, "long": None}
    missing = qvhighlights_scores([q], [])
    assert missing.r1[0.5] == 0.0 and missing.average_map == 0.0


def test_vnbench_overall_averages_the_official_tasks_only() -> None:
    tries = [*choice_tries("s1", task="ret_edit1"), *choice_tries("s2", task="ord_edit1"),
             *choice_tries("s3", task="ret_act"), *choice_tries("s4", task="ord_edit1_long")]
    questions = [question_from_json(t) for t in tries]
    right = {"s1", "s3", "s4"}
    preds = [Prediction(question_id=t["question_id"], try_index=t["try"],
                        response=letter_for(t, right=t["question_id"] in right)) for t in tries]
    summary = score(questions, preds).vnbench
    assert summary is not None
    assert summary.tasks == {"ord_edit1": 0.0, "ord_edit1_long": 1.0, "ret_act": 1.0,
                             "ret_edit1": 1.0}
    assert summary.groups == {"retrieval": 1.0, "ordering": 0.0}
    assert summary.overall == 0.5
