"""End to end on the sample corpus in a temporary git + DVC repository (slow, ~3 min).

One module-scoped repo: the project's ``dvc.yaml``, ``params.yaml`` shrunk (one 2-video
program of 60 s plus carphone, short montages only, one VNBench sample per subtask; measured
~2.5 min for ``dvc repro`` on 2 cores), and the package source its stages list as deps.
``dvc repro`` must build ``releases/sample`` through its gate; the tests then break copies of
its inputs, rebuild it, publish it with a tag (the ``dvc commit`` branch of
:func:`~needleforge.release.publish`, since the release is a stage output), clone the repo
fresh, pull and load the tag, record human verdicts and rebuild the stores under them, and
finally change the NeMo seed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
import yaml

from needleforge.release import load_release, publish
from needleforge.release.dvc import verify_files
from needleforge.review.verdicts import question_key
from needleforge.store import Store
from needleforge.store.human import human_verdicts
from tests.release.release_cases import init_git_dvc

pytestmark = pytest.mark.slow

MAIN = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
ENV = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
       "DVC_NO_ANALYTICS": "1"}
RELEASE = "releases/sample"
VERDICTS = "reviews/human_verdicts.jsonl"


def sh(*cmd: str, cwd: Path, ok: bool = True) -> subprocess.CompletedProcess[str]:
    # bounded: a hung stage fails the test (TimeoutExpired) instead of stalling the suite
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=ENV, check=False,
                          timeout=600)
    if ok:
        assert proc.returncode == 0, f"{cmd}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def shrunk_params() -> dict[str, object]:
    """The project's params.yaml with the corpus and caps made small enough for a test."""
    params = yaml.safe_load((MAIN / "params.yaml").read_text(encoding="utf-8"))
    params["studio"]["real_clips"] = ["carphone"]
    params["studio"]["programs"] = [{"name": "studio-a", "n_videos": 2,
                                     "video_duration_s": 60, "min_scene_s": 6,
                                     "max_scene_s": 10, "subtitles": True}]
    params["nemo"]["short_max_s"] = 40.0
    none = {"object": 0, "scene": 0}
    params["expand"].update(short_multi={"object": 2, "scene": 2},
                            medium={"single": none, "multi": none},
                            long={"single": none, "multi": none})
    params["vnbench"].update(samples_per_subtask=1, max_haystack_s=20, include_act=False)
    return params


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git + DVC repo where ``dvc repro`` has built ``releases/sample``."""
    root = tmp_path_factory.mktemp("e2e")
    repo, remote = root / "origin", root / "remote"
    repo.mkdir()
    remote.mkdir()
    shutil.copy(MAIN / "dvc.yaml", repo / "dvc.yaml")
    (repo / "params.yaml").write_text(yaml.safe_dump(shrunk_params(), sort_keys=False))
    shutil.copytree(MAIN / "src" / "needleforge", repo / "src" / "needleforge",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (repo / VERDICTS).parent.mkdir()
    (repo / VERDICTS).write_text("")  # as the repository holds it: no verdicts yet
    init_git_dvc(repo, remote)
    sh(sys.executable, "-m", "dvc", "repro", cwd=repo)
    sh("git", "add", "-A", cwd=repo)
    sh("git", "commit", "-q", "-m", "pipeline", cwd=repo)
    return repo


def test_repro_builds_a_release_that_passed_its_gate(repo: Path) -> None:
    root = repo / RELEASE
    summary = json.loads((root / "quality/summary.json").read_text())
    assert summary["passed"] and summary["failures"] == []
    ran = {s["suite"]: s["status"] for s in summary["suites"]}
    assert ran["release"] == ran["release_sources"] == "passed"
    records = [json.loads(x) for x in (root / "questions.jsonl").read_text().splitlines()]
    families = {r["family"] for r in records}
    assert families == {"nemo", "vnbench"}
    vn = [r for r in records if r["family"] == "vnbench"]
    assert len(vn) % 4 == 0 and all((root / r["video"]).is_file() for r in vn)
    doc = json.loads((root / "manifest.json").read_text())
    hashed = {f["path"] for f in doc["files"]}
    assert {r["video"] for r in records} <= hashed and "sources.json" in hashed
    # every shipped file but the manifest, the Data Docs pages included, checks out
    assert hashed == {p.relative_to(root).as_posix() for p in root.rglob("*")
                      if p.is_file()} - {"manifest.json"}
    assert "quality/index.html" in hashed and verify_files(root) == []
    assert "## Scoring" in (root / "card.md").read_text()
    assert doc["sources"] and all(s["licence_id"] and s["valid_until"] for s in doc["sources"])
    assert {v for r in records for v in r["source_video_ids"]} == \
        {s["video_id"] for s in doc["sources"]}
    assert "## VNBench" in (root / "card.md").read_text()
    assert json.loads((root / "exports/vnbench.json").read_text())


def test_a_second_identical_build_gives_the_same_manifest(repo: Path, tmp_path: Path) -> None:
    sh("needleforge", "release", "sample", "--db", "data/db/expand.duckdb", "--out",
       str(tmp_path), "--render", "data/render", "--vnbench", "data/vnbench", "--params",
       "params.yaml", cwd=repo)
    def stable(path: Path) -> dict[str, object]:
        """The manifest less the entries of files that record the build run."""
        doc = json.loads(path.read_text())
        doc["files"] = [f for f in doc["files"] if not f.get("per_build")]
        return dict(doc)

    again = tmp_path / "sample" / "manifest.json"
    assert stable(again) == stable(repo / RELEASE / "manifest.json")
    per_build = [f["path"] for f in json.loads(again.read_text())["files"] if f.get("per_build")]
    assert "build.json" in per_build and all(p == "build.json" or p.startswith("quality/")
                                              for p in per_build)


def test_broken_tables_fail_the_gate_naming_the_expectation(repo: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(repo / RELEASE, broken)
    lines = (broken / "questions.jsonl").read_text().splitlines()
    for i, line in enumerate(lines):
        record = json.loads(line)
        if record["family"] == "vnbench":
            record["options"][1] = record["options"][0].upper()  # two equal options
            lines[i] = json.dumps(record)
            break
    (broken / "questions.jsonl").write_text("\n".join(lines) + "\n")
    sources = json.loads((broken / "sources.json").read_text())
    sources[0]["valid_until"] = "2001-01-01"
    (broken / "sources.json").write_text(json.dumps(sources))
    db = tmp_path / "broken.duckdb"
    shutil.copy(repo / "data/db/expand.duckdb", db)
    with duckdb.connect(str(db)) as con:
        con.execute("UPDATE scenes SET end_s = start_s - 1 WHERE idx = 0")
    proc = sh("needleforge", "validate", "--db", str(db), "--release", str(broken), "--out",
              str(tmp_path / "report"), "--params", "params.yaml", cwd=repo, ok=False)
    assert proc.returncode == 1, proc.stderr
    for name in ("scenes.end_after_start", "release.options_distinct",
                 "release_sources.licence_valid"):
        assert f"FAIL {name}" in proc.stdout
    assert "quality gate FAILED" in proc.stdout


def test_publish_commits_the_stage_output_and_a_fresh_clone_pulls_the_tag(
        repo: Path, tmp_path: Path) -> None:
    result = publish(repo / RELEASE, repo=repo, tag="v1", remote="local")
    assert result.tracked_by == ("dvc.yaml", "dvc.lock") and result.pushed
    clone = tmp_path / "clone"
    sh("git", "clone", "-q", str(repo), str(clone), cwd=tmp_path)
    out = tmp_path / "pulled"
    sh("needleforge", "pull", "--rev", "v1", "--repo", str(clone), "--out", str(out),
       cwd=tmp_path)
    assert (out / "manifest.json").read_bytes() == (repo / RELEASE / "manifest.json").read_bytes()
    loaded = load_release(rev="v1", repo=clone, path=RELEASE)
    assert {q.family for q in loaded.questions} == {"nemo", "vnbench"}
    assert loaded.manifest["sources"] == json.loads((repo / RELEASE / "sources.json").read_text())


def test_human_verdicts_survive_a_rebuild_of_the_stores(repo: Path, tmp_path: Path) -> None:
    """Verdicts pulled into the store (from a YAML file here, the same path as a Label Studio
    pull) land in the verdict file too; a params change makes ``dvc repro`` rebuild the
    stores from their snapshots, dropping them there, and the release still carries them."""
    def shipped() -> set[str]:
        lines = (repo / RELEASE / "questions.jsonl").read_text().splitlines()
        return {json.loads(line)["question_id"] for line in lines}

    before = shipped()
    with Store(repo / "data/db/nemo.duckdb", read_only=True) as store:  # stage 2's questions,
        montages = {m.montage_id: m for m in store.montages()}  # which an expand rerun keeps
        keys = {question_key(q, montages[q.montage_id]): q.question_id
                for q in store.questions()}
    judged = [(key, qid) for key, qid in sorted(keys.items()) if qid in before][:3]
    assert len(judged) == 3
    entries = [{"key": key, "question_id": qid, "valid": i > 0, "spans_right": True,
                "negatives_clean": True, "note": ""} for i, (key, qid) in enumerate(judged)]
    (tmp_path / "v.yaml").write_text(yaml.safe_dump({"version": 1, "verdicts": entries}))
    pulled = sh("needleforge", "review", "--db", "data/db/expand.duckdb", "--from", "yaml",
                "--verdicts", str(tmp_path / "v.yaml"), cwd=repo)
    assert f"verdict file {VERDICTS}: 3 row(s), 3 new or changed" in pulled.stdout
    params = yaml.safe_load((repo / "params.yaml").read_text())
    params["expand"]["seed"] = params["expand"].get("seed", 0) + 1
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    rebuilt = sh(sys.executable, "-m", "dvc", "repro", "release", cwd=repo)
    assert "Running stage 'expand'" in rebuilt.stdout, rebuilt.stdout
    assert "3 read; 3 new, 0 changed, 0 unchanged in the store" in rebuilt.stdout
    with Store(repo / "data/db/expand.duckdb", read_only=True) as store:
        assert human_verdicts(store) == []  # the rebuilt snapshot lost them
    card = (repo / RELEASE / "card.md").read_text()
    assert "3 question(s) have a human decision (2 valid)" in card
    assert judged[0][1] not in shipped() and {qid for _, qid in judged[1:]} <= shipped()
    again = sh(sys.executable, "-m", "dvc", "status", "release", cwd=repo)
    assert "up to date" in again.stdout, again.stdout


def _tables(db: Path) -> tuple[list[object], list[object], list[object], list[object]]:
    with Store(db, read_only=True) as store:
        return store.videos(), store.scenes(), store.objects(), store.montages()


def test_another_nemo_seed_changes_plans_not_the_tables_above_them(repo: Path) -> None:
    """Runs last: it leaves the repo at nemo.seed = 1."""
    before = _tables(repo / "data/db/nemo.duckdb")
    params = yaml.safe_load((repo / "params.yaml").read_text())
    params["nemo"]["seed"] = params["nemo"].get("seed", 0) + 1
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    proc = sh(sys.executable, "-m", "dvc", "repro", "nemo", cwd=repo)
    assert "Running stage 'nemo'" in proc.stdout
    assert "Running stage 'represent'" not in proc.stdout
    after = _tables(repo / "data/db/nemo.duckdb")
    assert after[:3] == before[:3]  # videos, scenes, objects: untouched
    assert after[3] != before[3]  # the montage plans moved
