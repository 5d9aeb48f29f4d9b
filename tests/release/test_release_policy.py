"""Authorization and contamination in a release, on the hand-built store of release_cases.

Video A (CC-BY-4.0, Studio A) feeds every released montage; video B (CC0-1.0, Archive B) also
feeds ``m-shared``. Both licences are valid until 2099-01-01 and grant only ``benchmark``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path

import pytest

from needleforge.errors import ReleaseError
from needleforge.params import Params, ReleaseParams
from needleforge.release import build_release
from needleforge.release.sources import read_earlier
from needleforge.stages.release import read_release_data
from needleforge.store import Store
from tests.release.release_cases import CASE_PARAMS, VA, VB, make_store, make_video


def _params(**release: object) -> Params:
    return CASE_PARAMS.model_copy(update={"release": ReleaseParams.model_validate(release)})


def _build(db: Path, out: Path, name: str, params: Params, **kw: object) -> Path:
    return build_release(data=read_release_data(db), name=name, out_root=out, render_dir=None,
                         params=params, **kw).path  # type: ignore[arg-type]


def _ids(root: Path) -> list[str]:
    return [json.loads(x)["question_id"] for x in (root / "questions.jsonl").read_text()
            .splitlines()]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_store(tmp_path_factory.mktemp("policy") / "nf.duckdb")


def test_manifest_and_sources_list_each_licence(db: Path, tmp_path: Path) -> None:
    root = _build(db, tmp_path, "v1", _params(release_date="2030-01-01"))
    doc = json.loads((root / "manifest.json").read_text())
    by_id = {s["video_id"]: s for s in doc["sources"]}
    assert set(by_id) == {VA, VB}
    assert (by_id[VB]["rights_holder"], by_id[VB]["licence_id"], by_id[VB]["scope"],
            by_id[VB]["valid_until"]) == ("Archive B", "CC0-1.0", ["benchmark"], "2099-01-01")
    assert json.loads((root / "sources.json").read_text()) == doc["sources"]
    assert doc["authorization"] == {"checked_on": "2030-01-01",
                                    "required_scopes": ["benchmark"], "unauthorized": "exclude"}
    assert doc["excluded_sources"] == []


@pytest.fixture(scope="module")
def mixed_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same store, but video B's licence ends 2027-06-30 (A's still runs to 2099)."""
    path = make_store(tmp_path_factory.mktemp("mixed") / "nf.duckdb")
    b = make_video("b", program="studio-b", holder="Archive B", licence="CC0-1.0")
    late = dataclasses.replace(b.authorization, valid_until=dt.date(2027, 6, 30))
    with Store(path) as store:
        store.upsert_videos([dataclasses.replace(b, authorization=late)])
    return path


def test_a_licence_expired_before_the_release_date_never_ships(
        mixed_db: Path, tmp_path: Path) -> None:
    valid = _build(mixed_db, tmp_path, "early", _params(release_date="2027-06-30"))
    assert _ids(valid) == ["q-multi", "q-obj", "q-shared-obj"]
    root = _build(mixed_db, tmp_path, "late", _params(release_date="2027-07-01"))
    assert _ids(root) == ["q-multi", "q-obj"]  # q-shared-obj's montage uses video B
    doc = json.loads((root / "manifest.json").read_text())
    assert [s["video_id"] for s in doc["sources"]] == [VA]
    assert [s["video_id"] for s in json.loads((root / "sources.json").read_text())] == [VA]
    (excluded,) = doc["excluded_sources"]
    assert excluded["video_id"] == VB and excluded["questions_dropped"] == ["q-shared-obj"]
    assert excluded["reason"] == ("licence CC0-1.0 of Archive B expired on 2027-06-30, before "
                                  "the release day 2027-07-01")
    assert doc["counts"]["excluded"]["source_excluded"] == 1
    log = (root / "CHANGELOG.md").read_text()
    assert "## Excluded sources (1)" in log and "`q-shared-obj`" in log
    assert "expired on 2027-06-30" in (root / "card.md").read_text()
    assert all(m["montage_id"] != "m-shared" for m in map(
        json.loads, (root / "montages.jsonl").read_text().splitlines()))
    with pytest.raises(ReleaseError, match=f"{VB}: licence CC0-1.0 of Archive B expired"):
        _build(mixed_db, tmp_path, "strict",
               _params(release_date="2027-07-01", unauthorized="error"))
    assert not (tmp_path / "strict").exists()


