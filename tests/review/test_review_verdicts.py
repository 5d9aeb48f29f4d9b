"""Verdict keys, the verdict file's checks, and the judged report on a hand-made case."""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path

import pytest
import yaml

from needleforge.records import Montage, Question, Segment
from needleforge.review import (
    FileVerdict,
    VerdictError,
    judge_report,
    load_verdicts,
    other_segments,
    question_key,
    target_segments,
)

QUESTION = Question(question_id="q1", montage_id="m1", needle_type="object",
                    target_scene_id="v0-s0001", target_object_id="v0-s0001-o000",
                    description="the red kite", text="When does the red kite appear?",
                    template_id="t1", backend="embedded", model_version="w1")


def _montage(*, target: tuple[float, float] = (10.0, 14.0),
             negative: tuple[float, float] = (30.0, 36.0), mid: str = "m1") -> Montage:
    first = Segment(position=0, video_id="v0", scene_id="v0-s0003", src_start_s=negative[0],
                    src_end_s=negative[1], montage_start_s=0.0, role="negative")
    second = Segment(position=1, video_id="v0", scene_id="v0-s0001", src_start_s=target[0],
                     src_end_s=target[1], montage_start_s=first.duration_s, role="target",
                     needle_index=0)
    return Montage(montage_id=mid, bucket="short", segments=(first, second), seed=0)


def test_key_changes_with_what_a_judge_sees_and_only_with_that() -> None:
    key = question_key(QUESTION, _montage())
    assert key.startswith("k") and len(key) == 17
    changed = [
        question_key(dataclasses.replace(QUESTION, text="When is the red kite seen?"),
                     _montage()),
        question_key(dataclasses.replace(QUESTION, description="the kite"), _montage()),
        question_key(dataclasses.replace(QUESTION, target_object_id="v0-s0001-o001"),
                     _montage()),
        question_key(QUESTION, _montage(target=(10.0, 14.5))),
        question_key(QUESTION, _montage(target=(10.02, 14.0))),
        question_key(QUESTION, _montage(negative=(30.0, 35.0))),
    ]
    assert key not in changed and len(set(changed)) == len(changed)
    # float noise below the 0.01 s rounding, and ids derived from the content, keep the key
    assert question_key(QUESTION, _montage(target=(10.0000001, 13.9999999))) == key
    renamed = dataclasses.replace(QUESTION, question_id="q9", montage_id="m9",
                                  model_version="w2")
    assert question_key(renamed, _montage(mid="m9")) == key


def _entry(key: str, qid: str, valid: object, **kw: object) -> dict[str, object]:
    flags = {"spans_right": True, "negatives_clean": True} if valid is not None else {
        "spans_right": None, "negatives_clean": None}
    return {"key": key, "question_id": qid, "valid": valid, **flags, "note": "", **kw}


def _write(path: Path, entries: list[object], version: int = 1) -> Path:
    path.write_text(yaml.safe_dump({"version": version, "verdicts": entries}, sort_keys=False),
                    encoding="utf-8")
    return path


def test_a_good_file_loads(tmp_path: Path) -> None:
    path = _write(tmp_path / "v.yaml", [
        _entry("k1", "q1", True, note="fine"), _entry("k2", "q2", False, spans_right=False),
        _entry("k3", "q3", None)])
    got = load_verdicts(path)
    assert got["k1"] == FileVerdict("k1", "q1", True, True, True, "fine")
    assert got["k2"].valid is False and got["k2"].spans_right is False
    assert not got["k3"].judged
    empty = tmp_path / "empty.yaml"
    empty.write_text("version: 1\nverdicts: []\n")
    assert load_verdicts(empty) == {}


