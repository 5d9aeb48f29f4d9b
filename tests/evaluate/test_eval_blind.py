"""Blind baselines: priors fitted on other questions of a release, never its pixels.

What must hold: a prior is never fitted on the questions it answers (folds split whole videos,
evenly per task); each prior answers with what it learned and otherwise exactly as the random
baseline does; and the CLI runs them on a release whose videos are deleted, with any attempt
to decode a frame failing the test.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from needleforge.cli import app
from needleforge.errors import EvaluationError
from needleforge.evaluate import load_questions
from needleforge.evaluate.blind import (
    BLIND_NAMES,
    Fitted,
    LengthPrior,
    LetterPrior,
    OptionPrior,
    PositionPrior,
    TextOnly,
    blind_baseline,
    blind_predictions,
    folds,
    modal_start,
    random_answer,
)
from needleforge.evaluate.records import ChoiceQuestion, ReleaseQuestion, question_from_json
from tests.evaluate.eval_helpers import choice_tries, grounding_q, write_jsonl


def _questions(rows: Sequence[dict[str, Any]]) -> list[ReleaseQuestion]:
    return [question_from_json(r) for r in rows]


def _early(n: int, *, duration: float = 100.0, length: float = 5.0) -> list[dict[str, Any]]:
    """Grounding questions whose answers all start in the first 10 % of the video."""
    return [grounding_q(f"g{i}", [(i % 10, i % 10 + length)], duration_s=duration)
            for i in range(n)]


def test_folds_keep_videos_whole_and_tasks_even() -> None:
    rows = [*_early(10), *[t for i in range(6) for t in choice_tries(f"s{i}")],
            grounding_q("g0-again", [(3, 8)], video="videos/g0.mp4")]
    qs = _questions(rows)
    fold = folds(qs, seed=3)
    by_video: dict[str, set[int]] = {}
    for q, f in zip(qs, fold, strict=True):
        by_video.setdefault(q.video, set()).add(f)
    assert all(len(f) == 1 for f in by_video.values())  # a video's questions stay together
    per_task = Counter((q.task, f) for q, f in zip(qs, fold, strict=True)
                       if isinstance(q, ChoiceQuestion) and q.try_index == 0)
    assert per_task[("ret_edit1", 0)] == per_task[("ret_edit1", 1)] == 3
    assert fold == folds(qs, seed=3) and fold != folds(qs, seed=4)
    with pytest.raises(EvaluationError, match="n_folds = 1 must be >= 2"):
        folds(qs, n_folds=1)


class _Spy:
    """A blind baseline that records what it was fitted on and answers nothing."""

    name = "spy"

    def __init__(self) -> None:
        self.fitted_on: list[set[tuple[str, int | None]]] = []
        self.asked: list[tuple[set[tuple[str, int | None]], tuple[str, int | None]]] = []

    def fit(self, train: Sequence[ReleaseQuestion]) -> Fitted:
        seen = {q.key for q in train}
        self.fitted_on.append(seen)

        def answer(q: ReleaseQuestion) -> None:
            self.asked.append((seen, q.key))

        return answer


def test_a_prior_never_answers_a_question_it_was_fitted_on() -> None:
    qs = _questions([*_early(9), *[t for i in range(5) for t in choice_tries(f"s{i}")]])
    spy = _Spy()
    predictions = blind_predictions(qs, spy)  # type: ignore[arg-type]
    assert len(spy.fitted_on) == 2 and len(spy.asked) == len(qs)
    assert all(key not in seen for seen, key in spy.asked)
    # no opinion: every answer is the random baseline's, question by question
    assert predictions == [random_answer(q) for q in qs]


def test_position_prior_moves_the_random_span_to_the_modal_start() -> None:
    train = _questions(_early(20))
    fitted = PositionPrior().fit(train)
    [question] = _questions([grounding_q("new", [(50, 55)], duration_s=200.0)])
    answer = fitted(question)
    assert answer is not None and answer.spans is not None
    (start, end), (r_start, r_end) = answer.spans[0], random_answer(question).spans[0]
    assert start == pytest.approx(modal_start([i % 10 / 100 for i in range(20)]) * 200.0)
    assert end - start == pytest.approx(r_end - r_start)  # random's length: no length prior
    assert fitted(_questions(choice_tries("c"))[0]) is None  # no prior on multiple choice


def test_length_prior_uses_the_typical_length_and_stays_inside_the_video() -> None:
    fitted = LengthPrior().fit(_questions(_early(9, length=7.0)))
    [short] = _questions([grounding_q("new", [(0, 1)], duration_s=4.0)])
    answer = fitted(short)
    assert answer is not None and answer.spans == ((0.0, 4.0),)  # 7 s clipped to the video
    with pytest.raises(EvaluationError, match="no grounding questions"):
        modal_start([])


def test_text_only_follows_the_nearest_questions() -> None:
    rows = [grounding_q(f"cat{i}", [(80, 86)], question=f"When does the orange cat {i} "
                        "appear?") for i in range(5)]
    rows += [grounding_q(f"car{i}", [(5, 9)], question=f"When is the blue car {i} shown?")
             for i in range(5)]
    fitted = TextOnly(k=3).fit(_questions(rows))
    [question] = _questions([grounding_q("q", [(0, 1)], question="Where is the orange cat?")])
    answer = fitted(question)
    assert answer is not None and answer.spans == ((80.0, 86.0),)
    tries = _questions([t for i in range(4) for t in choice_tries(
        f"s{i}", options=("Alice", "Bob", "Carol", "Dave"), answer=2)])
    fitted = TextOnly().fit(tries)
    [test] = _questions(choice_tries("new", options=("Bob", "Carol", "Eve", "Dave"),
                                     answer=0))[:1]
    assert fitted(test) is not None and fitted(test).response == "B"  # type: ignore[union-attr]


def test_option_prior_picks_the_text_most_often_right_when_offered() -> None:
    rows = [t for i in range(6) for t in choice_tries(
        f"s{i}", task="cnt_edit1", options=("1", "2", "3", "4"), answer=0)]
    fitted = OptionPrior().fit(_questions(rows))
    [test] = _questions(choice_tries("new", task="cnt_edit1", options=("3", "1", "5", "4"),
                                     answer=2))[:1]
    answer = fitted(test)
    assert answer is not None and answer.response == "B"  # "1", always right so far
    other_task = _questions(choice_tries("o", task="cnt_insert1", options=("1", "2", "3", "4"),
                                         answer=0))[0]
    assert fitted(other_task) is None  # per task: nothing learned for cnt_insert1


def test_letter_prior_picks_the_most_frequent_letter_of_each_try() -> None:
    rows = [t for i in range(5) for t in choice_tries(f"s{i}", answer=3)]
    fitted = LetterPrior().fit(_questions(rows))
    tries = _questions(choice_tries("new", answer=0))
    assert [fitted(q).response for q in tries] == ["D", "C", "B", "A"]  # type: ignore[union-attr]


def test_unknown_baselines_are_named() -> None:
    assert {blind_baseline(n).name for n in BLIND_NAMES} == set(BLIND_NAMES)
    with pytest.raises(EvaluationError, match="unknown blind baseline 'oracle'; known: "
                                              "position_prior"):
        blind_baseline("oracle")


@pytest.fixture
def no_decoding(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to open a video fails the test."""
    import av

    import needleforge.evaluate.frame_sampling as frames
    import needleforge.evaluate.run as run

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a blind baseline tried to read a video")

    monkeypatch.setattr(av, "open", refuse)
    monkeypatch.setattr(frames, "sample_frames", refuse)
    monkeypatch.setattr(run, "sample_frames", refuse)


