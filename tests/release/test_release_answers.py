"""Answers from plans, selection by verdicts, and release records the scorer accepts."""

from __future__ import annotations

import dataclasses

import pytest

from needleforge.errors import ReleaseError
from needleforge.evaluate import GroundingQuestion, question_from_json
from needleforge.records import Verification
from needleforge.release import answer_spans, select_questions
from needleforge.release.answers import question_record
from tests.release.release_cases import CAT, HARBOUR, montages, questions, verdicts

MONTAGES = {m.montage_id: m for m in montages()}
QUESTIONS = {q.question_id: q for q in questions(0)}


def test_one_target_montage_answers_with_every_target_segment_in_needle_order() -> None:
    # m-multi: needle 1 at 0-2 s, needle 0 at 12-15 s; segments carry no target_id.
    assert answer_spans(QUESTIONS["q-multi"], MONTAGES["m-multi"]) == [(12.0, 15.0), (0.0, 2.0)]
    assert answer_spans(QUESTIONS["q-obj"], MONTAGES["m-obj"]) == [(5.0, 9.5)]


def test_named_targets_answer_only_their_own_question() -> None:
    shared = MONTAGES["m-shared"]
    assert answer_spans(QUESTIONS["q-shared-obj"], shared) == [(50.0, 55.0), (109.0, 112.0)]
    assert answer_spans(QUESTIONS["q-shared-scene"], shared) == [(55.0, 59.0)]
    assert shared.target_spans(CAT) == answer_spans(QUESTIONS["q-shared-obj"], shared)
    assert shared.target_spans(HARBOUR) == [(55.0, 59.0)]


def test_answer_errors_name_the_question_and_montage() -> None:
    with pytest.raises(ReleaseError, match="belongs to montage m-obj, not m-multi"):
        answer_spans(QUESTIONS["q-obj"], MONTAGES["m-multi"])
    stranger = dataclasses.replace(QUESTIONS["q-shared-scene"], target_scene_id="v-elsewhere")
    with pytest.raises(ReleaseError, match="no target segment for v-elsewhere"):
        answer_spans(stranger, MONTAGES["m-shared"])


def test_selection_by_verdicts() -> None:
    strict = select_questions(questions(0), verdicts(0))
    assert [q.question_id for q, _ in strict.released] == ["q-multi", "q-obj", "q-shared-obj"]
    assert strict.failed == ("q-failed", "q-shared-scene")  # one of two verifiers refused
    assert strict.unverified == ("q-unverified",)
    shared = dict((q.question_id, v) for q, v in strict.released)["q-shared-obj"]
    assert [v.verifier for v in shared] == ["embedded", "judge"]

    lenient = select_questions(questions(0), verdicts(0), require_all_verdicts=False,
                               include_unverified=True)
    released = {q.question_id: v for q, v in lenient.released}
    assert set(released) == {"q-multi", "q-obj", "q-shared-obj", "q-shared-scene",
                             "q-unverified"}
    assert [v.verifier for v in released["q-shared-scene"]] == ["embedded"]  # only the pass
    assert released["q-unverified"] == ()
    assert lenient.failed == ("q-failed",)  # a question every verifier failed never ships


def test_record_is_a_scorer_question_with_rounded_times() -> None:
    verdict = Verification("q-multi", "embedded", "ver-1", True, "ok")
    record = question_record(QUESTIONS["q-multi"], MONTAGES["m-multi"], [verdict])
    assert list(record)[:10] == ["question_id", "family", "task", "bucket", "needle_type",
                                 "n_needles", "question", "video", "duration_s", "answer_spans"]
    assert MONTAGES["m-multi"].duration_s != 22.1  # 307.1 - 300.0 is not exactly 7.1
    assert record["duration_s"] == 22.1
    assert record["verified_by"] == ["embedded/ver-1"]
    loaded = question_from_json(record)
    assert isinstance(loaded, GroundingQuestion)
    assert loaded.answer_spans == ((12.0, 15.0), (0.0, 2.0))
    assert (loaded.task, loaded.n_needles, loaded.video) == ("scene_grounding", 2,
                                                             "videos/m-multi.mp4")
