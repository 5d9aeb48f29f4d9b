"""Release records: the scorer reads every try, and the VNBench JSON has its fields."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from needleforge.evaluate.records import ChoiceQuestion, question_from_json
from needleforge.vnbench import VNBenchResult, write_jsonl, write_vnbench_json

VNBENCH_FIELDS = {"video", "question", "options", "gt", "gt_option", "needle_time", "length",
                  "type", "try", "question_id", "sample_id"}


def test_every_try_is_a_valid_scorer_question(vnb_result: VNBenchResult) -> None:
    assert len(vnb_result.questions) == 4 * len(vnb_result.samples)
    by_sample: dict[str, list[ChoiceQuestion]] = {}
    for record in vnb_result.questions:
        question = question_from_json(json.loads(json.dumps(record)))
        assert isinstance(question, ChoiceQuestion) and question.family == "vnbench"
        by_sample.setdefault(question.question_id, []).append(question)
    samples = {s.sample_id: s for s in vnb_result.samples}
    for sample_id, tries in by_sample.items():
        sample = samples[sample_id]
        assert sorted(t.try_index for t in tries) == [0, 1, 2, 3]
        assert sorted(t.answer_index for t in tries) == [0, 1, 2, 3]
        assert {t.answer_text for t in tries} == {sample.answer}
        assert {t.task for t in tries} == {sample.task}
        assert all(t.n_needles == len(sample.needles) and t.video == sample.video
                   and t.bucket == "short" and t.needle_type == sample.needle_type
                   for t in tries)


def test_vnbench_json_has_the_release_fields(vnb_result: VNBenchResult) -> None:
    assert len(vnb_result.vnbench_json) == len(vnb_result.questions)
    letters: Counter[str] = Counter()
    samples = {s.sample_id: s for s in vnb_result.samples}
    for record in vnb_result.vnbench_json:
        assert set(record) == VNBENCH_FIELDS
        sample = samples[record["sample_id"]]
        # VideoNIAH's eval.py groups the tries of a sample by question_id[:-2].
        assert record["question_id"] == f"{sample.sample_id}_{record['try']}"
        assert record["question_id"][:-2] == sample.sample_id
        assert record["options"]["ABCD".index(record["gt_option"])] == record["gt"]
        assert record["gt"] == sample.answer and record["type"] == sample.task
        assert record["length"] == sample.duration_s
        assert record["needle_time"] == sorted(n.start_s for n in sample.needles)
        letters[record["gt_option"]] += 1
    assert set(letters.values()) == {len(vnb_result.samples)}  # each letter once per sample


def test_exports_round_trip_through_files(vnb_result: VNBenchResult, tmp_path: Path) -> None:
    jsonl = write_jsonl(vnb_result.questions, path=tmp_path / "questions.jsonl")
    lines = jsonl.read_text("utf-8").splitlines()
    assert [json.loads(line) for line in lines] == list(vnb_result.questions)
    array = write_vnbench_json(vnb_result.vnbench_json, path=tmp_path / "vnbench.json")
    assert json.loads(array.read_text("utf-8")) == list(vnb_result.vnbench_json)


def test_every_task_has_a_suite_and_the_official_nine_are_the_configs() -> None:
    from typing import get_args

    from needleforge.params import VNBenchTask
    from needleforge.vnbench import suite_of
    from needleforge.vnbench.subtasks import ACT_SUBTASKS, LONG_SUBTASKS, SUBTASKS

    assert set(SUBTASKS) == set(get_args(VNBenchTask))  # one list of the 9 official tasks
    assert {suite_of(t) for t in SUBTASKS} == {"main"}
    assert {suite_of(t) for t in LONG_SUBTASKS} == {"long"}
    assert {suite_of(t) for t in ACT_SUBTASKS} == {"act"}
