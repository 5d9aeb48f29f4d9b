"""The pipeline end to end on a small studio corpus: studio → ingest → represent → nemo →
render, through the CLI (the same functions DVC and Prefect call), plus the generate flow.

Checks the things only the whole chain shows: questions about objects the studio really
placed, answers inside their montages, rendered montages matching their plans frame for frame
in length, and reruns that change nothing.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import av
import duckdb
import pytest
import yaml
from typer.testing import CliRunner

from flows.generate import generate_flow
from needleforge.cli import app
from needleforge.nemo.checks.instance import is_instance_key
from needleforge.params import resolve_params
from needleforge.stages.render import render_inputs
from needleforge.store import Store

runner = CliRunner()


def counted(stderr: str, stage: str, unit: str) -> int:
    """How many ``unit`` the stage's last progress line counts (stderr is no TTY here)."""
    found = re.search(rf"^{re.escape(stage)}: done, (\d+)/(\d+) {re.escape(unit)} in \d+ s$",
                      stderr, re.MULTILINE)
    assert found and found.group(1) == found.group(2), stderr
    return int(found.group(1))


@pytest.fixture(scope="module")
def corpus_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A one-program studio corpus (2 × 45 s, 640x360), ingested and represented."""
    root = tmp_path_factory.mktemp("pipeline")
    params = root / "params.yaml"
    params.write_text(yaml.safe_dump({
        "studio": {"seed": 3, "real_clips": [], "programs": [
            {"name": "tiny", "n_videos": 2, "video_duration_s": 45, "min_scene_s": 5,
             "max_scene_s": 10}]},
        "scenes": {"backend": "opencv"},
        # the sample's lighter negative check (the default looks every second at 2x)
        "nemo": {"check": {"every_s": 8.0, "input_scale": 1.5}},
    }))
    db = root / "db" / "nf.duckdb"
    for args in (["studio", "--out", str(root / "studio")],
                 ["ingest", str(root / "studio" / "manifest.yaml"), "--db", str(db)],
                 ["represent", "--db", str(db)]):
        result = runner.invoke(app, [*args, "--params", str(params)])
        assert result.exit_code == 0, result.output
    return db, params


@pytest.mark.slow
def test_nemo_and_render_from_the_cli(corpus_db: tuple[Path, Path], tmp_path: Path) -> None:
    db, params = corpus_db
    result = runner.invoke(app, ["nemo", "--db", str(db), "--params", str(params)])
    assert result.exit_code == 0, result.output
    with Store(db, read_only=True) as store:
        montages = {m.montage_id: m for m in store.montages()}
        questions = store.questions()
        verdicts = {v.question_id: v for v in store.verifications()}
        before = store.query("SELECT * FROM montage_segments ORDER BY ALL")
    assert counted(result.stderr, "nemo", "target steps (plan, verdict)") > 0
    assert questions and montages and all(q.question_id in verdicts for q in questions)
    assert {q.needle_type for q in questions} == {"object", "scene"}
    studio_labels = {"person", "cat", "cup", "motorcycle"}
    for q in questions:
        montage = montages[q.montage_id]
        assert montage.bucket == "short" and montage.duration_s < 150
        for start, end in montage.target_spans():
            assert 0 <= start < end <= montage.duration_s + 1e-6
        if q.needle_type == "object":
            assert any(label in q.text for label in studio_labels), q.text

    with Store(db, read_only=True) as store:
        scans = store.negative_scans()
    assert scans, "object targets' negatives are scanned and the scans stored"
    instance = [s for s in scans if is_instance_key(s.probe_key)]
    assert instance, "the instance check ran on object targets' negatives too"

    again = runner.invoke(app, ["nemo", "--db", str(db), "--params", str(params)])
    assert again.exit_code == 0
    assert (f"0 scene(s) scanned (0 frame(s) in 0 s), {len(scans) - len(instance)} stored "
            f"scan(s) reused; instance check: 0 target/scene pair(s) matched (0 frame(s) in "
            f"0 s), {len(instance)} stored") in " ".join(again.output.split())
    with Store(db, read_only=True) as store:
        assert store.query("SELECT * FROM montage_segments ORDER BY ALL") == before
        assert store.negative_scans() == scans

    out = tmp_path / "render"
    rendered = runner.invoke(app, ["render", "--db", str(db), "--out", str(out),
                                   "--params", str(params)])
    assert rendered.exit_code == 0, rendered.output
    # Montages whose every question the verifier refused are not rendered.
    refused = set(render_inputs(db=db, release=resolve_params(params).release).refused)
    assert len(refused) < len(montages)
    assert counted(rendered.stderr, "render", "scene clips and montages") > \
        len(montages) - len(refused)
    for montage in montages.values():
        path = out / f"{montage.montage_id}.mp4"
        if montage.montage_id in refused:
            assert not path.exists()
            continue
        with av.open(str(path)) as container:
            stream = container.streams.video[0]
            frames = sum(1 for _ in container.decode(stream))
        assert abs(frames - round(montage.duration_s * 25)) <= 1
    rerun = runner.invoke(app, ["render", "--db", str(db), "--out", str(out),
                                "--params", str(params)])
    assert f"({len(montages) - len(refused)} already current)" in " ".join(rerun.output.split())


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness")
def test_generate_flow(corpus_db: tuple[Path, Path], tmp_path: Path) -> None:
    """The flow scans negatives ahead, per video, then plans: the same plans as the CLI's
    lazy checks, and nothing is scanned twice."""
    source, params = corpus_db
    db = tmp_path / "flow.duckdb"
    shutil.copy(source, db)
    con = duckdb.connect(str(db))
    con.execute("DELETE FROM negative_sightings")
    con.execute("DELETE FROM negative_scans")
    con.close()
    counts = generate_flow(db, params)
    assert counts["montages"] == counts["questions"] > 0
    assert counts["passed"] <= counts["questions"]
    with Store(db, read_only=True) as store:
        label_scans = [s for s in store.negative_scans()
                       if not is_instance_key(s.probe_key)]  # those come with plans
        assert counts["scenes_scanned"] == len(label_scans) > 0
        flow_rows = store.query("SELECT * FROM montage_segments ORDER BY ALL")
    assert generate_flow(db, params)["scenes_scanned"] == 0
    result = runner.invoke(app, ["nemo", "--db", str(source), "--params", str(params)])
    assert result.exit_code == 0, result.output
    with Store(source, read_only=True) as store:
        assert store.query("SELECT * FROM montage_segments ORDER BY ALL") == flow_rows


@pytest.mark.slow
def test_expand_from_the_cli(corpus_db: tuple[Path, Path]) -> None:
    """Short corpus: medium/long fall short with reasons, multi-needle short montages appear."""
    db, params = corpus_db
    assert runner.invoke(app, ["nemo", "--db", str(db), "--params", str(params)]).exit_code == 0
    result = runner.invoke(app, ["expand", "--db", str(db), "--params", str(params)])
    assert result.exit_code == 0, result.output
    assert "| Short (< 2.5 min) | Single-Needle |" in result.output
    assert counted(result.stderr, "expand", "montage groups") > 0
    with Store(db, read_only=True) as store:
        montages = store.montages()
        before = store.query("SELECT * FROM montage_segments ORDER BY ALL")
    reused = re.search(r"(\d+) stored scan\(s\) reused", " ".join(result.output.split()))
    assert reused and int(reused.group(1)) > 0, result.output  # stage 2's scans, not again
    multi = [m for m in montages if len(m.target_spans()) > 1]
    assert multi, "expected multi-needle montages from targets longer than 6 s"
    for montage in multi:
        pieces = [s for s in montage.segments if s.role == "target"]
        assert all(p.duration_s >= 2.0 - 1e-6 for p in pieces[:-1])
        assert len({p.target_id for p in pieces}) == 1
    again = runner.invoke(app, ["expand", "--db", str(db), "--params", str(params)])
    assert again.exit_code == 0
    with Store(db, read_only=True) as store:
        assert store.query("SELECT * FROM montage_segments ORDER BY ALL") == before


@pytest.mark.slow
def test_vnbench_from_the_cli(corpus_db: tuple[Path, Path], tmp_path: Path) -> None:
    """Every subtask gets samples whose 4 records rotate the correct letter through A-D."""
    import json

    db, _ = corpus_db
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"vnbench": {"samples_per_subtask": 1,
                                                  "min_haystack_s": 10,
                                                  "max_haystack_s": 12}}))
    out = tmp_path / "vnbench"
    result = runner.invoke(app, ["vnbench", "--db", str(db), "--out", str(out),
                                 "--params", str(params)])
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in (out / "questions.jsonl").read_text().splitlines()]
    assert counted(result.stderr, "vnbench", "haystacks and samples") > len(records) // 4
    tasks = {r["task"] for r in records}
    assert {"ret_edit1", "ord_insert1", "cnt_edit2"} <= tasks
    by_sample: dict[str, list[int]] = {}
    for record in records:
        by_sample.setdefault(record["question_id"], []).append(record["answer_index"])
        assert (out / record["video"]).is_file()
    assert all(sorted(letters) == [0, 1, 2, 3] for letters in by_sample.values())
    assert json.loads((out / "vnbench.json").read_text())


@pytest.mark.slow
def test_validate_and_release_from_the_cli(corpus_db: tuple[Path, Path], tmp_path: Path) -> None:
    """The gate passes a clean build; the release loads in the scorer; a rebuild is identical."""
    from needleforge.evaluate import load_questions

    db, params = corpus_db
    for args in (["nemo", "--db", str(db)], ["expand", "--db", str(db)],
                 ["render", "--db", str(db), "--out", str(tmp_path / "render")],
                 ["validate", "--db", str(db), "--out", str(tmp_path / "quality")]):
        result = runner.invoke(app, [*args, "--params", str(params)])
        assert result.exit_code == 0, result.output
    assert counted(result.stderr, "validate", "gate steps") == 12
    assert (tmp_path / "quality" / "quality" / "index.html").is_file()
    manifests = []
    for _ in range(2):
        result = runner.invoke(app, ["release", "t1", "--db", str(db), "--out",
                                     str(tmp_path / "releases"), "--render",
                                     str(tmp_path / "render"), "--overwrite",
                                     "--params", str(params)])
        assert result.exit_code == 0, result.output
        assert counted(result.stderr, "release t1", "build steps") == 7
        manifests.append(json.loads((tmp_path / "releases" / "t1" / "manifest.json").read_text()))
    # build.json and the Data Docs pages record when the build ran (their paths carry the run
    # time), so they are marked per_build; everything else is the same bytes on a rebuild
    stable = [{**m, "files": [f for f in m["files"] if not f.get("per_build")]} for m in manifests]
    assert stable[0] == stable[1]
    per_build = [sorted(f["path"].split("/")[:3] for f in m["files"] if f.get("per_build"))
                 for m in manifests]
    assert per_build[0] == per_build[1] and len(per_build[0]) > 1
    questions = load_questions(tmp_path / "releases" / "t1" / "questions.jsonl")
    assert questions and all((tmp_path / "releases" / "t1" / q.video).is_file()
                             for q in questions)
    gate = runner.invoke(app, ["validate", "--db", str(db), "--out", str(tmp_path / "q2"),
                               "--questions", str(tmp_path / "releases" / "t1" /
                                                  "questions.jsonl"),
                               "--params", str(params)])
    assert gate.exit_code == 0, gate.output


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness")
def test_expand_and_vnbench_flows(corpus_db: tuple[Path, Path], tmp_path: Path) -> None:
    from flows.expand import expand_flow
    from flows.vnbench import vnbench_flow

    db, params = corpus_db
    generate_flow(db, params)
    counts = expand_flow(db, tmp_path / "render", params)
    assert counts["montages"] >= 1 and counts["rendered"] >= counts["montages"]
    small = tmp_path / "vn.yaml"
    small.write_text(yaml.safe_dump({"vnbench": {"samples_per_subtask": 1, "tasks": [
        "ret_edit1", "cnt_insert1"], "min_haystack_s": 10, "max_haystack_s": 12}}))
    vn = vnbench_flow(db, tmp_path / "vnbench", small)
    assert vn["questions"] == 4 * vn["samples"] and vn["samples"] == 2


def test_scan_jobs_migrate_an_older_store_and_skip_when_the_check_is_off(
    tmp_path: Path,
) -> None:
    from needleforge.params import Params
    from needleforge.stages.nemo import scan_jobs
    from tests.store.test_store import store_at_version

    db = tmp_path / "v4.duckdb"
    store_at_version(db, 4)
    assert scan_jobs(db=db, params=Params()) == []  # nothing ingested: nothing to scan
    with Store(db, read_only=True) as store:
        assert store.counts()["negative_scans"] == 0  # the v5 tables exist now
    off = Params.model_validate({"nemo": {"check": {"negatives": False}}})
    assert scan_jobs(db=db, params=off) == []


@pytest.mark.slow
def test_stages_run_from_another_folder_find_everything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """studio and ingest run in one folder with relative paths (``--media-dir media``, the
    store under ``data/``), then represent, nemo and render from another, reaching the store
    and params by relative paths again: every video is represented and every montage
    rendered, nothing is "file not found"."""
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    (first / "params.yaml").write_text(yaml.safe_dump({
        "studio": {"seed": 3, "real_clips": [], "programs": [
            {"name": "tiny", "n_videos": 2, "video_duration_s": 45, "min_scene_s": 5,
             "max_scene_s": 10}]},
        "scenes": {"backend": "opencv"},
        "nemo": {"check": {"negatives": False}},
    }))
    monkeypatch.chdir(first)
    for args in (["studio", "--out", "studio"],
                 ["ingest", "studio/manifest.yaml", "--db", "data/nf.duckdb",
                  "--media-dir", "media"]):
        result = runner.invoke(app, [*args, "--params", "params.yaml"])
        assert result.exit_code == 0, result.output
    monkeypatch.chdir(second)
    db, params = "../first/data/nf.duckdb", "../first/params.yaml"
    represented = runner.invoke(app, ["represent", "--db", db, "--params", params])
    assert represented.exit_code == 0, represented.output
    assert "2 video(s) represented, 0 already current, 0 failed" in represented.output
    generated = runner.invoke(app, ["nemo", "--db", db, "--params", params])
    assert generated.exit_code == 0, generated.output
    with Store(Path(db), read_only=True) as store:
        montages = store.montages()
    assert montages
    rendered = runner.invoke(app, ["render", "--db", db, "--out", "render", "--params", params])
    assert rendered.exit_code == 0, rendered.output
    assert {p.stem for p in (second / "render").glob("*.mp4")} == \
        {m.montage_id for m in montages}
