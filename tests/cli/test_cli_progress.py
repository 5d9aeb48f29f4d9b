"""Every long stage's command shows its counts off a terminal: count lines on stderr as the
stage body reports, and one last line (CliRunner's stderr is no TTY, as under ``dvc repro``).

The stage bodies are stand-ins that count as the real ones do (their own counting is tested
beside each stage, and the slow whole-pipeline tests see the real lines); the line interval
is set to 0 so that every count is due without waiting. ``evaluate`` runs for real: its
blind baselines answer in milliseconds.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import needleforge.runtime.progress as progress
from needleforge.cli import app
from needleforge.nemo import ExpansionResult, GenerationResult
from needleforge.quality.results import GateResult
from needleforge.release.build import ReleaseReport
from needleforge.stages import expand as expand_stage
from needleforge.stages import nemo as nemo_stage
from needleforge.stages import release as release_stage
from needleforge.stages import render as render_stage
from needleforge.stages import represent as represent_stage
from needleforge.stages import validate as validate_stage
from needleforge.stages import vnbench as vnbench_stage
from needleforge.stages.nemo import GenerateOutcome
from needleforge.stages.render import RenderReport
from needleforge.stages.represent import RepresentOutcome
from needleforge.store import Store
from needleforge.vnbench.records import VNBenchResult

runner = CliRunner()


@pytest.fixture(autouse=True)
def _every_count_due(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress, "LINE_EVERY_S", 0.0)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "nf.duckdb"
    Store(path).close()
    return path


def _stand_in(callback: str, result: Any, total: int = 3) -> Callable[..., Any]:
    """A stage body that counts ``total`` items through its ``callback`` keyword."""
    def body(*_args: Any, **kwargs: Any) -> Any:
        for done in range(1, total + 1):
            kwargs[callback](done, total)
        return result
    return body


def _lines(stderr: str, stage: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith(f"{stage}: ")]


def _assert_counted(stderr: str, stage: str, unit: str, total: int = 3) -> None:
    lines = _lines(stderr, stage)
    counts = [re.sub(r", \d+ s$", "", line) for line in lines[:-1]]
    for done in range(1, total + 1):  # (a heartbeat may repeat a count on a slow machine)
        assert f"{stage}: {done}/{total} {unit}" in counts, stderr
    assert re.fullmatch(rf"{re.escape(stage)}: done, {total}/{total} {re.escape(unit)} "
                        r"in \d+ s", lines[-1]), stderr


def test_nemo(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import needleforge.runtime.preflight as preflight

    monkeypatch.setattr(preflight, "check_nemo", lambda params: None)
    outcome = GenerateOutcome(GenerationResult((), (), (), ()), None)
    monkeypatch.setattr(nemo_stage, "generate_store", _stand_in("on_step", outcome))
    result = runner.invoke(app, ["nemo", "--db", str(db)])
    assert result.exit_code == 0, result.output
    _assert_counted(result.stderr, "nemo", "target steps (plan, verdict)")
    assert "nemo: 0 short montage(s)" in result.stdout


def test_expand(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(expand_stage, "expand_store",
                        _stand_in("on_group", ExpansionResult((), (), (), ())))
    result = runner.invoke(app, ["expand", "--db", str(db)])
    assert result.exit_code == 0, result.output
    _assert_counted(result.stderr, "expand", "montage groups")


def test_render(db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    report = RenderReport(montages=(), cache_hits=0, cache_misses=0, encode_cpu_s=0.0,
                          join_cpu_s=0.0, wall_s=0.0)
    monkeypatch.setattr(render_stage, "render_store", _stand_in("on_step", report))
    result = runner.invoke(app, ["render", "--db", str(db), "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    _assert_counted(result.stderr, "render", "scene clips and montages")


def test_vnbench(db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vnbench_stage, "vnbench_store",
                        _stand_in("on_step", VNBenchResult((), (), (), (), ())))
    result = runner.invoke(app, ["vnbench", "--db", str(db), "--out", str(tmp_path / "v")])
    assert result.exit_code == 0, result.output
    _assert_counted(result.stderr, "vnbench", "haystacks and samples")


def test_validate(db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(validate_stage, "run_checks",
                        _stand_in("on_step", GateResult(passed=True, failures=[])))
    result = runner.invoke(app, ["validate", "--db", str(db), "--out", str(tmp_path / "q")])
    assert result.exit_code == 0, result.output
    _assert_counted(result.stderr, "validate", "gate steps")


def test_release(db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    report = ReleaseReport(name="t1", path=tmp_path / "t1", n_questions=0, n_montages=0,
                           n_videos=0, n_files=0, failed=(), unverified=(),
                           manifest_sha256="0" * 64, changes={})
    monkeypatch.setattr(release_stage, "release_store", _stand_in("on_step", report))
    result = runner.invoke(app, ["release", "t1", "--db", str(db), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    _assert_counted(result.stderr, "release t1", "build steps")


def test_represent_and_review(db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import needleforge.review as review
    import needleforge.stages.review as review_stage

    outcome = RepresentOutcome(represented=3, current=0, failures=(),
                               counts={"scenes": 0, "scene_tags": 0, "objects": 0})
    monkeypatch.setattr(represent_stage, "represent_store", _stand_in("on_video", outcome))
    result = runner.invoke(app, ["scenes", "--db", str(db)])
    assert result.exit_code == 0, result.output
    _assert_counted(result.stderr, "scenes", "videos")

    sheets = review.ReviewOutcome(tmp_path, (), tmp_path / "index.html",
                                  tmp_path / "verdicts_template.yaml", 0, None)
    monkeypatch.setattr(review_stage, "review_store", _stand_in("on_sheet", sheets))
    result = runner.invoke(app, ["review", "--db", str(db), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    _assert_counted(result.stderr, "review", "contact sheets")


def test_evaluate_counts_the_answers_of_every_model(tmp_path: Path) -> None:
    from tests.evaluate.eval_helpers import grounding_q, write_jsonl

    release = tmp_path / "release"
    release.mkdir()
    write_jsonl(release / "questions.jsonl", [grounding_q(f"q{i}", [[10 * i, 10 * i + 5]])
                                              for i in range(4)])
    result = runner.invoke(app, ["evaluate", "--release", str(release), "--model",
                                 "position_prior", "--model", "length_prior",
                                 "--out-dir", str(tmp_path / "preds")])
    assert result.exit_code == 0, result.output
    lines = _lines(result.stderr, "evaluate")
    assert any(line.startswith("evaluate: 4/8 answers (2 model(s)), ") for line in lines), \
        result.stderr
    assert re.fullmatch(r"evaluate: done, 8/8 answers \(2 model\(s\)\) in \d+ s", lines[-1])


def test_an_error_before_the_stage_counts_prints_no_progress_line(tmp_path: Path) -> None:
    result = runner.invoke(app, ["evaluate", "--release", str(tmp_path), "--model", "gpt-9"])
    assert result.exit_code == 2
    assert "unknown model" in result.stderr and "evaluate:" not in result.stderr
