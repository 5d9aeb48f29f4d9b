"""The three users' journeys end to end, in a copy of this repository, with README commands.

The operator: a real ``prefect server start`` on loopback, ``prefect work-pool create``,
``prefect --no-prompt deploy --all`` of the repository's own ``prefect.yaml``, a process
worker, ``dvc remote add`` of a local folder, then ``prefect deployment run`` of the weekly
refresh on a tiny studio corpus (2 × 30 s at 320×180, written into ``params.yaml`` as a user
would configure their corpus). The run must complete, publish and leave its artifacts. The
consumer: a fresh clone, ``needleforge pull --rev TAG`` and ``load_release(rev=TAG)`` with no
path, every file's sha256 against the manifest.
Then a second refresh with nothing new releases nothing, and a third whose new sources all
fail fails, naming them. Every wait is bounded; every process is stopped by its group.
Measured ~3 min on 2 busy cores.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from needleforge.release import load_release
from tests.flows.journey_support import (
    MAIN,
    api,
    background,
    copy_repository,
    environment,
    free_port,
    run,
    wait_healthy,
)

pytestmark = pytest.mark.slow

DEPLOYMENT = "refresh/weekly-refresh"
RUN_TIMEOUT_S = 300


def tiny_params() -> dict[str, object]:
    """The repository's params.yaml with a tiny corpus and the cheaper checks."""
    params = yaml.safe_load((MAIN / "params.yaml").read_text(encoding="utf-8"))
    params["studio"].update(width=320, height=180, real_clips=[], programs=[
        {"name": "tiny", "n_videos": 2, "video_duration_s": 30, "min_scene_s": 5,
         "max_scene_s": 8, "subtitles": True}])
    params["render"].update(width=320, height=180)
    params["nemo"].update(check={"negatives": False}, verifier="embedded_tables", short_max_s=40.0)
    none = {"object": 0, "scene": 0}
    params["expand"].update(short_multi={"object": 1, "scene": 1},
                            medium={"single": none, "multi": none},
                            long={"single": none, "multi": none})
    return params


class Journey:
    """The copy, its environment and the commands of one journey."""

    def __init__(self, root: Path, port: int) -> None:
        self.root = root
        self.repo = copy_repository(_mkdir(root / "needleforge"))
        self.env = environment(self.repo, _mkdir(root / "prefect-home"), port)
        self.api = f"http://127.0.0.1:{port}/api"
        self.timings = root / "timings.txt"

    def sh(self, *cmd: str, timeout: float = 120, ok: bool = True, cwd: Path | None = None
           ) -> str:
        start = time.monotonic()
        proc = run(list(cmd), cwd=cwd or self.repo, env=self.env, timeout=timeout, ok=ok)
        with self.timings.open("a") as log:  # where the minutes go, when the test is slow
            log.write(f"{time.monotonic() - start:7.1f} s  {' '.join(cmd)[:100]}\n")
        return proc.stdout + proc.stderr

    def trigger(self, *params: str, ok: bool = True) -> tuple[str, str]:
        """``prefect deployment run … --watch``; returns the flow run id and the output."""
        args = [a for p in params for a in ("-p", p)]
        out = self.sh("prefect", "deployment", "run", DEPLOYMENT, *args, "--watch",
                      "--watch-timeout", str(RUN_TIMEOUT_S), timeout=RUN_TIMEOUT_S + 30,
                      ok=ok)
        found = re.search(r"UUID: ([0-9a-f-]{36})", out)
        assert found, out
        return found.group(1), out

    def state_message(self, run_id: str) -> str:
        """The flow run's final state message, as the UI shows it."""
        return str(api(self.api, f"/flow_runs/{run_id}")["state"]["message"] or "")

    def logs(self, run_id: str) -> str:
        """Every log line of the flow run (not of its subflows)."""
        rows = api(self.api, "/logs/filter", {"logs": {"flow_run_id": {"any_": [run_id]}},
                                              "limit": 200})
        return "\n".join(str(r["message"]) for r in rows)

    def artifacts(self) -> dict[str, dict[str, Any]]:
        """The latest artifact of each key."""
        rows = api(self.api, "/artifacts/latest/filter", {"limit": 50})
        return {str(r["key"]): r for r in rows if r.get("key")}

    def releases(self) -> list[str]:
        folder = self.repo / "releases"
        return sorted(p.name for p in folder.iterdir() if (p / "manifest.json").is_file()) \
            if folder.is_dir() else []


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True)
    return path


