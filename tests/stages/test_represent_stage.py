"""The represent stage end to end: real clips, real embedded models, a real DuckDB store.

Bad inputs tried here: a video truncated halfway (scenes up to the failure kept, failure
recorded, the other videos still represented), a video with no cut (one scene), a one-frame
video, a black video (no objects, no tags), a malformed subtitle sidecar (the error names the
file and line; the store keeps what it had), an unknown backend name (the error lists the
known ones).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import skimage
import yaml
from typer.testing import CliRunner

from needleforge.cli import app
from needleforge.ingest import ingest
from needleforge.params import IngestParams, Params
from needleforge.store import Store
from tests.conftest import ffmpeg

runner = CliRunner()
LICENCE = {"program": "p", "rights_holder": "R", "licence_id": "CC0-1.0",
           "scope": ["benchmark"], "valid_until": "2099-01-01"}
PHOTOS = Path(skimage.__file__).parent / "data"


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Clips made from package photos so the embedded detector has real objects to find."""
    root = tmp_path_factory.mktemp("represent")
    # cat.mp4: 3 s of chelsea.png (a cat), hard cut, 3 s of astronaut.png (a person), 640x360.
    ffmpeg("-loop", "1", "-t", "3", "-i", str(PHOTOS / "chelsea.png"),
           "-loop", "1", "-t", "3", "-i", str(PHOTOS / "astronaut.png"),
           "-filter_complex",
           "[0]scale=640:360,setsar=1,fps=10[a];[1]scale=640:360,setsar=1,fps=10[b];"
           "[a][b]concat=n=2:v=1[v]",
           "-map", "[v]", "-c:v", "libx264", "-pix_fmt", "yuv420p", "-movflags", "+faststart",
           str(root / "cat.mp4"))
    # black.mp4: 2 s of black (no cut, nothing to see).
    ffmpeg("-f", "lavfi", "-i", "color=c=black:size=320x180:rate=10:duration=2",
           "-c:v", "libx264", "-pix_fmt", "yuv420p", str(root / "black.mp4"))
    # one.mp4: a single frame.
    ffmpeg("-f", "lavfi", "-i", "testsrc2=size=320x180:rate=10", "-frames:v", "1",
           "-c:v", "libx264", "-pix_fmt", "yuv420p", str(root / "one.mp4"))
    # half.mp4: cat.mp4 (index at the front) cut to its first 60 %: decode fails partway.
    data = (root / "cat.mp4").read_bytes()
    (root / "half.mp4").write_bytes(data[: int(len(data) * 0.6)])
    (root / "good.srt").write_text("1\n00:00:00,500 --> 00:00:02,000\nA \"cat\": 100% calm\n"
                                   "\n2\n00:00:03,500 --> 00:00:05,000\n宇宙飛行士\n")
    (root / "bad.srt").write_text("1\n00:00:00,500 --> 00:00:02,000\nfine\n\n"
                                  "2\n00:00:03,500 --> soon\nbroken\n")
    return root


def ingest_clips(folder: Path, rows: list[dict[str, object]], db: Path) -> None:
    manifest = folder / "manifest.yaml"
    manifest.write_text(yaml.safe_dump({"sources": [{**LICENCE, **r} for r in rows]}))
    result = ingest(manifest, media_dir=db.parent / "media", params=IngestParams())
    assert not result.rejections, result.rejections
    with Store(db) as store:
        store.record_ingest(result.videos, result.rejections)