@pytest.mark.parametrize(("content", "expected"), [
    ("version: 1\nverdicts: [\n", "not valid YAML"),
    ("- just a list\n", "expected a mapping with exactly 'version'"),
    ("version: 2\nverdicts: []\n", "version = 2"),
    ("version: 1\nverdicts: {key: k1}\n", "'verdicts' must be a list"),
])
def test_bad_files_name_the_file(tmp_path: Path, content: str, expected: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(content)
    with pytest.raises(VerdictError, match=expected) as err:
        load_verdicts(path)
    assert str(path) in str(err.value)


@pytest.mark.parametrize(("entry", "expected"), [
    ({"key": "k2", "question_id": "q2", "valid": True, "spans_right": True},
     r"entry 2 \(key k2\): missing field\(s\) \['negatives_clean', 'note'\]"),
    ({**_entry("k2", "q2", True), "judge": "me"}, r"entry 2 \(key k2\).*unknown.*'judge'"),
    (_entry("k2", "q2", "yes"),
     r"entry 2 \(key k2\): valid must be true, false or null, got 'yes'"),
    (_entry("k2", "q2", True, spans_right=1), "entry 2 .*spans_right must be true, false"),
    (_entry("k2", "q2", True, note=5), "entry 2 .*note must be a string"),
    (_entry("", "q2", True), "entry 2: key must be a non-empty string"),
    (_entry("k2", "q2", True, negatives_clean=None), "entry 2 .*needs spans_right and "
     "negatives_clean"),
    (_entry("k1", "q2", True), r"entry 2 \(key k1\) repeats the key of an earlier entry "
     r"\(question q1\)"),
    ("not a mapping", "entry 2: expected a mapping"),
])
def test_bad_entries_name_the_file_and_the_entry(tmp_path: Path, entry: object,
                                                 expected: str) -> None:
    path = _write(tmp_path / "verdicts.yaml", [_entry("k1", "q1", True), entry])
    with pytest.raises(VerdictError, match=expected) as err:
        load_verdicts(path)
    assert str(path) in str(err.value)


def test_a_field_given_twice_in_one_entry_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "twice.yaml"
    path.write_text("version: 1\nverdicts:\n  - key: k1\n    question_id: q1\n    valid: true\n"
                    "    valid: false\n    spans_right: true\n    negatives_clean: true\n"
                    "    note: ''\n")
    with pytest.raises(VerdictError, match="'valid' appears twice") as err:
        load_verdicts(path)
    assert str(path) in str(err.value) and "line 6" in str(err.value)


def test_missing_or_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(VerdictError, match="cannot read"):
        load_verdicts(tmp_path / "none.yaml")
    latin = tmp_path / "latin.yaml"
    latin.write_bytes("version: 1\nverdicts: []\n# caf\xe9\n".encode("latin-1"))
    with pytest.raises(VerdictError, match=r"latin\.yaml: cannot read"):
        load_verdicts(latin)


def test_report_counts_unjudged_apart_and_compares_the_verifier() -> None:
    keys = {f"q{n}": f"k{n}" for n in range(1, 7)}
    verdicts = {v.key: v for v in [
        FileVerdict("k1", "q1", True, True, True),        # valid, verifier passed
        FileVerdict("k2", "q2", False, False, True),      # invalid, verifier passed
        FileVerdict("k3", "q3", False, True, False),      # invalid, verifier refused
        FileVerdict("k4", "q4", True, True, False),       # valid, verifier refused
        FileVerdict("k5", "q5", None, None, None),        # template entry: unjudged
        FileVerdict("k-old", "q1", True, True, True),     # the question changed since
    ]}  # q6: no entry at all
    passed: dict[str, bool | None] = {"q1": True, "q2": True, "q3": False, "q4": False,
                                      "q5": True, "q6": None}
    report = judge_report(keys, verdicts, verifier_passed=passed)
    assert (report.questions, report.valid, report.invalid, report.unjudged) == (6, 2, 2, 2)
    assert report.stale == 1
    assert report.valid_share == 0.5 and report.valid_lower_bound == pytest.approx(2 / 6)
    assert report.spans_right_share == 0.75 and report.negatives_clean_share == 0.5
    # verifier passed q1, q2 (judged): 1 of 2 valid; invalid q2, q3: it refused q3 only
    assert (report.verifier_passed, report.verifier_passed_valid) == (2, 1)
    assert (report.invalid_verified, report.invalid_refused) == (2, 1)
    assert report.verifier_precision == 0.5 and report.verifier_refusal == 0.5
    text = report.to_text()
    assert "2 valid, 2 invalid, 2 unjudged" in text and "stale" in text
    # stale is judged against every known question, not only those reviewed now
    assert judge_report({"q1": "k1"}, verdicts, known_keys=[*keys.values(), "k-old"]).stale == 0


def test_an_empty_report_has_no_shares() -> None:
    report = judge_report({}, {})
    assert report.valid_share is None and report.verifier_precision is None
    assert "n/a" in report.to_text()


def test_dates_and_other_yaml_types_are_refused(tmp_path: Path) -> None:
    path = _write(tmp_path / "d.yaml", [_entry("k1", "q1", True, note=dt.date(2024, 1, 1))])
    with pytest.raises(VerdictError, match="note must be a string"):
        load_verdicts(path)


def test_a_shared_montage_shows_the_other_needles_as_negatives() -> None:
    def seg(pos: int, start: float, target: str | None) -> Segment:
        return Segment(position=pos, video_id="v0", scene_id=f"v0-s000{pos}",
                       src_start_s=start, src_end_s=start + 5.0, montage_start_s=5.0 * pos,
                       role="negative" if target is None else "target",
                       needle_index=None if target is None else 0, target_id=target)

    def shared(other_start: float) -> Montage:
        return Montage(montage_id="m1", bucket="short", seed=0, segments=(
            seg(0, 0.0, None), seg(1, 10.0, "v0-s0001-o000"), seg(2, other_start, "v0-s0002")))

    montage = shared(20.0)
    assert [s.position for s in target_segments(QUESTION, montage)] == [1]
    others = other_segments(QUESTION, montage)
    assert [(s.position, s.role) for s in others] == [(0, "negative"), (2, "target")]
    # moving the other question's needle changes what this question's judge saw
    assert question_key(QUESTION, shared(30.0)) != question_key(QUESTION, montage)