def test_no_day_means_the_build_day(mixed_db: Path) -> None:
    today = dt.datetime.now(dt.UTC).date()
    assert ReleaseParams().check_day() == today
    assert ReleaseParams(release_date=dt.date(2030, 1, 2)).check_day() == dt.date(2030, 1, 2)


def test_a_scope_not_granted_excludes_the_source_with_its_reason(
        db: Path, tmp_path: Path) -> None:
    params = _params(required_scopes=["benchmark", "redistribution"])
    with pytest.raises(ReleaseError, match=r"nothing to release.* 2 excluded source"):
        _build(db, tmp_path, "scoped", params)
    strict = _params(required_scopes=["redistribution"], unauthorized="error")
    with pytest.raises(ReleaseError, match=rf"{VA}: licence CC-BY-4.0 grants \['benchmark'\], "
                                           r"not the required scopes \['redistribution'\]"):
        _build(db, tmp_path, "strict", strict)
    assert not (tmp_path / "strict").exists() and not (tmp_path / "scoped").exists()


def test_sources_of_an_earlier_release_are_flagged_and_excluded_when_asked(
        db: Path, mixed_db: Path, tmp_path: Path) -> None:
    first = _build(mixed_db, tmp_path / "old", "v1", _params(release_date="2027-07-01"))
    flagged = _build(db, tmp_path, "v2", _params(), earlier=[first])
    doc = json.loads((flagged / "manifest.json").read_text())
    assert doc["contamination"]["compared_with"] == ["v1"]
    assert [f["video_id"] for f in doc["contamination"]["flagged"]] == [VA]
    assert {s["video_id"]: s["earlier_releases"] for s in doc["sources"]} == {VA: ["v1"], VB: []}
    assert _ids(flagged) == ["q-multi", "q-obj", "q-shared-obj"]  # flagged only
    assert "already used by earlier releases" in (flagged / "card.md").read_text()
    # Excluding: every question uses video A, so only an error is left; by manifest path too.
    with pytest.raises(ReleaseError, match="nothing to release"):
        _build(db, tmp_path, "v3", _params(exclude_contaminated=True),
               earlier=[first / "manifest.json"])
    # An earlier release (by its manifest alone) that used video B's content.
    (tmp_path / "b-era").mkdir()
    (tmp_path / "b-era" / "manifest.json").write_text(json.dumps(
        {"name": "b-era", "sources": [{"sha256": "b" * 64}]}))
    clean = _build(db, tmp_path, "v4", _params(exclude_contaminated=True),
                   earlier=[tmp_path / "b-era" / "manifest.json"])
    assert _ids(clean) == ["q-multi", "q-obj"]
    doc = json.loads((clean / "manifest.json").read_text())
    assert doc["excluded_sources"] == [{
        "video_id": VB, "sha256": "b" * 64, "reason": "contaminated: already used by b-era",
        "questions_dropped": ["q-shared-obj"]}]
    assert "`q-shared-obj`" in (clean / "CHANGELOG.md").read_text()


def test_earlier_releases_that_cannot_be_read_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ReleaseError, match=r"no manifest\.json"):
        read_earlier(tmp_path / "nowhere")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "manifest.json").write_text("{not json")
    with pytest.raises(ReleaseError, match=r"cannot read manifest\.json"):
        read_earlier(tmp_path / "bad")
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "manifest.json").write_text('{"name": "old"}')
    with pytest.raises(ReleaseError, match="manifest lists no sources"):
        read_earlier(tmp_path / "old")
    (tmp_path / "old" / "montages.jsonl").write_text(
        json.dumps({"sources": [{"sha256": "f" * 64}]}) + "\n")
    assert read_earlier(tmp_path / "old").sha256s == frozenset({"f" * 64})
