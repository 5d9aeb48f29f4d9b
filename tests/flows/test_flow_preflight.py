"""The flows check their model backends at their start, as the CLI commands do.

A represent flow with a RAM++ checkpoint that is not one, and a generate flow against a
model server nobody answers at, each run for real through Prefect (the session's test API)
from their command line (``main``): they end with exit status 2 and the very line the CLI
prints, and the order of events is read back from Prefect's own records: the flow run
failed with no task run at all, so no video was represented and no negative scanned.
The refresh checks the same before it ingests anything.

Bad inputs tried: an empty file, a text file and an HTML page as the RAM++ checkpoint (the
sidecar Python present); a closed port as both describer's and verifier's ``base_url``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

# Imported with the module, not inside a test: Prefect's log handler keeps the stderr it
# first sees, and a test's capsys stream is closed when that test ends.
from flows.generate import main as generate_main
from flows.represent import main as represent_main
from needleforge.cli import app
from needleforge.errors import BackendError
from needleforge.store import Store
from tests.conftest import ffmpeg
from tests.runtime.test_preflight import closed_port, ram_params

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_harness")]

#: What the RAM++ tagger is given as its checkpoint, and what it is not.
NOT_CHECKPOINTS = {
    "empty": b"",
    "text": b"model weights: see https://example.org/ram\n",
    "html": b"<!doctype html>\n<html><head><title>404</title></head></html>\n",
}


def cli_error(args: list[str]) -> str:
    """The one line ``needleforge ARGS`` ends with, less its ``error: `` and details."""
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    [line] = [line for line in result.output.splitlines() if line.strip()]
    assert line.startswith("error: ")
    return line.removeprefix("error: ").split(" (details: ")[0]


def flow_error(main: Any, argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The error line a flow's ``main`` exits 2 with, less its ``<prog>: error: ``
    (Prefect's own log of the failed run may surround it on stderr)."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if ": error: " in line]
    assert len(lines) == 1, lines
    return lines[0].split(": error: ", 1)[1].split(" (details: ")[0]


def last_run_task_count(flow_name: str) -> tuple[str, int]:
    """The state of the latest run of ``flow_name`` and how many task runs it started."""
    from prefect import get_client
    from prefect.client.schemas.filters import (
        FlowFilter,
        FlowFilterName,
        FlowRunFilter,
        FlowRunFilterId,
    )
    from prefect.client.schemas.sorting import FlowRunSort

    with get_client(sync_client=True) as client:
        [run] = client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(
            any_=[flow_name])), sort=FlowRunSort.EXPECTED_START_TIME_DESC, limit=1)
        tasks = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(
            any_=[run.id])))
    assert run.state is not None
    return run.state.type.value, len(tasks)


@pytest.mark.parametrize("kind", sorted(NOT_CHECKPOINTS))
def test_the_represent_flow_stops_on_a_bad_checkpoint_before_any_video(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An ingested video and a checkpoint that is not one: the flow's line is the CLI's,
    its run failed before its first video task, and nothing was represented."""
    from needleforge.ingest import ingest
    from needleforge.params import IngestParams
    from tests.stages.test_represent_stage import LICENCE

    video = tmp_path / "media-in" / "black.mp4"
    video.parent.mkdir()
    ffmpeg("-f", "lavfi", "-i", "color=c=black:size=160x90:rate=10:duration=1",
           "-c:v", "libx264", "-pix_fmt", "yuv420p", str(video))
    manifest = video.parent / "manifest.yaml"
    manifest.write_text(yaml.safe_dump({"sources": [{**LICENCE, "path": video.name}]}))
    db = tmp_path / "nf.duckdb"
    ingested = ingest(manifest, media_dir=tmp_path / "media", params=IngestParams())
    with Store(db) as store:
        store.record_ingest(ingested.videos, ingested.rejections)
    conf = tmp_path / "conf"
    params = ram_params(conf, checkpoint="ram_plus.pth", python=sys.executable)
    (conf / "ram_plus.pth").write_bytes(NOT_CHECKPOINTS[kind])

    args = ["--db", str(db), "--params", str(params)]
    said = cli_error(["represent", *args])
    assert said.startswith(f"RAM++ tagger unavailable: checkpoint {conf / 'ram_plus.pth'} ")
    assert flow_error(represent_main, args, capsys) == said
    assert last_run_task_count("represent") == ("FAILED", 0)
    with Store(db, read_only=True) as store:
        assert store.counts()["scenes"] == 0


