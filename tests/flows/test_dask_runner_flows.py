"""The represent and render flows on a local Dask cluster of 2 worker processes give what the
thread runner gives: the same rows in every representation table, the same rendered bytes.
The Ray runner's represent path is checked the same way when the optional prefect-ray is
installed (a local Ray takes ~10 s and ~1 GB to start, so ray is not a dev dependency).

Source media: the represent stage's clips (``cat.mp4``: a cat photo, a hard cut, a person
photo, 6 s 640x360; ``black.mp4``: 2 s of black), ingested once into one media store. The
thread and Dask runs work on two copies of the ingested DuckDB file, so they represent the
same videos independently; montages are cut from the represented scenes and rendered twice,
into separate outputs and separate scene-clip caches.

Bad inputs tried here: a rendered montage whose plan names a scene that is not stored (the
error names the montage and scene, nothing is rendered) and a Dask address nobody listens on
(the error names it before the flow starts).
"""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
from pathlib import Path

import pytest
import yaml

from flows.render import run_render
from flows.represent import run_represent
from needleforge.errors import ConfigError, MediaError
from needleforge.params import RunnerParams
from needleforge.records import Scene, scene_id_for
from needleforge.store import Store
from tests.stages.test_render_stage import montage
from tests.stages.test_represent_stage import clips, ingest_clips

__all__ = ["clips"]  # the module-scoped clip fixture of the represent stage tests

TABLES = ("scenes", "scene_tags", "objects", "object_boxes", "representations")
DASK = RunnerParams(kind="dask", workers=2)
# Checked before the fixtures are built (a skipped test should not pay for a Prefect API).
needs_dask = pytest.mark.skipif(importlib.util.find_spec("prefect_dask") is None,
                                reason="prefect-dask is not installed (the dask extra)")
needs_ray = pytest.mark.skipif(importlib.util.find_spec("prefect_ray") is None,
                               reason="prefect-ray is not installed (the optional ray extra)")
THREADS = RunnerParams(kind="threads", workers=2)


def _rows(db: Path) -> dict[str, list[tuple[object, ...]]]:
    with Store(db, read_only=True) as store:
        return {t: store.query(f"SELECT * FROM {t} ORDER BY ALL") for t in TABLES}


def _two_stores(clips: Path, tmp_path: Path, other: str) -> tuple[Path, Path, Path]:
    """(params, threads store, ``other`` store): the same two clips ingested into each."""
    lib = tmp_path / "lib"
    shutil.copytree(clips, lib)
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"render": {"width": 160, "height": 90}}))
    threads_db, other_db = tmp_path / "threads.duckdb", tmp_path / f"{other}.duckdb"
    ingest_clips(lib, [{"path": "cat.mp4"}, {"path": "black.mp4"}], threads_db)
    shutil.copy(threads_db, other_db)
    return params, threads_db, other_db


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.glob("*.mp4"))}


@pytest.mark.slow
@needs_dask
@pytest.mark.usefixtures("prefect_harness")
def test_dask_runner_matches_threads(clips: Path, tmp_path: Path) -> None:
    params, threads_db, dask_db = _two_stores(clips, tmp_path, "dask")

    counts = run_represent(threads_db, params, runner=THREADS)
    assert counts == {"represented": 2, "skipped": 0, "failed": 0, "failures": [],
                      "failed_videos": []}
    assert run_represent(dask_db, params, runner=DASK) == counts
    expected = _rows(threads_db)
    assert len(expected["scenes"]) == 3 and expected["objects"]
    assert _rows(dask_db) == expected

    with Store(threads_db) as store:
        cat, black = sorted(store.videos(), key=lambda v: v.media.duration_s, reverse=True)
        s0, s1 = store.scenes(cat.video_id)
        (b0,) = store.scenes(black.video_id)
        montages = [montage("m-1", [(s1, 1.0, 2.0), (s0, 0.0, 3.0), (b0, 0.0, 2.0)]),
                    montage("m-2", [(s0, 1.0, 2.0), (s1, 0.0, 3.0)]),
                    montage("m-3", [(b0, 0.0, 1.0), (s1, 0.0, 2.0), (s0, 2.0, 1.0)])]
        store.record_generation(montages, [], [])
    by_threads = run_render(threads_db, tmp_path / "out-t", params_path=params, runner=THREADS)
    by_dask = run_render(threads_db, tmp_path / "out-d", params_path=params, runner=DASK)
    assert by_threads == by_dask == {"montages": 3, "rendered": 3, "skipped": 0,
                                     "clips_encoded": 3, "clips_cached": 0, "join_misses": 0,
                                     "refused": 0}
    digests = _digests(tmp_path / "out-t")
    assert len(digests) == 3 and _digests(tmp_path / "out-d") == digests
    # A rerun: every montage is current, nothing is encoded or joined.
    again = run_render(threads_db, tmp_path / "out-d", params_path=params, runner=THREADS)
    assert (again["rendered"], again["skipped"], again["clips_encoded"]) == (0, 3, 0)

    # A plan naming a scene that is not stored fails before any encode, naming both.
    ghost = Scene(scene_id=scene_id_for(cat.video_id, 999), video_id=cat.video_id, index=999,
                  start_s=0.0, end_s=3.0, n_frames=30)
    with Store(threads_db) as store:
        store.record_generation([montage("m-ghost", [(ghost, 0.0, 2.0)])], [], [])
    with pytest.raises(MediaError, match=r"montage m-ghost.*not among the stored scenes"):
        run_render(threads_db, tmp_path / "out-g", params_path=params, runner=THREADS)
    assert not list((tmp_path / "out-g").glob("**/*.mp4"))


@needs_dask
def test_unreachable_dask_address_is_named() -> None:
    runner = RunnerParams(kind="dask", dask_address="tcp://127.0.0.1:9")
    with pytest.raises(ConfigError, match=r"runner.dask_address.*127\.0\.0\.1:9"):
        run_represent(Path("unused.duckdb"), runner=runner)


@pytest.mark.slow
@needs_ray
@pytest.mark.usefixtures("prefect_harness")
def test_ray_runner_matches_threads(clips: Path, tmp_path: Path) -> None:
    params, threads_db, ray_db = _two_stores(clips, tmp_path, "ray")
    ray = RunnerParams(kind="ray", workers=2)
    counts = run_represent(threads_db, params, runner=THREADS)
    assert run_represent(ray_db, params, runner=ray) == counts
    assert _rows(ray_db) == _rows(threads_db)
