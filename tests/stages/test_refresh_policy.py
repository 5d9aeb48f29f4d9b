"""The refresh's policy without running its stages: checks before work, one refresh per store,
what counts as new, release order by build time, and what the run reports.

Bad inputs (each must fail before any work, naming the input, leaving the store as it was):
a manifest path that does not exist, a release name already taken, publishing with no DVC
remote, and a second refresh started while one holds the store. The stage-running refresh
is covered by ``test_refresh_flow.py`` and the whole journey by ``test_journey.py``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from flows.refresh import refresh_flow
from needleforge.errors import RefreshError, ReleaseError
from needleforge.orchestration.artifacts import RunSummary, gate_rows, summary_markdown
from needleforge.params import Params
from needleforge.quality.results import CheckOutcome, Failure, GateResult, SuiteOutcome
from needleforge.records.failures import StageFailure
from needleforge.release import history
from needleforge.release.card_sections import quality_section
from needleforge.release.history import (
    BuildInfo,
    fingerprint,
    releases_by_build_time,
    write_build_info,
)
from needleforge.release.markup import Document, Section, to_markdown
from needleforge.stages import refresh as refresh_module
from needleforge.stages.refresh import decide, preflight, store_lock
from needleforge.store import Store
from tests.release.release_cases import make_store

BAD = StageFailure("ingest", "manifest.yaml row 3 (notes.mp4)", "not_video", "not a video")


def manifest(tmp_path: Path) -> Path:
    path = tmp_path / "sources" / "manifest.yaml"
    path.parent.mkdir()
    path.write_text(yaml.safe_dump({"version": 1, "sources": [
        {"path": "a.mp4", "program": "p", "rights_holder": "R", "licence_id": "CC0-1.0",
         "scope": ["benchmark"], "valid_until": "2099-01-01"}]}))
    return path


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_missing_manifest_fails_before_any_work(tmp_path: Path) -> None:
    db, releases = tmp_path / "db" / "nf.duckdb", tmp_path / "releases"
    with pytest.raises(RefreshError, match=r"manifest .*nope\.yaml does not exist") as err:
        refresh_flow.fn(tmp_path / "nope.yaml", db, releases)
    assert "prefect deployment run refresh/weekly-refresh -p manifest=PATH" in str(err.value)
    assert not db.parent.exists() and not releases.exists()


def test_a_taken_release_name_fails_before_any_work(tmp_path: Path) -> None:
    (tmp_path / "releases" / "r1").mkdir(parents=True)
    db = tmp_path / "db" / "nf.duckdb"
    with pytest.raises(RefreshError, match="r1 already exists"):
        refresh_flow.fn(manifest(tmp_path), db, tmp_path / "releases", "r1")
    assert not db.parent.exists()


def test_a_second_refresh_in_the_same_minute_gets_its_own_default_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The default name is the minute; when a refresh earlier in that minute took it, the
    next one is named to the second (it may well find nothing new and say so), never refused
    for a name the user did not give."""
    frozen = dt.datetime(2026, 12, 2, 13, 23, 45, tzinfo=dt.UTC)

    class _Clock(dt.datetime):
        @classmethod
        def now(cls, tz: dt.tzinfo | None = None) -> dt.datetime:
            return frozen

    monkeypatch.setattr(refresh_module.dt, "datetime", _Clock)
    releases, sources = tmp_path / "releases", manifest(tmp_path)
    first = preflight(manifest=sources, db=tmp_path / "nf.duckdb", releases=releases,
                      name=None, params_path=None)
    assert first.name == "2026.12.02-1323"
    (releases / first.name).mkdir(parents=True)
    second = preflight(manifest=sources, db=tmp_path / "nf.duckdb", releases=releases,
                       name=None, params_path=None)
    assert second.name == "2026.12.02-132345" and first.name < second.name < "2026.12.02-1324"
    (releases / second.name).mkdir()
    with pytest.raises(RefreshError, match="132345 already exists"):
        preflight(manifest=sources, db=tmp_path / "nf.duckdb", releases=releases, name=None,
                  params_path=None)


def test_publishing_without_a_remote_fails_before_any_work(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    for cmd in (["git", "init", "-q"], [sys.executable, "-m", "dvc", "init", "-q"]):
        subprocess.run(cmd, cwd=repo, check=True, capture_output=True, timeout=60)
    db = tmp_path / "db" / "nf.duckdb"
    with pytest.raises(ReleaseError, match=r"(?s)no DVC remote.*dvc remote add"):
        refresh_flow.fn(manifest(tmp_path), db, repo / "releases", "r1", publish_repo=repo)
    assert not db.parent.exists()


HOLDER = """
import sys, time
from pathlib import Path
from needleforge.stages.refresh import store_lock
with store_lock(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(120)
"""


def test_a_second_refresh_on_a_locked_store_fails_and_leaves_it_intact(tmp_path: Path) -> None:
    db = make_store(tmp_path / "nf.duckdb")
    before = digest(db)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(db)], stdout=subprocess.PIPE,
                              text=True, start_new_session=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(RefreshError,
                           match=rf"another refresh is running on store .*pid {holder.pid}"):
            refresh_flow.fn(manifest(tmp_path), db, tmp_path / "releases", "r1")
    finally:
        os.killpg(holder.pid, signal.SIGKILL)  # a refresh killed mid-run
        holder.wait(timeout=30)
    assert digest(db) == before
    with store_lock(db), Store(db, read_only=True) as store:  # the dead holder's lock went
        assert store.counts()["videos"] == 2


