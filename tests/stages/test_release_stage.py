"""The release stage records the human verdict file into its store before it builds: the
verdicts a DVC rebuild dropped from the store come back from the file (the whole pipeline:
tests/release/test_release_e2e.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from needleforge.records.human import HumanVerdict
from needleforge.release import build_release
from needleforge.review.human_verdicts import RoundOutcome
from needleforge.review.verdict_file import merge_verdicts, write_verdict_file
from needleforge.review.verdicts import VerdictError, question_key
from needleforge.stages.release import release_store
from needleforge.store import Store
from needleforge.store.human import human_verdicts
from tests.release.release_cases import CASE_PARAMS, make_renders, make_store


def _human(qid: str, key: str, valid: bool) -> HumanVerdict:
    return HumanVerdict(question_key=key, question_id=qid, annotator="a", source="yaml",
                        source_ref=f"v.yaml#{key}", choice="valid" if valid else "invalid",
                        valid=valid, spans_right=True, negatives_clean=True)


@pytest.fixture(scope="module")
def renders(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_renders(tmp_path_factory.mktemp("renders"))


def _verdict_file(db: Path, path: Path) -> Path:
    with Store(db, read_only=True) as store:
        montages = {m.montage_id: m for m in store.montages()}
        keys = {q.question_id: question_key(q, montages[q.montage_id])
                for q in store.questions()}
    write_verdict_file(path, merge_verdicts([], [
        _human("q-obj", keys["q-obj"], True), _human("q-shared-obj", keys["q-shared-obj"], False),
        _human("q-gone", "k-of-a-vanished-question", False)]))
    return path


def _build(db: Path, out: Path, renders: Path, verdicts: Path,
           seen: list[RoundOutcome]) -> Path:
    """The stage's steps without the GX gate (its own tests run it): record, then build."""
    from needleforge.stages.release import read_release_data
    from needleforge.stages.review import record_verdict_file

    seen.append(record_verdict_file(db, verdicts))
    return build_release(data=read_release_data(db), name="h", out_root=out, render_dir=renders,
                         params=CASE_PARAMS).path


def test_a_rebuilt_store_gets_the_file_s_verdicts_back(tmp_path: Path, renders: Path) -> None:
    db = make_store(tmp_path / "nf.duckdb")  # as DVC rebuilds it: no human verdicts
    verdicts = _verdict_file(db, tmp_path / "human_verdicts.jsonl")
    seen: list[RoundOutcome] = []
    root = _build(db, tmp_path / "releases", renders, verdicts, seen)
    shipped = {json.loads(line)["question_id"]
               for line in (root / "questions.jsonl").read_text().splitlines()}
    assert "q-obj" in shipped and "q-shared-obj" not in shipped  # judged invalid
    assert "2 question(s) have a human decision (1 valid)" in (root / "card.md").read_text()
    (outcome,) = seen
    assert outcome.recorded.new == 3
    assert outcome.vanished == ("q-gone (v.yaml#k-of-a-vanished-question)",)
    _build(db, tmp_path / "again", renders, verdicts, seen)
    assert seen[1].recorded.unchanged == 3  # recording the file again changes nothing


def test_a_corrupt_verdict_file_stops_the_release_before_anything(tmp_path: Path,
                                                                  renders: Path) -> None:
    db = make_store(tmp_path / "nf.duckdb")
    path = tmp_path / "human_verdicts.jsonl"
    path.write_text('{"question_key": "k1"}\n')
    before = db.read_bytes()
    with pytest.raises(VerdictError, match=rf"{path}:1: missing field\(s\)"):
        release_store(db=db, name="h", out_root=tmp_path / "releases", render_dir=renders,
                      params=CASE_PARAMS, previous=None, human_verdicts=path)
    assert db.read_bytes() == before and not (tmp_path / "releases").exists()


def test_a_missing_verdict_file_records_nothing(tmp_path: Path) -> None:
    from needleforge.stages.review import record_verdict_file

    db = make_store(tmp_path / "nf.duckdb")
    outcome = record_verdict_file(db, tmp_path / "absent.jsonl")
    assert (outcome.given, outcome.recorded.new) == (0, 0)
    with Store(db, read_only=True) as store:
        assert human_verdicts(store) == []
