"""Human verdicts in a release: the required sample, decisions, corrected answers, the card's
intervals, on the release tests' hand-built store."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from needleforge.params import ReleaseParams
from needleforge.records.human import HumanVerdict
from needleforge.release import build_release
from needleforge.release.human_review import decision, in_sample, wilson
from needleforge.review.verdicts import question_key
from needleforge.stages.release import read_release_data
from needleforge.store import Store
from needleforge.store.human import record_human_verdicts
from tests.release.release_cases import CASE_PARAMS, make_renders, make_store


def _human(qid: str, key: str, who: str, valid: bool | None, *,
           spans: tuple[tuple[float, float], ...] | None = None) -> HumanVerdict:
    choice = "unsure" if valid is None else "wrong span" if spans else \
        "valid" if valid else "wrong description"
    flags = (None, None) if valid is None else (spans is None, True)
    return HumanVerdict(question_key=key, question_id=qid, annotator=who,
                        source="label-studio", source_ref=f"{who}/{qid}", choice=choice,
                        valid=valid, spans_right=flags[0], negatives_clean=flags[1],
                        answer_spans=spans)


def test_the_sample_is_seeded_stable_and_about_the_fraction() -> None:
    ids = [f"q{i:05d}" for i in range(4000)]
    picked = [q for q in ids if in_sample(q, 0.25, seed=7)]
    assert abs(len(picked) / len(ids) - 0.25) < 0.03
    assert picked == [q for q in ids if in_sample(q, 0.25, seed=7)]
    assert picked != [q for q in ids if in_sample(q, 0.25, seed=8)]
    # a question keeps its place whatever else is in the store
    assert [q for q in ids[:100] if in_sample(q, 0.25, seed=7)] == \
        [q for q in picked if q in set(ids[:100])]


def test_a_decision_is_the_majority_and_a_tie_decides_nothing() -> None:
    def h(valid: bool | None) -> HumanVerdict:
        return _human("q", "k", str(valid), valid)

    assert decision([h(True), h(True), h(False)]) is True
    assert decision([h(False)]) is False
    assert decision([h(True), h(False)]) is None
    assert decision([h(None)]) is None and decision([]) is None


def test_wilson_interval_matches_the_formula() -> None:
    z = 1.959963984540054
    n, k = 10, 7
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    assert wilson(k, n) == pytest.approx((centre - half, centre + half), abs=1e-9)
    assert wilson(0, 3)[0] == 0.0


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The release store with human verdicts: q-obj valid with its answer moved by both
    judges, q-shared-obj judged invalid, q-multi not judged."""
    base = tmp_path_factory.mktemp("human-release")
    db = make_store(base / "nf.duckdb")
    with Store(db) as store:
        montages = {m.montage_id: m for m in store.montages()}
        keys = {q.question_id: question_key(q, montages[q.montage_id])
                for q in store.questions()}
        record_human_verdicts(store, [
            _human("q-obj", keys["q-obj"], "a", True, spans=((5.0, 8.0),)),
            _human("q-obj", keys["q-obj"], "b", True, spans=((5.0, 8.0),)),
            _human("q-shared-obj", keys["q-shared-obj"], "a", False),
            _human("q-gone", "k-of-a-vanished-question", "a", False)])
    return db, make_renders(base / "renders")


def _shipped(root: Path) -> dict[str, dict[str, object]]:
    lines = (root / "questions.jsonl").read_text().splitlines()
    return {r["question_id"]: r for r in map(json.loads, lines)}


def test_humans_leave_out_the_invalid_and_correct_answers(judged: tuple[Path, Path],
                                                          tmp_path: Path) -> None:
    db, renders = judged
    report = build_release(data=read_release_data(db), name="h", out_root=tmp_path,
                           render_dir=renders, params=CASE_PARAMS)
    shipped = _shipped(report.path)
    assert sorted(shipped) == ["q-multi", "q-obj"]  # q-shared-obj: judged invalid
    assert shipped["q-obj"]["answer_spans"] == [[5.0, 8.0]]
    assert shipped["q-obj"]["answer_changed_by"] == ["a", "b"]
    assert "answer_changed_by" not in shipped["q-multi"]
    card = (report.path / "card.md").read_text()
    assert "## Human review" in card
    assert "2 question(s) have a human decision (1 valid); human review required: none" in card
    assert "Left out: 1 judged invalid, 0 required but not reviewed" in card
    # buckets: q-obj short (1/1 valid), q-shared-obj short (0/1): 1 of 2, Wilson 9.5-90.5 %
    lo, hi = wilson(1, 2)
    assert f"{100 * lo:.1f} – {100 * hi:.1f} %" in card
    assert "Verifier vs humans on 2 question(s): same outcome on 1 (50.0 %)" in card
    assert ("Judges: agreement on 1 question(s) judged by two or more judges: Cohen's kappa "
            "n/a (mean of 1 pair(s)), same choice 100.0 %.") in card


def test_requiring_review_of_all_ships_only_the_judged_valid(judged: tuple[Path, Path],
                                                              tmp_path: Path) -> None:
    db, renders = judged
    params = CASE_PARAMS.model_copy(update={"release": ReleaseParams(
        require_human_review="all")})
    report = build_release(data=read_release_data(db), name="all", out_root=tmp_path,
                           render_dir=renders, params=params)
    assert sorted(_shipped(report.path)) == ["q-obj"]
    assert "Left out: 1 judged invalid, 1 required but not reviewed" in \
        (report.path / "card.md").read_text()


def test_a_fraction_outside_zero_to_one_is_refused() -> None:
    with pytest.raises(ValueError, match="require_human_review"):
        ReleaseParams(require_human_review=1.5)
    with pytest.raises(ValueError, match="require_human_review"):
        ReleaseParams.model_validate({"require_human_review": "some"})
    assert ReleaseParams(require_human_review=0.2).require_human_review == 0.2