@pytest.mark.slow
def test_represent_real_clips_and_rerun(clips: Path, tmp_path: Path) -> None:
    lib = tmp_path / "lib"
    shutil.copytree(clips, lib)
    db = tmp_path / "nf.duckdb"
    ingest_clips(lib, [{"path": "cat.mp4", "subtitles": "good.srt"}, {"path": "black.mp4"},
                       {"path": "one.mp4"}, {"path": "half.mp4"}], db)
    result = runner.invoke(app, ["represent", "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert "4 video(s) represented, 0 already current, 0 failed" in result.output

    with Store(db) as store:
        videos = {Path(v.source_path).name: v for v in store.videos()}
        scenes = {name: store.scenes(v.video_id) for name, v in videos.items()}
        tags = store.scene_tags()
        objects = store.objects()
        errors = dict(store.query("SELECT video_id, decode_error FROM representations"))
        before = {t: store.query(f"SELECT * FROM {t} ORDER BY ALL") for t in store.counts()}

    cat = scenes["cat.mp4"]
    assert [round(s.start_s, 1) for s in cat] == [0.0, 3.0]
    assert cat[-1].end_s == pytest.approx(6.0, abs=0.11)
    assert '"cat": 100% calm' in cat[0].subtitle_text and "宇宙飛行士" in cat[1].subtitle_text
    labels = {o.scene_id: o.tag for o in objects}
    assert labels.get(cat[0].scene_id) == "cat" and labels.get(cat[1].scene_id) == "person"
    assert all(o.referring_expression.startswith("the ") for o in objects)
    assert all(o.backend == "embedded-ssd-mobilenet-v2-coco" and o.model_version
               for o in objects)
    assert any(t.scene_id == cat[0].scene_id and "cat" in t.tag for t in tags)
    # each tag row names the one model that gave it, with that model's own version
    [detector] = {(o.backend, o.model_version) for o in objects}
    by_source = {(t.backend, t.model_version) for t in tags}
    assert detector in by_source and not any("+" in t.backend for t in tags)
    tagger = {pair for pair in by_source if pair[0] == "embedded-efficientnet-lite3-int8"}
    assert len(tagger) == 1 and by_source - tagger - {detector} <= {
        (t.backend, t.model_version) for t in tags if t.backend.startswith("measure")}
    for t in tags:  # the detector where a track of the label gave the kept score
        if not t.backend.startswith("measure"):
            scores = {o.mean_score for o in objects if o.scene_id == t.scene_id and o.tag == t.tag}
            assert ((t.backend, t.model_version) == detector) == (t.score in scores), t

    assert len(scenes["black.mp4"]) == 1 and len(scenes["one.mp4"]) == 1
    black = scenes["black.mp4"][0].scene_id
    assert not [o for o in objects if o.scene_id == black]
    assert not [t for t in tags if t.scene_id == black]

    half = videos["half.mp4"]
    assert errors[half.video_id] and errors[videos["cat.mp4"].video_id] is None
    assert 0 < scenes["half.mp4"][-1].end_s < 6.0

    again = runner.invoke(app, ["represent", "--db", str(db)])
    assert "0 video(s) represented, 4 already current, 0 failed" in again.output
    with Store(db) as store:
        after = {t: store.query(f"SELECT * FROM {t} ORDER BY ALL") for t in store.counts()}
    assert after == before


@pytest.mark.slow
def test_malformed_subtitles_fail_that_video_only(clips: Path, tmp_path: Path) -> None:
    lib = tmp_path / "lib"
    shutil.copytree(clips, lib)
    db = tmp_path / "nf.duckdb"
    ingest_clips(lib, [{"path": "cat.mp4", "subtitles": "bad.srt"}, {"path": "black.mp4"}], db)
    result = runner.invoke(app, ["scenes", "--db", str(db)])
    assert result.exit_code == 1
    assert "1 video(s) represented, 0 already current, 1 failed" in result.output
    # The source video is named first; the sidecar is the stored copy (named by its hash).
    assert "cat.mp4: " in result.output.replace("\n", "")
    assert ".srt:6:" in result.output and "soon" in result.output
    with Store(db) as store:
        assert store.counts()["representations"] == 1


def test_scenes_then_objects_reuses_stored_scenes(clips: Path, tmp_path: Path) -> None:
    lib = tmp_path / "lib"
    shutil.copytree(clips, lib)
    db = tmp_path / "nf.duckdb"
    ingest_clips(lib, [{"path": "black.mp4"}], db)
    assert runner.invoke(app, ["scenes", "--db", str(db)]).exit_code == 0
    with Store(db) as store:
        (hash_scenes,) = store.representation_hashes().values()
    assert hash_scenes.endswith("-none")
    result = runner.invoke(app, ["objects", "--db", str(db)])
    assert result.exit_code == 0 and "1 video(s) represented" in result.output
    with Store(db) as store:
        (hash_all,) = store.representation_hashes().values()
        assert store.counts()["scenes"] == 1
    assert hash_all.split("-")[0] == hash_scenes.split("-")[0] and not hash_all.endswith("-none")
    again = runner.invoke(app, ["scenes", "--db", str(db)])
    assert "0 video(s) represented, 1 already current" in again.output


def test_unknown_backend_lists_known_ones(tmp_path: Path) -> None:
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"objects": {"detector": "yolo-v99"}}))
    db = tmp_path / "nf.duckdb"
    Store(db).close()
    result = runner.invoke(app, ["represent", "--db", str(db), "--params", str(params)])
    assert result.exit_code == 2
    assert "yolo-v99" in result.output and "embedded" in result.output
    assert Params().objects.detector == "embedded"


