"""The debug log keeps what an error's one line leaves out: its causes, whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from needleforge.errors import BackendError
from needleforge.runtime.debug_log import log_path, record


def failing() -> None:
    try:
        [].pop()
    except IndexError as exc:
        raise BackendError("checkpoint /w/ram.pth cannot be read") from exc


def test_an_error_with_a_cause_is_logged_whole(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEEDLEFORGE_DEBUG_LOG", str(tmp_path / "logs" / "debug.log"))
    with pytest.raises(BackendError) as info:
        failing()
    assert record(info.value, command="represent") == tmp_path / "logs" / "debug.log"
    text = log_path().read_text()
    assert "needleforge represent" in text and "IndexError: pop from empty list" in text
    assert "The above exception was the direct cause" in text
    assert text.rstrip().endswith("BackendError: checkpoint /w/ram.pth cannot be read")


def test_an_error_without_causes_or_an_unwritable_log_is_not_logged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NEEDLEFORGE_DEBUG_LOG", str(tmp_path / "debug.log"))
    assert record(BackendError("plain"), command="nemo") is None
    assert not (tmp_path / "debug.log").exists()
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("NEEDLEFORGE_DEBUG_LOG", str(tmp_path / "file" / "debug.log"))
    with pytest.raises(BackendError) as info:
        failing()
    assert record(info.value, command="nemo") is None  # a folder that is a file: skipped


def test_the_default_log_is_in_the_cache_folder(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NEEDLEFORGE_DEBUG_LOG")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert log_path() == tmp_path / "needleforge" / "debug.log"


def test_commands_outside_cli_py_log_their_causes_too(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """``score`` (defined in cli.evaluate, as publish and pull are in cli.release) on a
    predictions file that is not JSON: one line that ends with where the log is, and the log
    holds the decoder's error the line leaves out, as for the commands of cli.main. Bad input
    tried: a predictions line cut off after its opening brace."""
    from typer.testing import CliRunner

    from needleforge.cli import app
    from tests.evaluate.eval_helpers import grounding_q, write_jsonl

    log = tmp_path / "debug.log"
    monkeypatch.setenv("NEEDLEFORGE_DEBUG_LOG", str(log))
    questions = tmp_path / "questions.jsonl"
    write_jsonl(questions, [grounding_q("g0", [[0.0, 8.0]])])
    predictions = tmp_path / "model.jsonl"
    predictions.write_text("{not json\n")
    result = CliRunner().invoke(app, ["score", "--questions", str(questions),
                                      "--predictions", str(predictions)])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"error: {predictions}:1: not valid JSON")
    assert lines[0].endswith(f"(details: {log})") and "Traceback" not in result.output
    text = log.read_text()
    assert "needleforge score" in text and "json.decoder.JSONDecodeError" in text


def test_a_flow_logs_an_error_with_causes_as_the_cli_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A flow's command line (``flows/_cli.run_main``) ends on a project error with the same
    line as before plus where its causes went; an error without causes logs nothing."""
    from flows._cli import flow_parser, run_main

    log = tmp_path / "debug.log"
    monkeypatch.setenv("NEEDLEFORGE_DEBUG_LOG", str(log))
    parser = flow_parser(None)
    parser.prog = "flow"
    with pytest.raises(SystemExit) as exit_info:
        run_main(parser, lambda _args: failing(), [])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == ("flow: error: checkpoint /w/ram.pth cannot be read "
                                       f"(details: {log})\n")
    assert "IndexError: pop from empty list" in log.read_text()
