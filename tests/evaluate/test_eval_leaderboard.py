"""The leaderboard reads real ``ScoreReport.to_dict()`` files and renders tables and a plot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from needleforge.errors import EvaluationError
from needleforge.evaluate import Prediction, leaderboard, question_from_json, score
from needleforge.evaluate.leaderboard import Leaderboard, LeaderboardRow, leaderboard_from_rows
from tests.evaluate.eval_media import choice_records, grounding_record
from tests.html_parts import html_parts, texts


def _write_scores(folder: Path, name: str, *, hits: dict[str, bool], letter: int) -> None:
    """Score a two-bucket grounding set and one VNBench sample, as ``score --out`` does."""
    records = [grounding_record(q, video="v.mp4", spans=[[10.0, 15.0]], duration_s=60.0,
                                bucket=b) for q, b in (("s1", "short"), ("l1", "long"))]
    records += choice_records("c1", video="v.mp4", options=["a", "b", "c", "d"], answer=0,
                              question="Which?", duration_s=60.0)
    questions = [question_from_json(r) for r in records]
    predictions = [Prediction(question_id=q, spans=((10.0, 15.0),) if hit else ((40.0, 45.0),))
                   for q, hit in hits.items()]
    predictions += [Prediction(question_id="c1", try_index=t, response="ABCD"[letter])
                    for t in range(4)]
    report = score(questions, predictions)
    (folder / f"{name}.json").write_text(json.dumps(report.to_dict()), encoding="utf-8")


@pytest.fixture()
def scores_dir(tmp_path: Path) -> Path:
    _write_scores(tmp_path, "embedded", hits={"s1": True, "l1": False}, letter=0)
    _write_scores(tmp_path, "random", hits={"s1": False, "l1": False}, letter=1)
    return tmp_path


def test_rows_are_ranked_with_primary_metrics(scores_dir: Path) -> None:
    board = leaderboard(scores_dir)
    assert [r.model for r in board.rows] == ["embedded", "random"]
    best = board.rows[0]
    assert best.recall_07 == 0.5 and best.recall_05 == 0.5
    assert best.recall_07_by_bucket == {"short": 1.0, "long": 0.0}
    assert best.vnbench_overall is not None and best.average_map is not None
    assert board.rows[1].recall_07 == 0.0


def test_tables_in_three_formats(scores_dir: Path) -> None:
    board = leaderboard(scores_dir)
    text = board.to_text().splitlines()
    assert text[0].split()[:2] == ["model", "R@1x"] and text[2].startswith("embedded")
    assert "50.00" in text[2]
    markdown = board.to_markdown()
    assert markdown.startswith("| model | R@1x 0.7 | R@1x 0.5 | avg mAP | VNBench overall | "
                               "R@1x 0.7 (s) |")
    assert "| random | 0.00 [0.0–0.0] |" in markdown
    # two questions and one sample tell nobody apart, and the table says so
    assert "VNBench overall: intervals overlap, not told apart by these questions: embedded " \
        "and random." in markdown
    assert board.to_html().count("<tr>") == 3 and "<td>embedded</td>" in board.to_html()


def _row(model: str, vnbench: float, ci: tuple[float, float]) -> dict[str, object]:
    return {"model": model, "grounding": {}, "choice": {},
            "vnbench": {"overall": vnbench, "overall_ci": list(ci)}}


def test_overlapping_intervals_are_named_and_separated_ones_are_not(tmp_path: Path) -> None:
    rows = {"reader": _row("reader", 0.6, (0.5, 0.7)), "prior": _row("prior", 0.25, (0.15, 0.35)),
            "guess": _row("guess", 0.2, (0.1, 0.3)), "old": {"model": "old", "vnbench": {
                "overall": 0.1}}}  # a score file from before intervals: shown, not compared
    for name, data in rows.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(data))
    board = leaderboard(tmp_path)
    assert board.overlapping()["VNBench overall"] == [("prior", "guess")]
    assert [r.model for r in board.rows] == ["reader", "prior", "guess", "old"]
    text = board.to_text()
    assert "60.00 [50.0–70.0]" in text and "not told apart by these questions: prior and " \
        "guess." in text
    (tmp_path / "prior.json").write_text(json.dumps(_row("prior", 0.25, (0.36, 0.4))))
    assert "every model's interval is apart" in leaderboard(tmp_path).to_markdown()


@pytest.mark.parametrize("ci", [[0.3], [0.4, 0.2], [0.1, 1.5], "wide"])
def test_bad_intervals_are_refused(tmp_path: Path, ci: object) -> None:
    data = {"vnbench": {"overall": 0.3, "overall_ci": ci}}
    (tmp_path / "m.json").write_text(json.dumps(data))
    with pytest.raises(EvaluationError, match=r"m\.json overall_ci = .* interval"):
        leaderboard(tmp_path)


def test_plot_is_a_png(scores_dir: Path, tmp_path: Path) -> None:
    path = leaderboard(scores_dir).plot(tmp_path / "plots" / "recall_by_bucket.png")
    with Image.open(path) as image:
        assert image.format == "PNG" and image.size[0] > 300


def test_bad_folders_and_files(tmp_path: Path) -> None:
    with pytest.raises(EvaluationError, match="does not exist"):
        leaderboard(tmp_path / "nope")
    with pytest.raises(EvaluationError, match=r"no \*\.json"):
        leaderboard(tmp_path)
    (tmp_path / "x.json").write_text('{"hello": 1}')
    with pytest.raises(EvaluationError, match="not a score report"):
        leaderboard(tmp_path)
    (tmp_path / "x.json").write_text('{"grounding": {"all": {"all": {"recall": {"0.7": NaN}}}}}')
    with pytest.raises(EvaluationError, match="finite"):
        leaderboard(tmp_path)


#: A model name as hostile as a score file's ``model`` key can make it.
HOSTILE_MODEL = "<img src=x onerror=\"alert('x')\"> & </td>"


def _hostile_board() -> Leaderboard:
    rows = [LeaderboardRow(model=HOSTILE_MODEL, recall_07=0.5, recall_05=0.75, average_map=0.4,
                           vnbench_overall=None, recall_07_by_bucket={"short": 0.5},
                           recall_07_ci=(0.25, 0.75), recall_05_ci=(0.5, 1.0)),
            LeaderboardRow(model="random", recall_07=0.25, recall_05=None, average_map=None,
                           vnbench_overall=0.25, recall_07_by_bucket={},
                           recall_07_ci=(0.0, 0.5), vnbench_overall_ci=(0.1, 0.4),
                           recall_07_second_set=0.2)]
    return leaderboard_from_rows(rows)


def test_html_table_shows_what_it_showed_before() -> None:
    """``snapshots/leaderboard.html`` is the f-string renderer's table (13d845a); compared as a
    browser reads both (:mod:`tests.html_parts`), so only escape spellings may differ."""
    golden = Path(__file__).parent / "snapshots" / "leaderboard.html"
    assert html_parts(_hostile_board().to_html()) == html_parts(
        golden.read_text(encoding="utf-8"))


def test_a_hostile_model_name_stays_text() -> None:
    page = _hostile_board().to_html()
    assert "<img" not in page and HOSTILE_MODEL in texts(page)
    assert {p[1] for p in html_parts(page) if p[0] == "start"} == {
        "table", "thead", "tbody", "tr", "th", "td", "p"}
