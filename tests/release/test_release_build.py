"""Building a release: every file, scorer compatibility, answers, Parquet, manifest, failures."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from needleforge.errors import ReleaseError, StoreError
from needleforge.evaluate import GroundingQuestion, load_questions
from needleforge.media.ffmpeg import find_ffmpeg
from needleforge.params import Params, ReleaseParams
from needleforge.release import ReleaseReport, build_release
from needleforge.release import build as build_module
from needleforge.release.build import RELEASE_STEPS
from needleforge.release.dvc import verify_files
from needleforge.release.file_io import sha256_file
from needleforge.stages.release import read_release_data, release_store
from needleforge.store import Store
from tests.release.release_cases import CASE_PARAMS, RELEASED_MONTAGES, make_renders, make_store

EXPECTED_FILES = {
    "questions.jsonl", "questions.parquet", "montages.jsonl", "sources.json", "manifest.json",
    "CHANGELOG.md", "build.json",
    "card.md", "card.html",
    *(f"videos/{m}.mp4" for m in RELEASED_MONTAGES),
    "exports/lmms_eval/needleforge_v1.yaml", "exports/lmms_eval/needleforge_v1_second_set.yaml",
    "exports/lmms_eval/utils.py",
    "exports/vlmevalkit/needleforge_grounding.tsv",
    "exports/vlmevalkit/needleforge_vlmevalkit.py", "exports/qvhighlights.jsonl",
    "README.md", "data/nemo.parquet",
    "plots/montage_duration_short.png", "plots/montage_duration_medium.png",
    "plots/target_labels.png", "plots/target_programs.png", "plots/needles_per_question.png",
    "plots/verification_pass_rates.png",
    "plots/answer_positions.png", "plots/blind_baselines.png",  # the bias audit's
}


@dataclasses.dataclass(frozen=True)
class Built:
    db: Path
    renders: Path
    report: ReleaseReport
    root: Path


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    base = tmp_path_factory.mktemp("release")
    db = make_store(base / "nf.duckdb")
    renders = make_renders(base / "renders")
    report = build_release(data=read_release_data(db), name="v1", out_root=base / "releases",
                           render_dir=renders, params=CASE_PARAMS)
    return Built(db, renders, report, report.path)


def _files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def test_every_file_is_written_and_nothing_else(built: Built) -> None:
    assert built.root == built.db.parent / "releases" / "v1"
    assert _files(built.root) == EXPECTED_FILES
    assert [p.name for p in built.root.parent.iterdir()] == ["v1"]  # no temp folder left
    r = built.report
    assert (r.n_questions, r.n_montages, r.n_videos, r.n_files) == (3, 3, 3, len(EXPECTED_FILES))
    assert r.failed == ("q-failed", "q-shared-scene") and r.unverified == ("q-unverified",)


def test_questions_load_in_the_scorer_sorted_and_only_passed(built: Built) -> None:
    loaded = load_questions(built.root / "questions.jsonl")
    assert [q.question_id for q in loaded] == ["q-multi", "q-obj", "q-shared-obj"]
    assert all(isinstance(q, GroundingQuestion) and q.family == "nemo" for q in loaded)
    lines = (built.root / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    assert all(list(json.loads(line))[:3] == ["question_id", "family", "task"] for line in lines)


def test_answer_spans_match_the_plans_in_the_store(built: Built) -> None:
    with Store(built.db, read_only=True) as store:
        plans = {m.montage_id: m for m in store.montages()}
        qs = {q.question_id: q for q in store.questions()}
    for q in load_questions(built.root / "questions.jsonl"):
        assert isinstance(q, GroundingQuestion)
        montage = plans[qs[q.question_id].montage_id]
        named = any(s.target_id for s in montage.segments)
        target = qs[q.question_id].target_object_id or qs[q.question_id].target_scene_id
        expected = montage.target_spans(target if named else None)
        assert [x for span in q.answer_spans for x in span] == pytest.approx(
            [x for span in expected for x in span])
        assert q.duration_s == pytest.approx(montage.duration_s)
        assert q.video == f"videos/{montage.montage_id}.mp4"
        assert (built.root / q.video).is_file()


def test_parquet_round_trips_the_jsonl(built: Built) -> None:
    table = pq.read_table(built.root / "questions.parquet")
    assert str(table.schema.field("answer_spans").type) == "list<element: list<element: double>>"
    assert table.schema.metadata is None or b"pandas" not in table.schema.metadata
    rows = table.to_pylist()
    lines = [json.loads(line) for line in (built.root / "questions.jsonl").open()]
    assert rows == lines
    assert rows[0]["answer_spans"] == [[12.0, 15.0], [0.0, 2.0]]


def test_montage_plans_carry_segments_and_sources(built: Built) -> None:
    plans = [json.loads(line) for line in (built.root / "montages.jsonl").open()]
    assert [p["montage_id"] for p in plans] == list(RELEASED_MONTAGES)
    shared = plans[2]
    assert shared["bucket"] == "medium" and shared["question_ids"] == ["q-shared-obj"]
    assert [s["video_id"] for s in shared["sources"]] == sorted(s["video_id"]
                                                                for s in shared["sources"])
    roles = [(s["role"], s["needle_index"]) for s in shared["segments"]]
    assert roles == [("negative", None), ("target", 0), ("target", 0), ("negative", None),
                     ("target", 1), ("negative", None)]
    first = shared["segments"][1]
    assert (first["src_start_s"], first["src_end_s"], first["montage_start_s"]) == (60.0, 65.0,
                                                                                    50.0)


def test_videos_are_the_renders(built: Built) -> None:
    for mid in RELEASED_MONTAGES:
        shipped, render = built.root / "videos" / f"{mid}.mp4", built.renders / f"{mid}.mp4"
        assert sha256_file(shipped) == sha256_file(render)
        assert os.path.samestat(shipped.stat(), render.stat())  # hard-linked, not copied


def test_manifest_lists_every_file_and_is_identical_on_rebuild(
    built: Built, tmp_path: Path
) -> None:
    text = (built.root / "manifest.json").read_text(encoding="utf-8")
    doc = json.loads(text)
    # every file but the manifest itself, the one that holds the build time marked as such
    assert [f["path"] for f in doc["files"]] == sorted(EXPECTED_FILES - {"manifest.json"})
    assert [f["path"] for f in doc["files"] if f.get("per_build")] == ["build.json"]
    assert "except manifest.json itself" in doc["files_note"]
    for entry in doc["files"]:
        path = built.root / entry["path"]
        assert (entry["sha256"], entry["size_bytes"]) == (sha256_file(path), path.stat().st_size)
    assert doc["params"] == CASE_PARAMS.model_dump(mode="json")
    assert doc["seeds"] == {"studio": 0, "nemo": 0, "montages": [7]}
    assert doc["backends"]["verifications"] == [
        {"verifier": "embedded", "model_version": "ver-1"},
        {"verifier": "judge", "model_version": "ver-1"}]
    assert doc["packages"]["duckdb"] and "torch" in doc["packages"]
    ffmpeg = find_ffmpeg()  # the binary that renders is named, by a path not tied to a venv
    assert doc["ffmpeg"]["version"] == ffmpeg.version and doc["ffmpeg"]["source"] == ffmpeg.source
    assert ffmpeg.path.endswith(doc["ffmpeg"]["path"].lstrip("~"))
    assert set(doc["code"]) == {"commit", "dirty"}
    assert doc["counts"]["excluded"] == {"failed": 2, "unverified": 1, "source_excluded": 0,
                                         "short_answer_window": 0}
    assert doc["bias_audit"]["positions"]["n"] == 3 and doc["bias_audit"]["passed"]
    again = build_release(data=read_release_data(built.db), name="v1", out_root=tmp_path,
                          render_dir=built.renders, params=CASE_PARAMS)
    assert _stable(again.path / "manifest.json") == _stable(built.root / "manifest.json")
    rebuilt = json.loads((again.path / "manifest.json").read_text(encoding="utf-8"))
    changed = {a["path"] for a, b in zip(doc["files"], rebuilt["files"], strict=True) if a != b}
    assert changed <= {"build.json"}  # only what records the run (its time may tick over)


def _stable(manifest_path: Path) -> dict[str, object]:
    """A manifest without the entries of the files that record the build run."""
    doc = json.loads(manifest_path.read_text(encoding="utf-8"))
    doc["files"] = [f for f in doc["files"] if not f.get("per_build")]
    return dict(doc)


def test_plans_only_release_without_renders(built: Built, tmp_path: Path) -> None:
    steps: list[tuple[int, int]] = []
    report = build_release(data=read_release_data(built.db), name="v1", out_root=tmp_path,
                           render_dir=None, params=CASE_PARAMS, on_step=lambda d,
                           t: steps.append((d, t)))
    assert steps == [(d, RELEASE_STEPS) for d in range(1, RELEASE_STEPS + 1)]
    assert report.n_videos == 0 and not (report.path / "videos").exists()
    assert _files(report.path) == {f for f in EXPECTED_FILES if not f.startswith("videos/")}
    doc = json.loads((report.path / "manifest.json").read_text())
    assert doc["counts"]["videos"] == 0
    assert "not included" in (report.path / "card.md").read_text()


def test_missing_render_fails_and_leaves_no_release(built: Built, tmp_path: Path) -> None:
    renders = tmp_path / "renders"
    renders.mkdir()
    for mid in ("m-obj", "m-multi"):
        (renders / f"{mid}.mp4").write_bytes((built.renders / f"{mid}.mp4").read_bytes())
    out = tmp_path / "releases"
    with pytest.raises(ReleaseError, match=r"1 released montage\(s\) have no render .*m-shared"):
        build_release(data=read_release_data(built.db), name="v1", out_root=out,
                      render_dir=renders, params=CASE_PARAMS)
    assert not out.exists() or list(out.iterdir()) == []


def test_failure_while_writing_keeps_the_old_release(
    built: Built, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = build_release(data=read_release_data(built.db), name="v1", out_root=tmp_path,
                          render_dir=None, params=CASE_PARAMS)
    before = (first.path / "manifest.json").read_bytes()

    def broken(*args: object, **kwargs: object) -> None:
        raise ReleaseError("the card could not be drawn")

    monkeypatch.setattr(build_module, "write_card", broken)
    with pytest.raises(ReleaseError, match="could not be drawn"):
        build_release(data=read_release_data(built.db), name="v1", out_root=tmp_path,
                      render_dir=built.renders, params=CASE_PARAMS, overwrite=True)
    assert [p.name for p in tmp_path.iterdir()] == ["v1"]  # the temp folder is gone
    assert (first.path / "manifest.json").read_bytes() == before


def test_existing_release_needs_overwrite(built: Built, tmp_path: Path) -> None:
    build_release(data=read_release_data(built.db), name="v1", out_root=tmp_path, render_dir=None,
                  params=CASE_PARAMS)
    with pytest.raises(ReleaseError, match="already exists"):
        build_release(data=read_release_data(built.db), name="v1", out_root=tmp_path,
                      render_dir=None, params=CASE_PARAMS)
    report = build_release(data=read_release_data(built.db), name="v1", out_root=tmp_path,
                           render_dir=built.renders, params=CASE_PARAMS, overwrite=True)
    assert report.n_videos == 3 and sorted(p.name for p in tmp_path.iterdir()) == ["v1"]


def test_release_params_change_what_ships(built: Built, tmp_path: Path) -> None:
    params = CASE_PARAMS.model_copy(update={"release": ReleaseParams(
        include_unverified=True, require_all_verdicts=False, include_videos=False,
        link_mode="copy")})
    report = build_release(data=read_release_data(built.db), name="wide", out_root=tmp_path,
                           render_dir=built.renders, params=params)
    ids = [q.question_id for q in load_questions(report.path / "questions.jsonl")]
    assert ids == ["q-multi", "q-obj", "q-shared-obj", "q-shared-scene", "q-unverified"]
    assert report.n_videos == 0 and report.failed == ("q-failed",)


def test_bad_inputs_are_refused(built: Built, tmp_path: Path) -> None:
    with pytest.raises(ReleaseError, match=r"release name '\.\./x'"):
        build_release(data=read_release_data(built.db), name="../x", out_root=tmp_path,
                      render_dir=None, params=CASE_PARAMS)
    with pytest.raises(ReleaseError, match=r"render folder .* does not exist"):
        build_release(data=read_release_data(built.db), name="v1", out_root=tmp_path,
                      render_dir=tmp_path / "nowhere", params=CASE_PARAMS)
    empty = tmp_path / "empty.duckdb"
    Store(empty).close()
    with pytest.raises(ReleaseError, match="nothing to release: of 0 NeMo questions"):
        build_release(data=read_release_data(empty), name="v1", out_root=tmp_path, render_dir=None,
                      params=CASE_PARAMS)
    assert not (tmp_path / "v1").exists()


def test_the_stage_names_a_bad_release_before_a_missing_store(tmp_path: Path) -> None:
    missing = tmp_path / "none.duckdb"
    with pytest.raises(ReleaseError, match=r"release name '\.\./x'"):
        release_store(db=missing, name="../x", out_root=tmp_path, render_dir=None,
                      params=CASE_PARAMS, previous=None)
    with pytest.raises(StoreError, match=r"none\.duckdb: store not found"):
        release_store(db=missing, name="v1", out_root=tmp_path, render_dir=None,
                      params=CASE_PARAMS, previous=None)
    assert not (tmp_path / "v1").exists()


def test_answer_windows_shorter_than_the_minimum_are_left_out(built: Built,
                                                              tmp_path: Path) -> None:
    # the defaults: q-multi's first needle lasts 2 s, under quality.min_answer_window_s = 3 s
    report = build_release(data=read_release_data(built.db), name="v1", out_root=tmp_path,
                           render_dir=None, params=Params())
    ids = {json.loads(line)["question_id"]
           for line in (report.path / "questions.jsonl").read_text().splitlines()}
    assert "q-multi" not in ids and "q-obj" in ids
    doc = json.loads((report.path / "manifest.json").read_text())
    assert doc["counts"]["excluded"]["short_answer_window"] == 1
    card = (report.path / "card.md").read_text()
    assert "1 with an answer window shorter than 3 s" in card
    assert "Every answer window lasts at least 3 s" in card


def test_card_says_which_tiou_and_how_long_the_windows_are(built: Built) -> None:
    card = (built.root / "card.md").read_text()
    section = card[card.index("## Scoring"):]
    assert "tIoU on exact seconds" in section and "second sets" in section
    assert "0 question(s) with a shorter one were left out" in section  # CASE_PARAMS: 2 s
    # short bucket: q-obj's 4.5 s and q-multi's 3 s and 2 s windows; medium: 5 s and 3 s
    assert "| short | 3 | 2.00 |" in section and "| medium | 2 | 3.00 |" in section


def test_a_sha256_check_covers_every_shipped_file(built: Built, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(built.root, copy)
    assert verify_files(copy) == []
    (copy / "plots" / "extra.png").write_bytes(b"not shipped by the build")
    (copy / "build.json").write_text("{}")
    assert verify_files(copy) == ["build.json has another sha256 than the manifest's",
                                  "plots/extra.png is not in the manifest"]