def test_the_generate_flow_reports_a_dead_server_before_its_first_scan(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A stored corpus with an object target (so the negative check has scenes to scan) and
    a closed port as the model server: the CLI's line, no scan task started, none stored."""
    from tests.nemo.nemo_cases import stored_corpus

    db = stored_corpus(tmp_path)
    url = f"http://127.0.0.1:{closed_port()}/v1"
    options = {"base_url": url, "model": "m", "max_retries": 0}
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"nemo": {
        "describer": "openai_http", "describer_options": options,
        "verifier": "openai_http", "verifier_options": options}}))

    args = ["--db", str(db), "--params", str(params)]
    said = cli_error(["nemo", *args])
    assert f"no answer from the model server at {url}" in said
    assert flow_error(generate_main, args, capsys) == said
    assert last_run_task_count("generate") == ("FAILED", 0)
    with Store(db, read_only=True) as store:
        counts = store.counts()
    assert counts["negative_scans"] == counts["questions"] == 0


def test_the_refresh_checks_the_model_server_before_ingesting(tmp_path: Path) -> None:
    """The same dead server named in a refresh's params: its checks before any work refuse
    it, so nothing is ingested and no store is made."""
    from needleforge.stages.refresh import preflight

    sources = tmp_path / "sources"
    sources.mkdir()
    manifest = sources / "manifest.yaml"
    manifest.write_text(yaml.safe_dump({"version": 1, "sources": [
        {"path": "a.mp4", "program": "p", "rights_holder": "R", "licence_id": "CC0-1.0",
         "scope": ["benchmark"], "valid_until": "2099-01-01"}]}))
    url = f"http://127.0.0.1:{closed_port()}/v1"
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"nemo": {
        "describer": "openai_http",
        "describer_options": {"base_url": url, "model": "m", "max_retries": 0}}}))
    db = tmp_path / "db" / "nf.duckdb"
    with pytest.raises(BackendError, match=f"no answer from the model server at {url}"):
        preflight(manifest=manifest, db=db, releases=tmp_path / "releases", name=None,
                  params_path=params)
    assert not db.parent.exists()


def test_the_refresh_reads_the_human_verdict_file_before_ingesting(tmp_path: Path) -> None:
    """A verdict file with a line that is not a verdict stops a refresh at its checks, naming
    the file and line: not after ingesting, representing and generating."""
    from needleforge.review.verdicts import VerdictError
    from needleforge.stages.refresh import preflight

    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(yaml.safe_dump({"version": 1, "sources": [
        {"path": "a.mp4", "program": "p", "rights_holder": "R", "licence_id": "CC0-1.0",
         "scope": ["benchmark"], "valid_until": "2099-01-01"}]}))
    verdicts = tmp_path / "human_verdicts.jsonl"
    verdicts.write_text('{"question_key": "k1", "valid": "maybe"}\n')
    db = tmp_path / "db" / "nf.duckdb"
    with pytest.raises(VerdictError, match=rf"{verdicts}:1: "):
        preflight(manifest=manifest, db=db, releases=tmp_path / "releases", name=None,
                  params_path=None, human_verdicts=verdicts)
    assert not db.parent.exists()
    plan = preflight(manifest=manifest, db=db, releases=tmp_path / "releases", name=None,
                     params_path=None, human_verdicts=tmp_path / "absent.jsonl")
    assert plan.human_verdicts == tmp_path / "absent.jsonl"  # a missing file holds none