def test_cli_runs_every_blind_baseline_with_the_videos_deleted(tmp_path: Path,
                                                               no_decoding: None) -> None:
    release = tmp_path / "release"
    (release / "videos").mkdir(parents=True)
    rows = [*_early(12), *[t for i in range(6) for t in choice_tries(
        f"s{i}", task="cnt_edit1", options=("1", "2", "3", "4"), answer=0)]]
    for row in rows:
        (release / row["video"]).write_bytes(b"not read")
    write_jsonl(release / "questions.jsonl", rows)
    for video in (release / "videos").iterdir():
        video.unlink()  # deleted: a baseline that needed one would fail
    (release / "videos").rmdir()
    runner = CliRunner()
    for name in BLIND_NAMES:
        out = tmp_path / f"{name}.jsonl"
        result = runner.invoke(app, ["evaluate", "--release", str(release), "--model", name,
                                     "--out", str(out)])
        assert result.exit_code == 0, result.output
        predictions = [json.loads(x) for x in out.read_text().splitlines()]
        assert len(predictions) == len(load_questions(release / "questions.jsonl"))
        meta = json.loads((tmp_path / f"{name}.jsonl.meta.json").read_text())
        assert meta["model"] == name and "no video" in meta["reads"]
        scored = runner.invoke(app, ["score", "--questions", str(release / "questions.jsonl"),
                                     "--predictions", str(out)])
        assert scored.exit_code == 0, scored.output
    option = [json.loads(x) for x in (tmp_path / "option_prior.jsonl").read_text().splitlines()]
    assert all("pred_spans" in p for p in option[:12])  # grounding: the random baseline's
    assert all(p["response"] in "ABCD" for p in option[12:])
