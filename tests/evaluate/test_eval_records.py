"""Question and prediction records: what a release line must hold, and how errors read."""

from __future__ import annotations

from typing import Any

import pytest

from needleforge.errors import EvaluationError, NeedleforgeError
from needleforge.evaluate import (
    ChoiceQuestion,
    GroundingQuestion,
    Prediction,
    question_from_json,
    vnbench_group,
)
from tests.evaluate.eval_helpers import choice_tries, grounding_q


def test_grounding_question_round_trip() -> None:
    q = GroundingQuestion.from_json(grounding_q("q1", [[1, 2], [5.5, 9]]), line=3)
    assert q.answer_spans == ((1.0, 2.0), (5.5, 9.0))
    assert q.key == ("q1", None)


def test_choice_question_reads_try_and_answer_text() -> None:
    tries = [question_from_json(d) for d in choice_tries("s1", answer=2)]
    assert all(isinstance(q, ChoiceQuestion) for q in tries)
    assert {q.answer_text for q in tries if isinstance(q, ChoiceQuestion)} == {"Carol"}
    assert [q.key for q in tries] == [("s1", t) for t in range(4)]


def test_from_json_refuses_the_other_kind() -> None:
    with pytest.raises(EvaluationError, match="not a ChoiceQuestion"):
        ChoiceQuestion.from_json(grounding_q("q1", [[1, 2]]), line=1)


@pytest.mark.parametrize(("change", "fragment"), [
    ({"duration_s": float("nan")}, "duration_s = nan must be a finite number"),
    ({"duration_s": 0}, "duration_s = 0 must be > 0"),
    ({"bucket": "huge"}, "bucket = 'huge' must be one of"),
    ({"family": "other"}, "family = 'other'"),
    ({"family": ["nemo"]}, "family = ['nemo'] must be a non-empty string"),
    ({"duration_s": 10**400}, "duration_s = 1000000000"),
    ({"n_needles": 0}, "n_needles = 0"),
    ({"n_needles": True}, "n_needles = True"),
    ({"question_id": ""}, "question_id = '' must be a non-empty string"),
    ({"question_id": 7}, "question_id = 7"),
    ({"answer_spans": []}, "at least one"),
    ({"answer_spans": [[5, 1]]}, "reversed"),
    ({"answer_spans": [[1, 2, 3]]}, "must be a [start_s, end_s] pair"),
    ({"answer_spans": [[-1, 2]]}, "outside the video"),
    ({"answer_spans": [[100, 130]]}, "outside the video"),
    ({"answer_spans": [[1, "2"]]}, "end = '2' must be a finite number"),
    ({"answer_spans": "1-2"}, "must be a list"),
    ({"task": "cnt_edit2", "family": "vnbench"}, None),
    ({"task": "mystery", "family": "vnbench"}, "must start with ret, ord or cnt"),
])
def test_grounding_errors_name_line_and_field(change: dict[str, Any],
                                              fragment: str | None) -> None:
    data = grounding_q("q9", [[1, 2]]) | change
    if fragment is None:
        question_from_json(data, line=4)
        return
    with pytest.raises(EvaluationError) as info:
        question_from_json(data, line=4)
    assert str(info.value).startswith("line 4: question ")
    assert fragment in str(info.value)
    assert isinstance(info.value, NeedleforgeError)


def test_missing_fields_and_kind_are_reported() -> None:
    data = grounding_q("q1", [[1, 2]])
    del data["bucket"]
    with pytest.raises(EvaluationError, match=r"line 2: question 'q1' misses \['bucket'\]"):
        question_from_json(data, line=2)
    with pytest.raises(EvaluationError, match="exactly one of answer_spans"):
        question_from_json(data | {"options": ["a", "b", "c", "d"]}, line=2)
    with pytest.raises(EvaluationError, match="must be a JSON object"):
        question_from_json([1, 2], line=2)


@pytest.mark.parametrize(("change", "fragment"), [
    ({"options": ["a", "b", "c"]}, "must be 4 non-empty strings"),
    ({"options": ["a", "b", "c", "A"]}, "must be distinct"),
    ({"options": ["a", "b", "c", ""]}, "non-empty"),
    ({"answer_index": 4}, "answer_index = 4 must be an integer in 0..3"),
    ({"try": -1}, "try = -1 must be an integer in 0..3"),
    ({"try": 1.0}, "try = 1.0"),
])
def test_choice_errors(change: dict[str, Any], fragment: str) -> None:
    data = choice_tries("s1")[0] | change
    with pytest.raises(EvaluationError, match="line 8: question 's1'") as info:
        question_from_json(data, line=8)
    assert fragment in str(info.value)


def test_prediction_forms() -> None:
    scored = Prediction.from_json({"question_id": "q", "pred_spans": [[1, 2, 0.5], [3, 4, 0.9]]})
    assert scored.spans == ((1.0, 2.0), (3.0, 4.0))
    assert scored.scores == (0.5, 0.9)
    plain = Prediction.from_json({"question_id": "q", "pred_spans": []})
    assert (plain.spans, plain.scores) == ((), None)
    text = Prediction.from_json({"question_id": "s", "try": 2, "response": "B", "model": "x"})
    assert text.key == ("s", 2)


@pytest.mark.parametrize(("data", "fragment"), [
    ({"pred_spans": [[1, 2]]}, "misses question_id"),
    ({"question_id": "q"}, "exactly one of pred_spans or response"),
    ({"question_id": "q", "pred_spans": [], "response": "x"}, "exactly one"),
    ({"question_id": "q", "pred_spans": [[5, 1]]}, "reversed"),
    ({"question_id": "q", "pred_spans": [[float("nan"), 1]]}, "must be a finite number"),
    ({"question_id": "q", "pred_spans": [[1, 2, float("inf")]]}, "score = inf"),
    ({"question_id": "q", "pred_spans": [[1, 2, 0.3], [3, 4]]}, "mixes scored and unscored"),
    ({"question_id": "q", "pred_spans": [[1]]}, "each item must be"),
    ({"question_id": "q", "pred_spans": [1, 2]}, "must be a list of"),
    ({"question_id": "q", "response": 3}, "response = 3 must be a string"),
    ({"question_id": "q", "try": 4, "response": "A"}, "try = 4"),
])
def test_prediction_errors(data: dict[str, Any], fragment: str) -> None:
    with pytest.raises(EvaluationError, match=r"^line 5: ") as info:
        Prediction.from_json(data, line=5)
    assert fragment in str(info.value)


@pytest.mark.parametrize(("task", "group"), [
    ("ret_edit1", "retrieval"), ("ret_insert2", "retrieval"), ("ord_insert1", "ordering"),
    ("cnt_edit2", "counting"), ("counting_insert", "counting"), ("grounding", None),
])
def test_vnbench_groups(task: str, group: str | None) -> None:
    assert vnbench_group(task) == group