@pytest.mark.slow
def test_represent_with_a_local_transformers_tagger(clips: Path, tmp_path: Path) -> None:
    """params choose the hf tagger and pass its model folder; rows record that backend."""
    from tests.backends.hf_tiny_models import build_tiny_vit

    model_dir = build_tiny_vit(tmp_path / "tiny-vit", labels=("kitten", "spaceman"))
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"objects": {
        "tagger": "hf", "tagger_options": {"model_dir": str(model_dir), "top_k": 2,
                                           "score_threshold": 0.0},
        "min_tag_score": 0.0,
    }}))
    lib = tmp_path / "lib"
    shutil.copytree(clips, lib)
    db = tmp_path / "nf.duckdb"
    ingest_clips(lib, [{"path": "cat.mp4"}], db)
    result = runner.invoke(app, ["represent", "--db", str(db), "--params", str(params)])
    assert result.exit_code == 0, result.output
    with Store(db) as store:
        tags = store.scene_tags()
    assert {"kitten", "spaceman"} & {t.tag for t in tags}
    assert all(t.backend.startswith("hf-tiny-vit") for t in tags
               if t.tag in ("kitten", "spaceman"))  # the tagger's own rows name it alone
    assert {t.backend for t in tags} <= {
        next(t.backend for t in tags if t.tag == "kitten" or t.tag == "spaceman"),
        "embedded-ssd-mobilenet-v2-coco", "measure-palette", "measure-colour-cast",
        "embedded-rapidocr-ppocrv4", "measure-closeup",
    }  # whole-shot measures, the close-up measure and the text reader (on by default)

    params.write_text(yaml.safe_dump({"objects": {"tagger": "hf", "tagger_options": {
        "model_dir": str(model_dir), "colour": "red"}}}))
    bad = runner.invoke(app, ["represent", "--db", str(db), "--params", str(params)])
    assert bad.exit_code == 2 and "colour" in bad.output


def test_tagged_keyframes_spread_over_the_scene() -> None:
    from needleforge.stages.represent_video import _spread

    assert _spread(10, 2) == [2, 7]
    assert _spread(10, 3) == [1, 5, 8]
    assert _spread(2, 5) == [0, 1]
    assert _spread(4, None) == [0, 1, 2, 3]


@pytest.mark.slow
def test_two_worker_threads_store_what_one_does(clips: Path, tmp_path: Path) -> None:
    """The default (``runner.workers: 2``) represents videos on two threads, each with its
    own models: the store is the one a single worker writes, failures included."""
    stores = {}
    for workers in (1, 2):
        lib = tmp_path / f"lib{workers}"
        shutil.copytree(clips, lib)
        db = tmp_path / f"w{workers}" / "nf.duckdb"
        db.parent.mkdir()
        ingest_clips(lib, [{"path": "cat.mp4"}, {"path": "black.mp4"}, {"path": "half.mp4"},
                           {"path": "one.mp4", "subtitles": "bad.srt"}], db)
        params = tmp_path / f"params{workers}.yaml"
        params.write_text(yaml.safe_dump({"runner": {"workers": workers}}))
        result = runner.invoke(app, ["represent", "--db", str(db), "--params", str(params)])
        assert result.exit_code == 1, result.output
        assert "3 video(s) represented, 0 already current, 1 failed" in result.output
        with Store(db) as store:
            stores[workers] = {
                t: [[str(v).replace(str(tmp_path / f"w{workers}"), "<w>") for v in row]
                    for row in store.query(f"SELECT * FROM {t} ORDER BY ALL")]
                for t in ("scenes", "scene_tags", "objects", "object_boxes", "representations")}
    assert stores[2] == stores[1]
    assert stores[1]["objects"] and stores[1]["scenes"]


def _two_shots(first: str, second: str, out: Path, *, first_grey: bool) -> None:
    """3 s of each photo, hard cut, 640x360 at 10 fps; the first in grey if asked."""
    grey = ",hue=s=0" if first_grey else ""
    ffmpeg("-loop", "1", "-t", "3", "-i", str(PHOTOS / first),
           "-loop", "1", "-t", "3", "-i", str(PHOTOS / second), "-filter_complex",
           f"[0]scale=640:360,setsar=1,fps=10{grey}[a];[1]scale=640:360,setsar=1,fps=10[b];"
           "[a][b]concat=n=2:v=1[v]",
           "-map", "[v]", "-c:v", "libx264", "-pix_fmt", "yuv420p", str(out))


@pytest.mark.slow
def test_a_colour_shot_among_black_and_white_ones_is_tagged_in_colour(tmp_path: Path) -> None:
    """chelsea.png in grey (3 s), hard cut, astronaut.png in colour (3 s): the colour shot
    gets "in colour"; cat.mp4 alone (both shots in colour) gets the word nowhere."""
    lib = tmp_path / "lib"
    lib.mkdir()
    _two_shots("chelsea.png", "astronaut.png", lib / "grey.mp4", first_grey=True)
    _two_shots("astronaut.png", "chelsea.png", lib / "colour.mp4", first_grey=False)
    db = tmp_path / "nf.duckdb"
    ingest_clips(lib, [{"path": "grey.mp4"}, {"path": "colour.mp4"}], db)
    result = runner.invoke(app, ["represent", "--db", str(db)])
    assert result.exit_code == 0, result.output
    with Store(db) as store:
        videos = {Path(v.source_path).name: v.video_id for v in store.videos()}
        shots = {(s.video_id, s.index): {t.tag for t in store.scene_tags()
                                         if t.scene_id == s.scene_id}
                 for s in store.scenes()}
    grey = videos["grey.mp4"]
    assert "black-and-white" in shots[grey, 0] and "in colour" not in shots[grey, 0]
    assert "in colour" in shots[grey, 1] and "black-and-white" not in shots[grey, 1]
    assert not any("in colour" in tags for (video, _), tags in shots.items()
                   if video == videos["colour.mp4"])
