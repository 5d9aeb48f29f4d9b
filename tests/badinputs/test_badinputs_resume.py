"""Crash-resume: SIGKILL the represent flow, the NeMo generate flow and the render stage
mid-run, rerun them, and compare with a clean run.

Each run is a real child process (``python -m flows.represent`` / ``flows.generate``
against the session's Prefect API; the render stage through a small script). The kill point
is observed, never guessed: the represent flow is killed once the store's write-ahead log
shows a committed video, the generate flow once its task has started, the render once a
first montage file is published. Afterwards the store must hold whole videos only (or
nothing of the generation), the rerun must give exactly a clean run's rows, and no
half-written or scratch file may remain next to the outputs.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from needleforge.ingest import ingest
from needleforge.media import probe
from needleforge.params import IngestParams, RenderParams
from needleforge.store import Store
from tests.badinputs.corpus import licence
from tests.badinputs.store_snapshot import Snapshot, snapshot
from tests.conftest import ffmpeg

REPO = Path(__file__).resolve().parents[2]
N_VIDEOS = 10


def _env(tmp_path: Path) -> dict[str, str]:
    """The child's environment: this session's Prefect API, so no server starts per child."""
    from prefect.settings import PREFECT_API_URL

    env = dict(os.environ)
    env["PREFECT_API_URL"] = str(PREFECT_API_URL.value())
    env["PREFECT_HOME"] = str(tmp_path / "prefect-home")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    return env


def _kill_when(cmd: list[str], ready: Callable[[], bool], *, env: dict[str, str],
               log: Path, timeout_s: float = 240.0) -> None:
    """Start ``cmd`` (output to ``log``); SIGKILL it as soon as ``ready()``; fail if it ends
    before that."""
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + timeout_s
    try:
        while not ready():
            if proc.poll() is not None:
                pytest.fail(f"{cmd} ended (rc {proc.returncode}) before the kill point: "
                            f"{log.read_text(errors='replace')[-2000:]}")
            if time.monotonic() > deadline:
                pytest.fail(f"{cmd} never reached the kill point")
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == -signal.SIGKILL


def _run(cmd: list[str], *, env: dict[str, str], timeout_s: float = 300.0) -> None:
    """Run ``cmd`` to the end; past ``timeout_s`` it is aborted with every thread's stack
    dumped (faulthandler) into the failure message, so a hang says where it hangs."""
    proc = subprocess.Popen(cmd, cwd=REPO, env={**env, "PYTHONFAULTHANDLER": "1"},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        _, err = proc.communicate()
        text = err.decode(errors="replace")
        start = text.find("Fatal Python error")  # faulthandler's dump: every thread's stack
        pytest.fail(f"{cmd} still running after {timeout_s:.0f} s; its threads:\n"
                    f"{text[start:start + 40000] if start >= 0 else text[-6000:]}")
    assert proc.returncode == 0, err.decode(errors="replace")[-3000:]


def _scratch(folder: Path) -> list[Path]:
    """Hidden scratch files and partial files anywhere under ``folder``."""
    return [p for p in folder.rglob("*") if p.is_file()
            and (p.name.startswith(".") or ".partial" in p.name or ".incoming" in p.name)]


# -- represent ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def videos_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store of 10 ingested 8 s clips (each a different lavfi pattern), not represented."""
    root = tmp_path_factory.mktemp("resume-represent")
    rows = []
    for i in range(N_VIDEOS):
        path = root / f"v{i}.mp4"
        ffmpeg("-f", "lavfi", "-i", f"testsrc2=size=160x90:rate=10:duration=8,hue=h={i * 36}",
               "-c:v", "libx264", "-pix_fmt", "yuv420p", str(path))
        rows.append({"path": path.name, **licence()})
    (root / "m.yaml").write_text(yaml.safe_dump({"sources": rows}))
    db = root / "nf.duckdb"
    result = ingest(root / "m.yaml", media_dir=root / "media", params=IngestParams())
    assert len(result.videos) == N_VIDEOS
    with Store(db) as store:
        store.record_ingest(result.videos, result.rejections)
    return db


def _two_copies(store: Path, folder: Path) -> tuple[Path, Path]:
    """``clean.duckdb`` (for the uninterrupted run) and ``killed.duckdb``, copies of store."""
    clean, killed = folder / "clean.duckdb", folder / "killed.duckdb"
    shutil.copy(store, clean)
    shutil.copy(store, killed)
    return clean, killed


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness")
def test_represent_flow_killed_midrun_resumes_to_a_clean_runs_tables(
    videos_store: Path, tmp_path: Path
) -> None:
    from flows.represent import represent_flow

    clean, killed = _two_copies(videos_store, tmp_path)
    represent_flow(clean, None, "scenes")
    wal = killed.with_name(killed.name + ".wal")
    assert not wal.exists()
    cmd = [sys.executable, "-m", "flows.represent", "--db", str(killed), "--step", "scenes"]
    env = _env(tmp_path)
    # The first committed video lands in the write-ahead log: kill right then.
    _kill_when(cmd, lambda: wal.exists() and wal.stat().st_size > 0, env=env,
               log=tmp_path / "represent.log")
    with Store(killed, read_only=True) as store:
        done = store.query("SELECT video_id, n_scenes FROM representations")
        scenes = dict(store.query("SELECT video_id, count(*) FROM scenes GROUP BY 1"))
    assert 1 <= len(done) < N_VIDEOS, "the kill must fall between the first and last video"
    assert {vid: n for vid, n in done} == scenes, "a video's scenes are all stored or none"
    _run(cmd, env=env)
    assert snapshot(killed) == snapshot(clean)