@pytest.fixture(scope="module")
def journey(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Journey]:
    """The operator's one-time set-up, with the server and worker running for the module."""
    j = Journey(tmp_path_factory.mktemp("journey"), free_port())
    (j.repo / "params.yaml").write_text(yaml.safe_dump(tiny_params(), sort_keys=False))
    j.sh("git", "commit", "-q", "-am", "our corpus")
    j.sh("needleforge", "studio", "--out", "data/studio", "--params", "params.yaml")
    j.sh("dvc", "remote", "add", "-d", "storage", str(_mkdir(j.root / "dvc-storage")))
    port = j.api.split(":")[2].split("/")[0]
    server_log = j.root / "server.log"
    with background(["prefect", "server", "start", "--host", "127.0.0.1", "--port", port],
                    cwd=j.root, env=j.env, log=server_log) as server:
        wait_healthy(f"{j.api}/health", proc=server, log=server_log, timeout_s=150)
        j.sh("prefect", "work-pool", "create", "needleforge", "--type", "process")
        j.sh("prefect", "--no-prompt", "deploy", "--all", timeout=180)
        with background(["prefect", "worker", "start", "--pool", "needleforge"],
                        cwd=j.repo, env=j.env, log=j.root / "worker.log"):
            yield j


@pytest.fixture(scope="module")
def published(journey: Journey) -> str:
    """The first scheduled refresh, published to the DVC remote; returns its tag."""
    _, out = journey.trigger("publish_repo=.")
    assert "Flow run finished successfully in 'Completed'" in out, out
    (tag,) = journey.sh("git", "tag", "--list").split()
    assert journey.releases() == [tag]
    return tag


def test_scheduled_refresh_releases_with_artifacts(journey: Journey, published: str) -> None:
    root = journey.repo / "releases" / published
    card = (root / "card.md").read_text(encoding="utf-8")
    assert "## Quality gate" in card and "quality/index.html" in card
    assert "## Sources that failed" in card  # the studio's rows refused by design
    assert "Sources that failed" in (root / "CHANGELOG.md").read_text(encoding="utf-8")
    found = journey.artifacts()
    assert {"refresh-summary", "quality-gate", "release-card", "quality-report"} <= set(found)
    summary = str(found["refresh-summary"]["data"])
    assert f"released {published}" in summary and "| nemo | short |" in summary
    table = found["quality-gate"]["data"]  # a table artifact's rows, as JSON text
    suites = {row["suite"]: row for row in (json.loads(table) if isinstance(table, str)
                                            else table)}
    assert suites["release"]["status"] == "passed" and suites["release"]["expectations"] > 0
    assert f"/releases/{published}/card.html" in str(found["release-card"]["data"])
    index = json.loads((journey.repo / "releases" / "index.json").read_text())
    assert index["releases"][-1]["tag"] == published
    assert journey.sh("git", "status", "--porcelain", "--", "releases", ".dvc").strip() == ""


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_consumer_pulls_the_pinned_release_by_tag(journey: Journey, published: str) -> None:
    consumer = journey.root / "consumer"
    journey.sh("git", "clone", "-q", str(journey.repo), str(consumer))
    journey.sh("needleforge", "pull", "--rev", published, "--out", "pulled", cwd=consumer)
    manifest = json.loads((consumer / "pulled" / "manifest.json").read_text())
    assert manifest["name"] == published and manifest["files"]
    for entry in manifest["files"]:
        assert _sha256(consumer / "pulled" / entry["path"]) == entry["sha256"], entry["path"]
    loaded = load_release(rev=published, repo=consumer)
    assert loaded.path == f"releases/{published}" and loaded.manifest == manifest
    assert len(loaded.questions) == manifest["counts"]["questions"] > 0


def test_nothing_new_releases_nothing(journey: Journey, published: str) -> None:
    run_id, out = journey.trigger("publish_repo=.")
    assert "Completed" in out, out
    assert journey.releases() == [published]
    assert journey.sh("git", "tag", "--list").split() == [published]
    assert "nothing new since release" in journey.logs(run_id)
    assert "Nothing was released" in str(journey.artifacts()["refresh-summary"]["data"])


def test_new_sources_that_all_fail_fail_the_run_naming_them(
        journey: Journey, published: str) -> None:
    studio = journey.repo / "data" / "studio"
    manifest = yaml.safe_load((studio / "manifest.yaml").read_text())
    first = next(r for r in manifest["sources"] if (studio / r["path"]).is_file())
    good = {k: v for k, v in first.items() if k != "subtitles"}
    (studio / "notes.mp4").write_text("meeting notes, not a video\n")
    shutil.copy(studio / good["path"], studio / "expired.mp4")
    manifest["sources"] += [{**good, "path": "notes.mp4"},
                            {**good, "path": "expired.mp4", "valid_until": "2001-01-01"}]
    (studio / "manifest.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    run_id, out = journey.trigger("publish_repo=.", ok=False)
    assert "Failed" in out, out
    message = journey.state_message(run_id)
    assert "refresh released nothing" in message, message
    assert "notes.mp4" in message and "expired.mp4" in message, message
    assert "clips/carphone_distorted.mp4" not in message  # refused before: not new
    assert journey.releases() == [published]
    summary = str(journey.artifacts()["refresh-summary"]["data"])
    assert "FAILED" in summary and "notes.mp4" in summary
