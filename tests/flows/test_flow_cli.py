"""The flows' shared command line and the owners of what flows and the CLI share.

One owner each: the default store (:data:`needleforge.params.DEFAULT_DB`, also the CLI's)
and the thread runner a flow is declared with
(:func:`needleforge.orchestration.runners.default_task_runner`);
a test reads every module of ``flows/`` and the package and fails on a second copy.

Bad inputs tried here: ``--db`` naming a folder, ``--params`` naming a missing file, a folder
and a file with an unknown key, a runner address given for the threads runner, and a project
error raised by a flow; each ends with one message and exit status 2, before Prefect starts
(the address error once the params are read), never a traceback.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from prefect.task_runners import ThreadPoolTaskRunner

from flows._cli import flow_parser, run_main
from needleforge.cli import main as cli
from needleforge.errors import StoreError
from needleforge.orchestration.runners import default_task_runner
from needleforge.params import DEFAULT_DB, RunnerParams

ROOT = Path(__file__).resolve().parents[2]
OWNERS = {ROOT / "src" / "needleforge" / "params" / "file.py",
          ROOT / "src" / "needleforge" / "orchestration" / "runners.py"}
#: Every flow module with a ``main``, and the positional arguments it needs.
MAINS = {"expand": [], "generate": [], "ingest": ["manifest.yaml"], "render": [],
         "represent": [], "vnbench": [], "release": ["name"], "refresh": ["manifest.yaml"],
         "evaluate": ["releases/x"]}


def _sources() -> list[Path]:
    return sorted([*(ROOT / "flows").glob("*.py"), *(ROOT / "src" / "needleforge").rglob("*.py")])


def _code_strings(tree: ast.AST) -> list[str]:
    """Every string constant of ``tree`` that is not a docstring."""
    docs = {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.body and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)}
    return [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)
            and isinstance(node.value, str) and id(node) not in docs]


def _calls_of(tree: ast.AST, name: str) -> list[int]:
    return [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Call) and (
        (isinstance(node.func, ast.Name) and node.func.id == name)
        or (isinstance(node.func, ast.Attribute) and node.func.attr == name))]


def test_the_store_default_and_the_thread_runner_have_one_owner() -> None:
    copies: list[str] = []
    for path in _sources():
        if path in OWNERS:
            continue
        tree = ast.parse(path.read_text("utf-8"))
        where = path.relative_to(ROOT)
        copies += [f"{where}: {s!r}" for s in _code_strings(tree) if "needleforge.duckdb" in s]
        copies += [f"{where}:{line}: ThreadPoolTaskRunner(...)"
                   for line in _calls_of(tree, "ThreadPoolTaskRunner")]
    assert copies == [], ("the default store belongs to needleforge.params.DEFAULT_DB and the "
                          "thread runner to needleforge.orchestration.runners; copies found:\n"
                          + "\n".join(copies))
    assert cli.DEFAULT_DB is DEFAULT_DB
    assert flow_parser(None).parse_args([]).db == DEFAULT_DB


def test_flows_are_declared_with_the_default_runner() -> None:
    from flows.generate import generate_flow
    from flows.render import render_flow
    from flows.represent import represent_flow

    workers = RunnerParams().workers
    runner = default_task_runner()
    assert isinstance(runner, ThreadPoolTaskRunner) and runner._max_workers == workers
    for declared in (generate_flow, render_flow, represent_flow):
        assert isinstance(declared.task_runner, ThreadPoolTaskRunner)
        assert declared.task_runner._max_workers == workers


def _usage_error(parser: argparse.ArgumentParser, argv: list[str],
                 capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exit_info:
        parser.parse_args(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def test_shared_options_and_their_checks(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    parser = flow_parser("a flow", runner=True)
    args = parser.parse_args([])
    assert (args.db, args.params, args.runner, args.workers, args.address) == (
        DEFAULT_DB, None, None, None, None)
    good = tmp_path / "params.yaml"
    good.write_text("runner:\n  workers: 3\n")
    args = parser.parse_args(["--db", str(tmp_path / "new.duckdb"), "--params", str(good)])
    assert (args.db, args.params) == (tmp_path / "new.duckdb", good)

    err = _usage_error(parser, ["--db", str(tmp_path)], capsys)
    assert f"argument --db: {tmp_path} is a folder; expected a DuckDB file" in err
    missing = tmp_path / "nope.yaml"
    err = _usage_error(parser, ["--params", str(missing)], capsys)
    assert f"argument --params: {missing}: params file not found" in err
    err = _usage_error(parser, ["--params", str(tmp_path)], capsys)
    assert f"{tmp_path} is a folder; expected a params file" in err
    bad = tmp_path / "bad.yaml"
    bad.write_text("renderr: {}\n")
    err = _usage_error(parser, ["--params", str(bad)], capsys)
    assert str(bad) in err and "unknown key 'renderr'" in err
    assert not hasattr(flow_parser(None, db=False).parse_args([]), "db")


def test_a_project_error_is_one_line_and_status_2(capsys: pytest.CaptureFixture[str]) -> None:
    parser = flow_parser(None)
    parser.prog = "flow"

    def fail(args: argparse.Namespace) -> None:
        raise StoreError(f"{args.db}: cannot open as a DuckDB store")

    with pytest.raises(SystemExit) as exit_info:
        run_main(parser, fail, ["--db", "x.duckdb"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == "flow: error: x.duckdb: cannot open as a DuckDB store\n"

    def bug(args: argparse.Namespace) -> None:
        raise RuntimeError("a bug")

    with pytest.raises(RuntimeError, match="a bug"):  # not a user's error: not hidden
        run_main(parser, bug, [])
    ran: list[argparse.Namespace] = []
    run_main(parser, ran.append, [])
    assert ran[0].db == DEFAULT_DB


@pytest.mark.parametrize("name", sorted(MAINS))
def test_every_flow_main_refuses_a_missing_params_file(
        name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main = importlib.import_module(f"flows.{name}").main
    missing = tmp_path / "missing.yaml"
    with pytest.raises(SystemExit) as exit_info:
        main([*MAINS[name], "--params", str(missing)])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"{missing}: params file not found" in err and "Traceback" not in err


def test_runner_override_errors_end_like_the_cli(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from flows.represent import main

    with pytest.raises(SystemExit) as exit_info:
        main(["--db", str(tmp_path / "nf.duckdb"), "--address", "tcp://127.0.0.1:9"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "error: runner address 'tcp://127.0.0.1:9' given" in err
    assert not (tmp_path / "nf.duckdb").exists()


@pytest.mark.slow  # a fresh interpreter importing Prefect: ~5-10 s
def test_python_dash_m_exits_2_without_a_traceback(tmp_path: Path) -> None:
    missing = tmp_path / "missing.yaml"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "flows.expand", "--params", str(missing)],
                          cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 2, proc.stderr
    assert f"{missing}: params file not found" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_generate_flow_checks_its_model_server_before_scanning(tmp_path: Path) -> None:
    """A describer whose server does not serve the model stops the generate flow before the
    negative scans (most of the stage), naming the models the server does serve; nothing
    is stored (the store is not even opened)."""
    from flows.generate import generate_flow
    from needleforge.errors import BackendError
    from tests.backends.openai_stub_server import ChatStubServer

    with ChatStubServer(models=("served-model",)) as server:
        options = {"base_url": server.url, "model": "wrong-model", "api_key": "k"}
        params = tmp_path / "params.yaml"
        params.write_text(yaml.safe_dump({"nemo": {
            "describer": "openai_http", "describer_options": options}}))
        db = tmp_path / "store.duckdb"
        with pytest.raises(BackendError, match="served-model"):
            generate_flow.fn(db, params)
    assert server.model_listings == 1 and not db.exists()