def test_only_something_new_is_released(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                        ) -> None:
    monkeypatch.setattr(history, "code_sha256", lambda package_dir=None: "pinned")
    db = make_store(tmp_path / "nf.duckdb")
    plan = preflight(manifest=manifest(tmp_path), db=db, releases=tmp_path / "releases",
                     name="r2", params_path=None)
    with Store(db, read_only=True) as store:
        shas = [v.sha256 for v in store.videos()]
        new_id = store.videos()[1].video_id  # the video `fewer` lacks
    same = BuildInfo(tmp_path / "r1", dt.datetime.now(dt.UTC), fingerprint(shas, plan.params))
    assert decide(plan, previous=None, failures=[]).go
    nothing = decide(plan, previous=same, failures=[dataclass_old(BAD)])
    assert not nothing.go and not nothing.failed and "nothing new since release r1" in \
        nothing.reason
    failed = decide(plan, previous=same, failures=[BAD])
    assert not failed.go and failed.failed and "1 new source(s)" in failed.reason
    fewer = BuildInfo(same.path, same.built_at, fingerprint(shas[:1], plan.params))
    assert "1 new source video(s)" in decide(plan, previous=fewer, failures=[BAD]).reason
    # a video that failed to represent this time is not new material
    assert decide(plan, previous=fewer, failures=[BAD], failed_videos=[new_id]).failed
    other = Params.model_validate({"nemo": {"seed": 5}})
    changed = BuildInfo(same.path, same.built_at, fingerprint(shas, other))
    assert decide(plan, previous=changed, failures=[]).reason.endswith("params changed")
    assert decide(dataclasses.replace(plan, force=True), previous=same, failures=[]).go


def dataclass_old(failure: StageFailure) -> StageFailure:
    return StageFailure(failure.stage, failure.item, failure.reason, failure.detail, new=False)


def test_the_previous_release_is_the_one_built_last_not_the_last_name(tmp_path: Path) -> None:
    inputs = fingerprint([], Params())
    for name, day in (("2026.01.05-0300", 5), ("sample", 1), ("2026.01.02-0300", 2)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "manifest.json").write_text("{}")
        write_build_info(tmp_path / name, name=name, inputs=inputs,
                         now=dt.datetime(2026, 1, day, tzinfo=dt.UTC))
    (tmp_path / "old").mkdir()  # built before build.json existed: dated by its manifest
    (tmp_path / "old" / "manifest.json").write_text("{}")
    os.utime(tmp_path / "old" / "manifest.json", (0, 0))
    order = [b.path.name for b in releases_by_build_time(tmp_path)]
    assert order == ["old", "sample", "2026.01.02-0300", "2026.01.05-0300"]
    (tmp_path / "sample" / "build.json").write_text("{not json")
    with pytest.raises(ReleaseError, match=r"sample/build\.json: not a readable build record"):
        releases_by_build_time(tmp_path)


def gate() -> GateResult:
    checks = (CheckOutcome("pass_rate", "expect_column_mean_to_be_between", "passed", True,
                           "0.51", ">= 0.5", borderline=True),
              CheckOutcome("ids_unique", "expect_column_values_to_be_unique", "question_id",
                           False, "1 of 3 rows unexpected", ""))
    return GateResult(passed=False, failures=[Failure(
        "release", "expect_column_values_to_be_unique", "question_id", "1 of 3 rows",
        "", check="ids_unique")], suites=[SuiteOutcome("release", "failed", 3, 2, 1,
                                                       checks=checks)])


def test_the_card_reads_the_gate_offline(tmp_path: Path) -> None:
    (tmp_path / "quality").mkdir()
    (tmp_path / "quality" / "index.html").write_text(
        '<link rel="stylesheet" href="https://cdn.example.org/b.css">'
        '<script src="https://unpkg.com/x.js"></script><link href="static/local.css">')
    text = to_markdown(_doc(quality_section(gate(), root=tmp_path)))
    assert "FAILED (1 expectations)" in text and "FAIL ids_unique: observed 1 of 3" in text
    assert "borderline pass_rate: observed 0.51, allowed >= 0.5" in text
    assert "2 stylesheet(s) and script(s) from cdn.example.org, unpkg.com" in text
    assert "[Open the Data Docs report](quality/index.html)" in text


def _doc(section: Section) -> Document:
    return Document("card", (section,))


def test_the_run_summary_names_failures_and_why_nothing_shipped() -> None:
    text = summary_markdown(RunSummary("Refresh r2", "nothing new since release r1", None,
                                       (BAD, dataclass_old(BAD)), "r1"))
    assert "Nothing was released" in text and "`manifest.yaml row 3 (notes.mp4)`" in text
    assert "(seen before)" in text
    rows = gate_rows(gate())
    assert rows == [{"suite": "release", "status": "failed", "rows": 3, "expectations": 2,
                     "failed": 1, "failed_expectations": "ids_unique: observed 1 of 3 rows",
                     "note": "-"}]
    assert json.dumps(rows)  # a table artifact is JSON
