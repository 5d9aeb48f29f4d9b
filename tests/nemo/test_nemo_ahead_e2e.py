"""Stage 2 looking ahead on worker threads, end to end with the real models and real videos.

Two ffmpeg-made videos (640x360, 5 fps) of six shots each, as in ``test_nemo_probe_e2e``:
Chelsea the cat large on gravel in shot 0 (the tracked object target), shrunk to 80 pixels
in one later shot (a cat the tables miss: the probe must refuse that negative), textures in
the others. Stage 2 runs with the real negative check (``build_probe``), the looking verifier
(SSD x1.5, MobileNet pose, EfficientNet crops) and keyframes decoded from the files:

* serially (``workers=0``) and ahead on 2 worker threads: the same montages, questions,
  verdicts, refused negatives, and the same scans in the same order; ahead, the verifier
  never ran its own detector (every detection it used was computed by a worker);
* through :func:`needleforge.stages.nemo.generate_store` (the CLI's code), with one video file
  deleted: both paths fail with the same message, and neither writes a plan, a question or a
  verdict; the scans stored (made before the failure) are the same.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest
from nemo_cases import backdrop, chelsea, make_scene, make_video
from PIL import Image

from needleforge.backends import default_registry
from needleforge.backends.embedded.verifier import LookingVerifier
from needleforge.backends.embedded.writer import EmbeddedDescriber
from needleforge.errors import MediaError
from needleforge.nemo import GenerationResult, VideoKeyframes, build_probe, generate
from needleforge.params import NemoParams, Params
from needleforge.records import (
    Box,
    ObjectAttributes,
    ObjectTrack,
    Representation,
    SceneScan,
    SceneTag,
    TimedBox,
    Video,
    object_id_for,
)
from needleforge.stages.nemo import generate_store
from needleforge.store import Store
from tests.conftest import ffmpeg

DURATIONS = (5.0, 3.0, 3.0, 3.0, 3.0, 3.0)
#: Per video: the shot that shows the small cat, and the backdrops of the others.
LAYOUTS = {"b" * 64: (1, ("gravel.png", "brick.png", "hubble_deep_field.jpg", "moon.png")),
           "c" * 64: (3, ("brick.png", "moon.png", "gravel.png", "hubble_deep_field.jpg"))}
PARAMS = NemoParams(short_min_s=16.5, short_max_s=17.0, min_negatives=2, min_scene_s=4.0,
                    min_scene_tags=1,
                    check={"every_s": 3.0, "input_scale": 1.5, "instances": False})


def _video(folder: Path, sha: str) -> Video:
    """Shot 0: the big cat; the layout's shot: the small cat; the rest: its backdrops."""
    small_at, textures = LAYOUTS[sha]
    big, small = backdrop("gravel.png"), backdrop("gravel.png")
    big.paste(chelsea().resize((200, 162)), (220, 100))
    small.paste(chelsea().resize((80, 65)), (400, 120))
    others = iter(textures)
    images: list[Image.Image] = [big] + [small if k == small_at else backdrop(next(others))
                                         for k in range(1, len(DURATIONS))]
    args: list[str] = []
    for k, (image, duration) in enumerate(zip(images, DURATIONS, strict=True)):
        image.save(folder / f"still{k}.png")
        args += ["-loop", "1", "-t", str(duration), "-r", "5", "-i", str(folder / f"still{k}.png")]
    joined = "".join(f"[{k}:v]" for k in range(len(DURATIONS)))
    path = folder / "shots.mp4"
    ffmpeg(*args, "-filter_complex", f"{joined}concat=n={len(DURATIONS)}:v=1:a=0,format=yuv420p",
           "-c:v", "libx264", "-g", "5", "-r", "5", str(path))
    record = make_video(sha, duration_s=sum(DURATIONS))
    return Video(**{**{f: getattr(record, f) for f in record.__dataclass_fields__},
                    "stored_path": str(path)})


