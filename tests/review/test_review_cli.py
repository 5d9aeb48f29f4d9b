"""``needleforge review``: the sheets, the report, and exit status 2 on bad inputs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from needleforge.cli import app
from needleforge.review import load_verdicts
from tests.review.review_cases import World, make_world

runner = CliRunner()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return make_world(tmp_path_factory.mktemp("review-cli"))


def test_review_writes_sheets_and_reports_the_verdicts(world: World, tmp_path: Path) -> None:
    out = tmp_path / "review"
    first = runner.invoke(app, ["review", "--db", str(world.db), "--out", str(out)])
    assert first.exit_code == 0, first.output
    assert "review: 2 contact sheet(s)" in first.output
    template = load_verdicts(out / "verdicts_template.yaml")
    judged = [{"key": v.key, "question_id": v.question_id, "valid": v.question_id == "q-obj",
               "spans_right": True, "negatives_clean": v.question_id == "q-obj", "note": ""}
              for v in template.values()]
    verdicts = tmp_path / "verdicts.yaml"
    verdicts.write_text(yaml.safe_dump({"version": 1, "verdicts": judged[:1]}))
    second = runner.invoke(app, ["review", "--db", str(world.db), "--out", str(out),
                                 "--verdicts", str(verdicts), "--all-buckets"])
    assert second.exit_code == 0, second.output
    assert "review: 3 contact sheet(s)" in second.output
    assert "human verdicts on 3 question(s): 1 valid, 0 invalid, 2 unjudged" in second.output
    # the judged question left the template; the other two (and q-multi) are still there
    still = load_verdicts(out / "verdicts_template.yaml")
    assert len(still) == 2 and judged[0]["key"] not in still


def test_missing_db_exits_2_naming_it(tmp_path: Path) -> None:
    db = tmp_path / "none.duckdb"
    result = runner.invoke(app, ["review", "--db", str(db), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert str(db) in result.output and "store not found" in result.output
    assert "Traceback" not in result.output and not (tmp_path / "o").exists()


def test_a_file_that_is_no_store_exits_2(tmp_path: Path) -> None:
    db = tmp_path / "notes.duckdb"
    db.write_text("meeting notes\n")
    result = runner.invoke(app, ["review", "--db", str(db), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and str(db) in result.output


def test_unwritable_out_exits_2(world: World, tmp_path: Path) -> None:
    taken = tmp_path / "taken"
    taken.write_text("a file, not a folder\n")
    result = runner.invoke(app, ["review", "--db", str(world.db), "--out", str(taken)])
    assert result.exit_code == 2 and "is a file" in result.output  # typer refuses it
    out = taken / "review"  # a folder that cannot be made: its parent is a file
    result = runner.invoke(app, ["review", "--db", str(world.db), "--out", str(out)])
    assert result.exit_code == 2 and "cannot write" in result.output
    assert str(out) in result.output and "Traceback" not in result.output


def test_bad_verdict_file_exits_2_before_any_sheet(world: World, tmp_path: Path) -> None:
    verdicts = tmp_path / "v.yaml"
    verdicts.write_text("version: 1\nverdicts:\n  - key: k1\n    valid: maybe\n")
    out = tmp_path / "o"
    result = runner.invoke(app, ["review", "--db", str(world.db), "--out", str(out),
                                 "--verdicts", str(verdicts)])
    assert result.exit_code == 2
    assert str(verdicts) in result.output and "entry 1 (key k1)" in result.output
    assert not out.exists()
