"""The card's Scoring section: definitions, window lengths, and the blind baselines' VNBench
scores, which must be the leaderboard's (the evaluate stage's run_blind, scored)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from needleforge.evaluate import score_files
from needleforge.evaluate.blind import run_blind
from needleforge.release.card_scoring import blind_vnbench_scores, scoring_section
from needleforge.release.markup import Document, to_markdown
from tests.release.consumer_cases import grounding_records, vnbench_choice_records


@pytest.fixture(scope="module")
def records() -> list[dict[str, object]]:
    return grounding_records(12, seed=4) + vnbench_choice_records(samples_per_task=6, seed=5)


def test_blind_scores_on_the_card_are_the_leaderboards(records: list[dict[str, object]],
                                                       tmp_path: Path) -> None:
    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(json.dumps(r) + "\n" for r in records))
    on_card = blind_vnbench_scores(records)
    assert set(on_card) == {"random", "position_prior", "length_prior", "text_only",
                            "option_prior", "letter_prior"}
    for name in ("text_only", "letter_prior", "option_prior"):
        out = run_blind(questions, name=name, out=tmp_path / f"{name}.jsonl")
        vnbench = score_files(questions, out).vnbench
        assert vnbench is not None
        assert on_card[name] == (vnbench.overall, vnbench.overall_ci)


def test_section_names_overlaps_and_the_bar_to_beat(records: list[dict[str, object]]) -> None:
    text = to_markdown(Document("t", (scoring_section(records, min_window_s=3.0,
                                                      n_short=2),)))
    assert "tIoU on exact seconds" in text and "second sets" in text
    assert "2 question(s) with a shorter one were left out" in text
    assert "| short |" in text and "6 samples per official task, 54 in all" in text
    scores = blind_vnbench_scores(records)
    bar = max(ci[1] for name, (_, ci) in scores.items() if name != "random")
    assert f"exceeds {100 * bar:.1f} % (the highest blind upper end)" in text
    assert "Random is not the chance level to beat" in text
    assert "does not tell apart: " in text  # 6 samples a task: some intervals overlap


def test_a_release_without_vnbench_or_grounding_has_a_short_section() -> None:
    only_grounding = grounding_records(3)
    text = to_markdown(Document("t", (scoring_section(only_grounding, min_window_s=3.0,
                                                      n_short=0),)))
    assert "Answer window lengths" in text and "VNBench" not in text
    assert blind_vnbench_scores(only_grounding) == {}
    only_choice = vnbench_choice_records(samples_per_task=2)
    text = to_markdown(Document("t", (scoring_section(only_choice, min_window_s=3.0,
                                                      n_short=0),)))
    assert "Answer window lengths" not in text and "2 samples per official task" in text