def _representation(video: Video) -> Representation:
    """The tables of ``video``: six scenes, one tag each, the big cat tracked in shot 0."""
    scenes, clock = [], 0.0
    for k, duration in enumerate(DURATIONS):
        scenes.append(make_scene(k, clock, clock + duration, video_id=video.video_id))
        clock += duration
    target = scenes[0]
    # boxes every 1.2 s: the verifier's frames (0.8, 2.0, 3.2, 4.4 s) are not the writer's
    times = [target.start_s + 1.2 * k for k in range(5)]
    cat = ObjectTrack(
        object_id=object_id_for(target.scene_id, 0), scene_id=target.scene_id, index=0,
        tag="cat", start_s=times[0], end_s=times[-1], visible_s=times[-1] - times[0],
        mean_area_frac=0.14, mean_score=0.9,
        boxes=tuple(TimedBox(t, Box(220 / 640, 100 / 360, 200 / 640, 162 / 360)) for t in times),
        attributes=ObjectAttributes(colour="brown", position="centre", size_rank=1),
        referring_expression="the cat", backend="test", model_version="1")
    _, textures = LAYOUTS[video.sha256]
    names = ["cat", *(Path(t).stem.split("_")[0] for t in textures)]
    names.insert(LAYOUTS[video.sha256][0], "gravel")
    tags = [SceneTag(s.scene_id, name, 0.8, "test", "1")
            for s, name in zip(scenes, names, strict=True)]
    return Representation(video.video_id, tuple(scenes), tuple(tags), (cat,),
                          scene_detector="test", config_hash="test")


@pytest.fixture(scope="module")
def videos(tmp_path_factory: pytest.TempPathFactory) -> list[Video]:
    return [_video(tmp_path_factory.mktemp(f"ahead-{sha[0]}"), sha) for sha in LAYOUTS]


def _generate(videos: list[Video], workers: int
              ) -> tuple[GenerationResult, list[SceneScan], LookingVerifier]:
    reps = [_representation(v) for v in videos]
    verifier = LookingVerifier(num_threads=1)
    probe = build_probe(PARAMS, videos=videos, registry=default_registry())
    assert probe is not None
    with probe, VideoKeyframes({v.video_id: v for v in videos}) as keyframes:
        result = generate(videos=videos, scenes=[s for r in reps for s in r.scenes],
                          tags=[t for r in reps for t in r.tags],
                          objects=[o for r in reps for o in r.objects], params=PARAMS,
                          describer=EmbeddedDescriber(), verifier=verifier,
                          keyframes=keyframes, probe=probe, workers=workers)
        return result, probe.new_scans(), verifier


@pytest.mark.slow
def test_looking_ahead_gives_the_serial_result(videos: list[Video]) -> None:
    serial, serial_scans, serial_verifier = _generate(videos, workers=0)
    ahead, ahead_scans, ahead_verifier = _generate(videos, workers=2)
    assert serial.questions and serial.rejected_negatives  # the small cats were refused
    assert {r.sighting.label for r in serial.rejected_negatives} == {"cat"}
    assert ahead == serial
    assert ahead_scans == serial_scans
    # The verifier looked at negatives with its detector serially; ahead, workers did it all.
    assert serial_verifier._eyes._detector is not None
    assert ahead_verifier._eyes._detector is None


def _store(folder: Path, videos: list[Video]) -> Path:
    db = folder / "nf.duckdb"
    with Store(db) as store:
        store.record_ingest(videos, [])
        for video in videos:
            store.record_representation(_representation(video))
    return db


def _rows(db: Path, table: str) -> list[tuple[object, ...]]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall()


@pytest.mark.slow
def test_a_vanished_video_fails_both_paths_alike_and_writes_no_plan(
        videos: list[Video], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copies = []
    for video in videos:
        path = tmp_path / f"{video.video_id}.mp4"
        shutil.copyfile(video.stored_path, path)
        copies.append(Video(**{**{f: getattr(video, f) for f in video.__dataclass_fields__},
                               "stored_path": str(path)}))
    Path(copies[1].stored_path).unlink()  # the second video, after the first is planned
    params = Params(nemo=PARAMS)
    errors, stores = [], []
    for workers in (0, 2):
        folder = tmp_path / f"workers-{workers}"
        folder.mkdir()
        db = _store(folder, copies)
        monkeypatch.setenv("NEEDLEFORGE_NEMO_WORKERS", str(workers))
        with pytest.raises(MediaError, match="has vanished") as caught:
            generate_store(db=db, params=params)
        errors.append(str(caught.value))
        stores.append(db)
    assert errors[0] == errors[1] and copies[1].video_id in errors[0]
    for db in stores:
        assert _rows(db, "montages") == _rows(db, "questions") == _rows(db, "verifications") == []
    scans = [_rows(db, "negative_scans") for db in stores]
    assert scans[0] == scans[1] and scans[0]  # the first video's, as a serial run stores them
    assert _rows(stores[0], "negative_sightings") == _rows(stores[1], "negative_sightings")
