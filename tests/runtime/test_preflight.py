"""Backend checks before anything slow: a dead model server, a missing sidecar Python and a
checkpoint that is not one are each one line, before the pipeline is imported or a store is
touched, and paths in a params file are read from beside it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from needleforge.cli import app

SRC = Path(__file__).resolve().parents[2] / "src"
#: Modules whose import is the slow part of a stage: none may come before a preflight error.
HEAVY = ("needleforge.stages.nemo", "pandas", "great_expectations", "cv2", "torch")


def closed_port() -> int:
    """A port nobody listens on once the socket closes."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def ram_params(folder: Path, **options: str) -> Path:
    """A params file in ``folder`` asking for the RAM++ tagger with ``options``."""
    folder.mkdir(parents=True, exist_ok=True)
    params = folder / "params.yaml"
    params.write_text(yaml.safe_dump({"objects": {"tagger": "ram_plus",
                                                  "tagger_options": options}}))
    return params


@pytest.mark.parametrize(("content", "says"), [
    (b"", "is empty (0 bytes), not a PyTorch checkpoint"),
    (b"model weights: see https://example.org/ram\n", "is a text file (43 bytes), not a "
     "PyTorch checkpoint"),
    (b"<!doctype html>\n<html><head><title>404</title></head></html>\n", "is an HTML page, "
     "not a PyTorch checkpoint (a download that saved an error or sign-in page?)"),
])
def test_a_checkpoint_that_is_not_one_is_one_line_naming_it(
    content: bytes, says: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Empty, text and HTML files as RAM++ checkpoints, named relative to the params file and
    the command run from another folder: one line, the absolute path, what the file is not,
    no library text, and no store."""
    conf = tmp_path / "conf"
    params = ram_params(conf, checkpoint="weights/ram_plus.pth", python=sys.executable)
    (conf / "weights").mkdir()
    (conf / "weights" / "ram_plus.pth").write_bytes(content)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    db = tmp_path / "nf.duckdb"
    result = CliRunner().invoke(app, ["represent", "--db", str(db), "--params", str(params)])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines == [f"error: RAM++ tagger unavailable: checkpoint "
                     f"{conf / 'weights' / 'ram_plus.pth'} {says}"]
    for library_text in ("Error", "torch.load", "weights_only", "Traceback", "pop from"):
        assert library_text not in result.output
    assert not db.exists()


def test_a_missing_sidecar_python_is_named_by_its_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``python: .venv-ram/bin/python`` is the params file's neighbour, wherever the command
    runs, and the error says which folder it looked in."""
    conf = tmp_path / "project"
    checkpoint = conf / "ram_plus.pth"
    params = ram_params(conf, checkpoint="ram_plus.pth", python=".venv-ram/bin/python")
    checkpoint.parent.mkdir(exist_ok=True)
    checkpoint.write_bytes(b"PK\x03\x04" + bytes(60))
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["objects", "--db", str(tmp_path / "nf.duckdb"),
                                      "--params", str(params)])
    assert result.exit_code == 2, result.output
    assert (f"python {conf}/.venv-ram/bin/python (RAM++'s own environment) does not exist: "
            "build it with `make ram-env`") in result.output
    assert "checkpoint" not in result.output  # only what is wrong is named


def test_a_dead_model_server_is_reported_before_the_pipeline_is_imported(
    tmp_path: Path,
) -> None:
    """``needleforge nemo`` against a port nobody listens on, as a user runs it (its own
    process, imports logged by ``-X importtime``): the error comes before any of the slow
    imports the stage needs, so before any scan, and no store is created."""
    url = f"http://127.0.0.1:{closed_port()}/v1"
    options = {"base_url": url, "model": "m", "max_retries": 0}
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"nemo": {
        "describer": "openai_http", "describer_options": options,
        "verifier": "openai_http", "verifier_options": options}}))
    db = tmp_path / "nf.duckdb"
    env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
           "COLUMNS": "400", "NO_COLOR": "1"}
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
                 "all_proxy"):
        env.pop(name, None)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "needleforge.cli.main", "nemo", "--db", str(db),
         "--params", str(params)], capture_output=True, text=True, env=env, timeout=300,
        check=False)
    seconds = time.monotonic() - started
    events = done.stderr.splitlines()
    errors = [i for i, line in enumerate(events) if line.startswith("error:")]
    assert done.returncode == 2 and errors, done.stderr[-2000:]
    assert f"no answer from the model server at {url}" in events[errors[0]]
    heavy = [i for i, line in enumerate(events) if line.startswith("import time:")
             and line.rsplit("|", 1)[-1].strip() in HEAVY]
    assert not heavy or min(heavy) > errors[0], [events[i] for i in heavy]
    assert not db.exists()
    print(f"dead server: first error after {seconds:.1f} s (process start included)")