# -- generate -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def nemo_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The NeMo test corpus (12 scenes, tags, objects) stored over a real 85 s video file."""
    sys.path.insert(0, str(REPO / "tests" / "nemo"))
    from nemo_cases import stored_corpus

    return stored_corpus(tmp_path_factory.mktemp("resume-generate"), name="long.mp4")


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness")
def test_generate_flow_killed_midrun_leaves_all_or_nothing_and_resumes(
    nemo_store: Path, tmp_path: Path
) -> None:
    from flows.generate import generate_flow

    clean, killed = _two_copies(nemo_store, tmp_path)
    counts = generate_flow(clean, None)
    assert counts["montages"] > 0
    before = snapshot(killed)
    cmd = [sys.executable, "-m", "flows.generate", "--db", str(killed)]
    env = {**_env(tmp_path), "PREFECT_LOGGING_LEVEL": "INFO"}
    log = tmp_path / "generate.log"

    def task_started() -> bool:
        return log.exists() and "nemo-generate" in log.read_text(errors="replace")

    # Prefect logs the task run's creation: kill while it runs, before the store write.
    _kill_when(cmd, task_started, env=env, log=log)
    after_kill = snapshot(killed)
    # The negative check's scans are stored per video as they finish (a cache of facts about
    # scenes, kept so a rerun need not look again); the plans land whole or not at all.
    scans = ("negative_scans", "negative_sightings")
    assert after_kill[scans[0]] <= snapshot(clean)[scans[0]]
    assert _without(after_kill, scans) in (_without(before, scans),
                                           _without(snapshot(clean), scans)), (
        "generation must land whole or not at all")
    _run(cmd, env=env)
    assert snapshot(killed) == snapshot(clean)


def _without(snap: Snapshot, tables: tuple[str, ...]) -> Snapshot:
    return {t: rows for t, rows in snap.items() if t not in tables}


# -- render ---------------------------------------------------------------------------------

RENDER_SCRIPT = """
import json, sys
from pathlib import Path
from tests.badinputs.test_badinputs_resume import render_job
render_job(Path(sys.argv[1]), Path(sys.argv[2]))
"""
PROFILE = RenderParams(width=160, height=90, fps=25, workers=1)


def render_job(source: Path, out: Path) -> None:
    """Render 40 montages of the frame-coded source into ``out`` (what the child runs)."""
    from needleforge.records import Scene, scene_id_for
    from needleforge.stages.render import render_montages
    from tests.stages.test_render_stage import CUTS_S, make_video, montage

    video = make_video(source)
    scenes = {}
    for i, (start, end) in enumerate(itertools.pairwise(CUTS_S)):
        scene = Scene(scene_id=scene_id_for(video.video_id, i), video_id=video.video_id,
                      index=i, start_s=start, end_s=end, n_frames=round((end - start) * 25))
        scenes[i] = scene
    montages = [montage(f"m{k:03d}", [(scenes[k % 3], 1.0, 2.0), (scenes[(k + 1) % 3], 0.0,
                                                                   1.0 + (k % 4) / 2)])
                for k in range(40)]
    render_montages(montages, scenes_by_id={s.scene_id: s for s in scenes.values()},
                    videos_by_id={video.video_id: video}, out_dir=out,
                    cache_dir=out / ".cache", params=PROFILE)


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.glob("*.mp4"))}


@pytest.mark.slow
def test_render_killed_midrun_leaves_no_truncated_file_and_resumes(tmp_path: Path) -> None:
    from tests.media.test_render_media import coded_source

    source = coded_source(tmp_path / "src.mp4", fps=25, seconds=20)
    clean, killed = tmp_path / "clean", tmp_path / "killed"
    render_job(source, clean)
    cmd = [sys.executable, "-c", RENDER_SCRIPT, str(source), str(killed)]
    env = dict(os.environ, PYTHONPATH=str(REPO))

    def midway() -> bool:  # one montage published and the next one half-written
        return killed.is_dir() and any(killed.glob("m*.mp4")) and any(killed.glob(".m*.mp4"))

    _kill_when(cmd, midway, env=env, log=tmp_path / "render.log")
    published = sorted(killed.glob("m*.mp4"))
    assert 0 < len(published) < 40
    for path in published:  # whatever was published is whole
        assert probe(path).duration_s >= 2.9, path
    render_job(source, killed)
    assert _digests(killed) == _digests(clean)
    assert not _scratch(killed), _scratch(killed)


def test_sweep_removes_only_scratch_of_dead_processes(tmp_path: Path) -> None:
    from needleforge.media.outputs import sweep_scratch

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    names = [f".m001.{dead.pid}.77.video.mp4", f".m001.json.{dead.pid}",
             f".m002.{os.getpid()}.1.mp4", ".cache", "m001.mp4", ".hidden"]
    for name in names:
        (tmp_path / name).write_bytes(b"x")
    removed = sweep_scratch(tmp_path)
    assert sorted(p.name for p in removed) == sorted(names[:2])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names[2:])
