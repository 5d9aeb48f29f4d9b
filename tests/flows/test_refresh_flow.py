"""The scheduled refresh end to end: a second run with one new video adds only its questions.

A three-episode studio corpus is released twice: ``r1`` from a manifest listing episodes 1-2,
``r2`` from the full manifest. The second run must represent only the new episode (the
others' scene rows stay byte-for-byte the same) and ``r2``'s changelog must add exactly the
released questions whose target lies in the new episode, removing and changing nothing. A
third run on the same manifest has nothing new and releases nothing; a release flow after it
compares with the release built last and records a human verdict file before it builds.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from flows.refresh import refresh_flow
from flows.release import release_flow
from needleforge.cli import app
from needleforge.records.human import HumanVerdict
from needleforge.release import history
from needleforge.review.verdict_file import write_verdict_file
from needleforge.review.verdicts import question_key
from needleforge.store import Store


def _manifests(studio: Path) -> tuple[Path, Path]:
    """Episodes 1-2 only, and all three (beside the studio's manifest: paths are relative)."""
    data = yaml.safe_load((studio / "manifest.yaml").read_text())
    rows = [r for r in data["sources"] if r["program"] == "tiny"]
    first, full = studio / "first.yaml", studio / "full.yaml"
    first.write_text(yaml.safe_dump({**data, "sources": rows[:2]}))
    full.write_text(yaml.safe_dump({**data, "sources": rows}))
    return first, full


def _released_ids(release: Path) -> set[str]:
    lines = (release / "questions.jsonl").read_text().splitlines()
    return {json.loads(line)["question_id"] for line in lines if line.strip()}


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness")
def test_refresh_adds_only_the_new_videos_questions(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # The code fingerprint is pinned: this checkout may be edited while the test runs, and an
    # edit is a code change that a refresh rightly releases (the journey test runs on a copy).
    monkeypatch.setattr(history, "code_sha256", lambda package_dir=None: "pinned")
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({
        "studio": {"seed": 3, "real_clips": [], "programs": [
            {"name": "tiny", "n_videos": 3, "video_duration_s": 45, "min_scene_s": 5,
             "max_scene_s": 10}]},
        "scenes": {"backend": "opencv"},
        # the sample's lighter negative check (the default looks every second at 2x)
        "nemo": {"check": {"every_s": 8.0, "input_scale": 1.5}},
    }))
    studio = tmp_path / "studio"
    made = CliRunner().invoke(app, ["studio", "--out", str(studio), "--params", str(params)])
    assert made.exit_code == 0, made.output
    first, full = _manifests(studio)
    db, releases = tmp_path / "db" / "nf.duckdb", tmp_path / "releases"

    one = refresh_flow(first, db, releases, "r1", params)
    assert one["new_videos"] == 2 and one["represented"] == 2 and one["added"] == 0
    with Store(db, read_only=True) as store:
        old_videos = {v.video_id for v in store.videos()}
        old_scenes = store.query("SELECT * FROM scenes ORDER BY ALL")
        old_hashes = store.representation_hashes()

    two = refresh_flow(full, db, releases, "r2", params)
    assert (two["new_videos"], two["represented"], two["represent_skipped"]) == (1, 1, 2)
    with Store(db, read_only=True) as store:
        (new_video,) = {v.video_id for v in store.videos()} - old_videos
        video_of = {s.scene_id: s.video_id for s in store.scenes()}
        targets = {q.question_id: video_of[q.target_scene_id] for q in store.questions()}
        kept = store.query("SELECT * FROM scenes WHERE video_id != ? ORDER BY ALL",
                           [new_video])
        hashes = store.representation_hashes()
    assert kept == old_scenes
    assert {k: hashes[k] for k in old_hashes} == old_hashes

    added = _released_ids(releases / "r2") - _released_ids(releases / "r1")
    assert added and all(targets[qid] == new_video for qid in added)
    assert (two["added"], two["removed"], two["changed"]) == (len(added), 0, 0)
    contamination = json.loads((releases / "r2" / "manifest.json").read_text())["contamination"]
    assert contamination["compared_with"] == ["r1"] and not contamination["excluded"]
    flagged = {row["video_id"] for row in contamination["flagged"]}
    assert flagged == old_videos  # r1's sources are flagged as used before; the new one not
    changelog = (releases / "r2" / "CHANGELOG.md").read_text()
    assert "Compared with `r1`" in changelog
    assert all(f"`{qid}`" in changelog for qid in added)
    assert two["released"] == "r2" and two["previous"] == "r1"

    three = refresh_flow(full, db, releases, "r3", params)  # nothing new: no release
    assert three["released"] is None and "nothing new since release r2" in three["reason"]
    assert not (releases / "r3").exists()

    # A one-off release flow: its changelog compares with the release built last (r2), not
    # with the last name in sort order (r2 < "sample"), and its card reads the gate offline.
    # It records a human verdict file first: the question judged invalid there is not shipped.
    judged = sorted(_released_ids(releases / "r2"))[0]
    with Store(db, read_only=True) as store:
        montages = {m.montage_id: m for m in store.montages()}
        key = next(question_key(q, montages[q.montage_id]) for q in store.questions()
                   if q.question_id == judged)
    verdicts = tmp_path / "human_verdicts.jsonl"
    write_verdict_file(verdicts, [HumanVerdict(
        question_key=key, question_id=judged, annotator="owner", source="yaml",
        source_ref=f"v.yaml#{key}", choice="wrong span", valid=False, spans_right=False,
        negatives_clean=True)])
    made = release_flow("sample", db, releases, db.parent / "render", params_path=params,
                        human_verdicts=verdicts)
    assert made["released"] == "sample" and made["previous"] == "r2"
    card = (releases / "sample" / "card.md").read_text()
    assert "## Quality gate" in card
    assert judged not in _released_ids(releases / "sample")
    assert "1 question(s) have a human decision (0 valid)" in card
