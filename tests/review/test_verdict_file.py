"""The human verdict file: written by every pull, merged by (source, source_ref), read back by
the release stage; a corrupt file stops a pull before anything is written (no Label Studio
server needed: the YAML pull takes the same path)."""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from needleforge.cli import app
from needleforge.records.human import HumanVerdict
from needleforge.review.verdict_file import merge_verdicts, read_verdict_file, write_verdict_file
from needleforge.review.verdicts import VerdictError
from needleforge.stages.review import record_and_keep, record_verdict_file
from needleforge.store import Store
from needleforge.store.human import human_verdicts
from tests.review.review_cases import World
from tests.review.test_human_verdicts import _keys, _verdict

runner = CliRunner()


def _batch(db: Path) -> list[HumanVerdict]:
    keys = _keys(db)
    return [_verdict(keys["q-scene"], "q-scene", "b", "valid", ref="L/2"),
            _verdict(keys["q-obj"], "q-obj", "a", "wrong span", ref="L/1",
                     spans=((3.0, 5.0),)),
            dataclasses.replace(_verdict(keys["q-obj"], "q-obj", "ü", "unsure", ref="L/3"),
                                note="ein Drache? ✓", updated_at="2026-12-01T10:00:00Z")]


def test_written_sorted_in_field_order_and_read_back(db: Path, tmp_path: Path) -> None:
    path = tmp_path / "reviews" / "human_verdicts.jsonl"
    batch = _batch(db)
    write_verdict_file(path, merge_verdicts([], batch))
    lines = path.read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    order = [(r["question_key"], r["source"], r["source_ref"]) for r in rows]
    assert order == sorted(order) and len(rows) == 3
    assert list(rows[0]) == [f.name for f in dataclasses.fields(HumanVerdict)]
    assert "ein Drache? ✓" in path.read_text(encoding="utf-8")  # readable in a diff
    assert sorted(read_verdict_file(path), key=lambda v: v.source_ref) == \
        sorted(batch, key=lambda v: v.source_ref)  # spans come back as tuples of floats


def test_missing_empty_and_blank_files_hold_no_verdicts(tmp_path: Path) -> None:
    assert read_verdict_file(tmp_path / "absent.jsonl") == []
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert read_verdict_file(empty) == []
    empty.write_text("\n  \n")
    assert read_verdict_file(empty) == []


def test_a_pull_merges_and_a_second_one_changes_nothing(db: Path, tmp_path: Path) -> None:
    path = tmp_path / "human_verdicts.jsonl"
    batch = _batch(db)
    _, kept = record_and_keep(db, batch[:2], path=path)
    assert (kept.rows, kept.written) == (2, 2)
    _, kept = record_and_keep(db, batch[2:], path=path)  # another round: rows are kept
    assert (kept.rows, kept.written) == (3, 1)
    before, mtime = path.read_bytes(), path.stat().st_mtime_ns
    outcome, kept = record_and_keep(db, batch, path=path)
    assert (kept.rows, kept.written) == (3, 0) and outcome.recorded.unchanged == 3
    assert path.read_bytes() == before and path.stat().st_mtime_ns == mtime  # not rewritten
    edited = dataclasses.replace(batch[0], choice="wrong description", valid=False)
    _, kept = record_and_keep(db, [edited], path=path)
    assert (kept.rows, kept.written) == (3, 1)
    assert {v.source_ref: v for v in read_verdict_file(path)}["L/2"] == edited


def test_the_yaml_pull_writes_the_file_through_the_cli(db: Path, tmp_path: Path) -> None:
    keys = _keys(db)
    source, path = tmp_path / "verdicts.yaml", tmp_path / "out" / "human_verdicts.jsonl"
    entry = {"key": keys["q-obj"], "question_id": "q-obj", "valid": True, "spans_right": True,
             "negatives_clean": True, "note": "fine"}
    source.write_text(yaml.safe_dump({"version": 1, "verdicts": [entry]}))
    args = ["review", "--db", str(db), "--from", "yaml", "--verdicts", str(source),
            "--human-verdicts", str(path)]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    assert f"verdict file {path}: 1 row(s), 1 new or changed" in first.output
    written = path.read_bytes()
    again = runner.invoke(app, args)
    assert "1 row(s), 0 new or changed" in again.output and path.read_bytes() == written
    source.write_text(yaml.safe_dump({"version": 1, "verdicts": [{**entry, "valid": False}]}))
    edited = runner.invoke(app, args)
    assert "1 changed" in edited.output and "1 row(s), 1 new or changed" in edited.output
    (row,) = read_verdict_file(path)
    assert (row.valid, row.choice, row.source_ref) == (False, "invalid", "verdicts.yaml#"
                                                       + keys["q-obj"])


