"""Human verdicts in the store: idempotent recording, vanished questions, corrected answers,
the judges' agreement, and YAML verdict files moving over (no Label Studio server needed)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from needleforge.cli import app
from needleforge.errors import StoreError
from needleforge.records.human import HumanVerdict, corrected_answer, verdict_from_choice
from needleforge.review import build_items, question_key
from needleforge.review.agreement import judges_agreement
from needleforge.stages.review import record_round
from needleforge.store import Store
from needleforge.store.human import human_verdicts
from tests.store.test_store import store_at_version

runner = CliRunner()


def _keys(db: Path) -> dict[str, str]:
    with Store(db, read_only=True) as store:
        items = build_items(store.questions(), store.montages(), objects=store.objects())
    return {i.question_id: question_key(i.question, i.montage) for i in items}


def _verdict(key: str, qid: str, who: str, choice: str, *, ref: str | None = None,
             spans: tuple[tuple[float, float], ...] | None = None) -> HumanVerdict:
    valid, right, clean = verdict_from_choice(choice, answer_changed=spans is not None)
    return HumanVerdict(question_key=key, question_id=qid, annotator=who,
                        source="label-studio", source_ref=ref or f"{who}/{qid}", choice=choice,
                        valid=valid, spans_right=right, negatives_clean=clean,
                        answer_spans=spans)


def test_a_second_round_of_the_same_verdicts_changes_nothing(db: Path) -> None:
    keys = _keys(db)
    batch = [_verdict(keys["q-obj"], "q-obj", "a", "wrong span", spans=((3.0, 5.0),)),
             _verdict(keys["q-obj"], "q-obj", "b", "wrong span", spans=((3.0, 5.0),)),
             _verdict(keys["q-scene"], "q-scene", "a", "wrong description"),
             _verdict(keys["q-scene"], "q-scene", "b", "valid")]
    first = record_round(db, batch)
    assert (first.recorded.new, first.recorded.changed, first.recorded.unchanged) == (4, 0, 0)
    assert first.corrected == ("q-obj",) and first.conflicts == ()
    before = db.read_bytes()
    second = record_round(db, batch)
    assert (second.recorded.new, second.recorded.changed, second.recorded.unchanged) == (0, 0, 4)
    assert db.read_bytes() == before  # not even rewritten
    edited = [dataclasses.replace(batch[3], choice="unsure", valid=None, spans_right=None,
                                  negatives_clean=None)]
    third = record_round(db, edited)
    assert (third.recorded.new, third.recorded.changed) == (0, 1)
    with Store(db, read_only=True) as store:
        assert len(human_verdicts(store)) == 4


def test_verdicts_on_a_vanished_question_are_kept_and_reported(db: Path) -> None:
    keys = _keys(db)
    with Store(db) as store:
        store.drop_montages(["m-scene"])
    outcome = record_round(db, [_verdict(keys["q-scene"], "q-scene", "a", "valid", ref="L/7")])
    assert outcome.vanished == ("q-scene (L/7)",)
    assert "1 verdict(s) on questions that no longer exist (kept in the store" in \
        outcome.to_text()
    with Store(db, read_only=True) as store:
        assert [v.source_ref for v in human_verdicts(store)] == ["L/7"]


def test_verdicts_withdrawn_upstream_are_reported_not_deleted(db: Path) -> None:
    keys = _keys(db)
    both = [_verdict(keys["q-obj"], "q-obj", "a", "valid", ref="L/projects/1/annotations/1"),
            _verdict(keys["q-obj"], "q-obj", "b", "valid", ref="L/projects/1/annotations/2"),
            _verdict(keys["q-obj"], "q-obj", "c", "valid", ref="L/projects/9/annotations/3")]
    record_round(db, both, scope="L/projects/1/annotations/")
    later = record_round(db, both[:1], scope="L/projects/1/annotations/")
    assert later.gone_upstream == ("q-obj (L/projects/1/annotations/2)",)  # not project 9's
    assert "1 stored verdict(s) whose annotation is no longer on the server" in later.to_text()
    assert record_round(db, both[:1]).gone_upstream == ()  # no scope: nothing to compare
    with Store(db, read_only=True) as store:
        assert len(human_verdicts(store)) == 3


def test_judges_who_correct_differently_leave_the_answer_as_generated(db: Path) -> None:
    keys = _keys(db)
    outcome = record_round(db, [
        _verdict(keys["q-obj"], "q-obj", "a", "wrong span", spans=((3.0, 5.0),)),
        _verdict(keys["q-obj"], "q-obj", "b", "valid", spans=((3.0, 5.5),))])
    assert outcome.corrected == () and outcome.conflicts == ("q-obj",)
    with Store(db, read_only=True) as store:
        assert corrected_answer(human_verdicts(store)) is None


def test_kappa_matches_a_hand_worked_case() -> None:
    # judges a, b on four questions: agree on q1, q2 (valid) and q4 (wrong span), differ on
    # q3. p_o = 3/4; a: valid 2, wrong description 1, wrong span 1; b: valid 3, wrong span 1;
    # p_e = (2*3 + 1*0 + 1*1) / 16 = 7/16; kappa = (3/4 - 7/16) / (1 - 7/16) = 5/9
    rows = [("q1", "valid", "valid"), ("q2", "valid", "valid"),
            ("q3", "wrong description", "valid"), ("q4", "wrong span", "wrong span")]
    verdicts = [_verdict(f"k{q}", q, who, choice)
                for q, ca, cb in rows for who, choice in (("a", ca), ("b", cb))]
    verdicts.append(_verdict("k5", "q5", "a", "valid"))  # judged once: not in the figure
    agreement = judges_agreement(verdicts)
    assert agreement.multi_judged == 4 and len(agreement.pairs) == 1
    assert agreement.kappa == pytest.approx(5 / 9)
    assert agreement.raw == pytest.approx(3 / 4)
    one = judges_agreement(verdicts[:2])  # one shared question: kappa undefined
    assert one.kappa is None and one.raw == 1.0
    assert "Cohen's kappa n/a" in one.to_text()


def test_yaml_verdicts_move_into_the_store_through_the_cli(db: Path, tmp_path: Path) -> None:
    keys = _keys(db)
    path = tmp_path / "verdicts.yaml"
    path.write_text(yaml.safe_dump({"version": 1, "verdicts": [
        {"key": keys["q-obj"], "question_id": "q-obj", "valid": True, "spans_right": True,
         "negatives_clean": True, "note": "fine"},
        {"key": keys["q-scene"], "question_id": "q-scene", "valid": None, "spans_right": None,
         "negatives_clean": None, "note": ""}]}))
    args = ["review", "--db", str(db), "--from", "yaml", "--verdicts", str(path),
            "--human-verdicts", str(tmp_path / "human_verdicts.jsonl")]  # not the repo's
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "1 read; 1 new" in result.output
    with Store(db, read_only=True) as store:
        (stored,) = human_verdicts(store)
    assert (stored.source, stored.choice, stored.note) == ("yaml", "valid", "fine")
    again = runner.invoke(app, args)
    assert "1 read; 0 new, 0 changed, 1 unchanged" in again.output
    missing = runner.invoke(app, ["review", "--db", str(db), "--from", "yaml"])
    assert missing.exit_code == 2 and "--from yaml needs --verdicts" in missing.output


def test_a_round_into_a_missing_store_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="store not found"):
        record_round(tmp_path / "none.duckdb", [])


def test_a_version_5_store_gets_the_verdict_table(tmp_path: Path) -> None:
    db = tmp_path / "v5.duckdb"
    store_at_version(db, 5)
    with Store(db) as store:
        assert store.counts()["human_verdicts"] == 0


def test_verdict_records_check_themselves() -> None:
    with pytest.raises(ValueError, match="choice = 'maybe'"):
        _verdict("k1", "q1", "a", "valid").__class__(
            question_key="k1", question_id="q1", annotator="a", source="label-studio",
            source_ref="r", choice="maybe", valid=True, spans_right=True,
            negatives_clean=True)
    with pytest.raises(ValueError, match=r"answer span \(5.0, 3.0\)"):
        _verdict("k1", "q1", "a", "wrong span", spans=((5.0, 3.0),))
    with pytest.raises(ValueError, match="undecided verdict"):
        HumanVerdict("k1", "q1", "a", "yaml", "r", "unsure", None, True, None)
