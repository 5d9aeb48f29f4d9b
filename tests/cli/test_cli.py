"""The CLI: thin commands, exit status 2 with one clear message on user errors."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml
from typer.testing import CliRunner

from needleforge.cli import app
from needleforge.store import SCHEMA_VERSION, Store

runner = CliRunner()
LICENCE = {"program": "p", "rights_holder": "R", "licence_id": "CC0-1.0",
           "scope": ["benchmark"], "valid_until": "2099-01-01"}


def test_ingest_reports_refusals_and_is_idempotent(media_dir: Path, tmp_path: Path) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    shutil.copy(media_dir / "bars.mp4", lib / "bars.mp4")
    manifest = lib / "m.yaml"
    manifest.write_text(yaml.safe_dump({"sources": [
        {"path": "bars.mp4", **LICENCE},
        {"path": "missing.mp4", **LICENCE},
    ]}))
    db = tmp_path / "nf.duckdb"
    result = runner.invoke(app, ["ingest", str(manifest), "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert "ingested 1 video(s) (1 new), refused 1 row(s) (1 new)" in result.output
    assert "missing_file" in result.output
    again = runner.invoke(app, ["ingest", str(manifest), "--db", str(db)])
    assert "ingested 1 video(s) (0 new), refused 1 row(s) (0 new)" in again.output
    assert (tmp_path / "media").is_dir()
    status = runner.invoke(app, ["status", "--db", str(db)])
    assert status.exit_code == 0 and "videos" in status.output and "missing_file" in status.output


def test_user_errors_exit_2_without_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "m.yaml"
    bad.write_bytes("sources:\n  - path: \xff.mp4\n".encode("latin-1"))
    db = tmp_path / "nf.duckdb"
    result = runner.invoke(app, ["ingest", str(bad), "--db", str(db)])
    assert result.exit_code == 2
    assert "not UTF-8" in result.output and "Traceback" not in result.output
    assert not db.exists()

    params = tmp_path / "params.yaml"
    params.write_text("ingest:\n  link_mod: copy\n")
    result = runner.invoke(app, ["ingest", str(bad), "--db", str(db), "--params", str(params)])
    assert result.exit_code == 2 and "unknown key 'ingest.link_mod'" in result.output

    result = runner.invoke(app, ["status", "--db", str(tmp_path / "none.duckdb")])
    assert result.exit_code == 2 and "store not found" in result.output


def test_version() -> None:
    result = runner.invoke(app, ["version"])
    assert result.exit_code == 0 and "needleforge" in result.output


def test_status_counts(tmp_path: Path) -> None:
    db = tmp_path / "nf.duckdb"
    Store(db).close()
    result = runner.invoke(app, ["status", "--db", str(db)])
    assert result.exit_code == 0 and f"schema v{SCHEMA_VERSION}" in result.output


def test_score_command_writes_json_and_rejects_bad_lines(tmp_path: Path) -> None:
    import json

    from tests.evaluate.eval_helpers import grounding_q, write_jsonl

    questions = write_jsonl(tmp_path / "q.jsonl", [grounding_q("q1", [[0, 9]]),
                                                   grounding_q("q2", [[20, 29]])])
    preds = write_jsonl(tmp_path / "p.jsonl", [{"question_id": "q1", "pred_spans": [[0, 9]]},
                                               {"question_id": "q2", "response": "0:20-0:29"}])
    out = tmp_path / "scores" / "s.json"
    result = runner.invoke(app, ["score", "--questions", str(questions), "--predictions",
                                 str(preds), "--out", str(out)])
    assert result.exit_code == 0, result.output
    scores = json.loads(out.read_text())
    assert scores["grounding"]["all"]["all"]["recall"]["0.7"] == 1.0
    preds.write_text(preds.read_text() + "{not json\n")
    bad = runner.invoke(app, ["score", "--questions", str(questions), "--predictions",
                              str(preds)])
    assert bad.exit_code == 2 and "p.jsonl:3: not valid JSON" in bad.output