def _good_line(db: Path) -> str:
    """The file's line of the verdict from "L/1"."""
    return json.dumps(dataclasses.asdict(_batch(db)[1]) | {"answer_spans": [[3.0, 5.0]]})


@pytest.mark.parametrize(("corrupt", "message"), [
    (lambda good: "{not json", r"not JSON \(Expecting property name"),
    (lambda good: "[1, 2]", "a verdict must be a JSON object, not list"),
    (lambda good: json.dumps({k: v for k, v in json.loads(good).items() if k != "annotator"}),
     r"missing field\(s\) \['annotator'\]"),
    (lambda good: json.dumps(json.loads(good) | {"judge": "x"}), r"unknown field\(s\) \['judge'\]"),
    (lambda good: json.dumps(json.loads(good) | {"choice": "maybe"}),
     "choice = 'maybe' must be one of .*'invalid'"),
    (lambda good: json.dumps(json.loads(good) | {"valid": "yes"}),
     "valid: Input should be a valid boolean"),
    (lambda good: json.dumps(json.loads(good) | {"source": "email"}),
     "source: Input should be 'label-studio' or 'yaml'"),
    (lambda good: good, r"a second verdict from 'L/1' \(label-studio; the first is on line 1\)"),
])
def test_a_corrupt_file_stops_the_pull_naming_its_line(
        db: Path, tmp_path: Path, corrupt: Callable[[str], str], message: str) -> None:
    good = _good_line(db)
    path = tmp_path / "human_verdicts.jsonl"
    path.write_text(f"{good}\n\n{corrupt(good)}\n")
    before_file, before_db = path.read_bytes(), db.read_bytes()
    with pytest.raises(VerdictError, match=rf"^{path}:3: {message}"):
        read_verdict_file(path)
    with pytest.raises(VerdictError, match=message):
        record_and_keep(db, _batch(db), path=path)
    with pytest.raises(VerdictError, match=message):
        record_verdict_file(db, path)
    assert path.read_bytes() == before_file and db.read_bytes() == before_db
    with Store(db, read_only=True) as store:
        assert human_verdicts(store) == []


def test_a_corrupt_file_fails_the_cli_pull_with_exit_2(db: Path, tmp_path: Path) -> None:
    source, path = tmp_path / "verdicts.yaml", tmp_path / "human_verdicts.jsonl"
    source.write_text(yaml.safe_dump({"version": 1, "verdicts": []}))
    path.write_text("<<<<<<< HEAD\n")
    result = runner.invoke(app, ["review", "--db", str(db), "--from", "yaml", "--verdicts",
                                 str(source), "--human-verdicts", str(path)])
    assert result.exit_code == 2 and f"{path}:1: not JSON" in result.output
    assert path.read_text() == "<<<<<<< HEAD\n"


def test_a_verdict_on_a_vanished_question_stays_in_the_file_and_is_reported(
        world: World, db: Path, tmp_path: Path) -> None:
    path = tmp_path / "human_verdicts.jsonl"
    record_and_keep(db, _batch(db), path=path)
    rebuilt = tmp_path / "rebuilt.duckdb"  # a store rebuilt without q-scene, no verdicts
    shutil.copy(world.db, rebuilt)
    with Store(rebuilt) as store:
        store.drop_montages(["m-scene"])
    outcome = record_verdict_file(rebuilt, path)
    assert outcome.recorded.new == 3 and outcome.vanished == ("q-scene (L/2)",)
    assert "1 verdict(s) on questions that no longer exist" in outcome.to_text()
    assert len(read_verdict_file(path)) == 3
    assert record_verdict_file(rebuilt, path).recorded.unchanged == 3  # idempotent
