"""The bias audit and its gate: planted priors are caught, the balanced generators pass.

The records come from :mod:`tests.quality.bias_cases`: the studio sample's layout run through
the real NeMo planner and VNBench composer (no media), so "balanced" means what the generators
actually produce, and the planted biases are edits of those records.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from needleforge.params import QualityParams
from needleforge.quality import run_gate
from needleforge.quality.bias import (
    BIAS_COLUMNS,
    audit_release,
    bias_frame,
    flat_p,
)
from needleforge.quality.planted import plant_early, plant_ones
from needleforge.stages.validate import store_frames
from needleforge.store import Store
from tests.quality.bias_cases import studio_release

SEEDS = (0, 1, 2)


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory) -> dict[int, list[dict[str, Any]]]:
    """The sample recipe's question records at three seeds (well under a second each)."""
    tmp = tmp_path_factory.mktemp("bias")
    return {seed: studio_release(seed, tmp) for seed in SEEDS}


#: (counts, p-value) from the closed-form chi-square tail this audit used before SciPy (13d845a).
OLD_FLAT_P = [
    ([12, 9, 7, 4], 0.2357033699265325), ([30, 10], 0.0015654022580025488),
    ([5, 5, 5, 6, 9, 3, 2, 8, 7, 1], 0.23994317887658745), ([1, 0, 0], 0.3678794411714422),
    ([25, 20, 22, 18, 15], 0.5746972058298043),
]


@pytest.mark.parametrize(("counts", "p"), OLD_FLAT_P)
def test_flatness_p_values_are_the_old_ones(counts: list[int], p: float) -> None:
    assert flat_p(counts) == pytest.approx(p, rel=1e-12)


def test_flatness_p_values_match_the_tables() -> None:
    # counts whose chi-square statistic is the 5 % critical value of 1 and 3 dof
    assert flat_p([60, 40]) == pytest.approx(0.0455, abs=5e-4)  # x = 4.0, dof 1
    assert flat_p([10, 10, 10, 10]) == 1.0 and flat_p([40, 0, 0, 0]) < 1e-6
    assert flat_p([]) is None and flat_p([7]) is None and flat_p([0, 0, 0]) is None


@pytest.mark.parametrize("seed", SEEDS)
def test_the_balanced_generators_pass_the_audit(releases: dict[int, list[dict[str, Any]]],
                                                seed: int) -> None:
    audit = audit_release(releases[seed])
    assert audit.failing() == [], [s.summary() for s in audit.failing()]
    scored = {(s.baseline, s.kind) for s in audit.scores}
    assert scored == {("random", "grounding"), ("position_prior", "grounding"),
                      ("length_prior", "grounding"), ("text_only", "grounding"),
                      ("random", "choice"), ("text_only", "choice"),
                      ("option_prior", "choice"), ("letter_prior", "choice")}
    for ranks in audit.ranks.values():  # ranks balanced: a task's 2 samples, 2 ranks
        assert max(ranks) < sum(ranks) or sum(ranks) == 1
    assert all(sorted(c) == sorted(audit.letters[0]) for c in audit.letters.values())


def test_every_target_in_the_first_tenth_is_caught(
        releases: dict[int, list[dict[str, Any]]]) -> None:
    audit = audit_release(plant_early(releases[0]))
    assert audit.first_tenth == 1.0 and audit.position_bins[0] == audit.n_spans
    assert audit.position_p is not None and audit.position_p < 1e-9
    failing = {s.baseline for s in audit.failing()}
    assert {"position_prior", "length_prior"} <= failing
    position = next(s for s in audit.scores if s.baseline == "position_prior")
    assert position.excess_low > 0.2 and position.kind == "grounding"


def test_every_counting_answer_one_is_caught(
        releases: dict[int, list[dict[str, Any]]]) -> None:
    audit = audit_release(plant_ones(releases[0]))
    counting = {t: c for t, c in audit.options.items() if t.startswith("cnt")}
    assert counting and all(set(c) == {"1"} for c in counting.values())
    failing = {(s.baseline, s.metric) for s in audit.failing()}
    assert ("option_prior", "accuracy per try (counting)") in failing
    assert all(metric.endswith("(counting)") for _, metric in failing)  # only counting moved


def test_the_audit_is_deterministic_and_json_ready(
        releases: dict[int, list[dict[str, Any]]]) -> None:
    first = audit_release(releases[1]).to_dict()
    assert json.dumps(first, sort_keys=True) == json.dumps(
        audit_release(releases[1]).to_dict(), sort_keys=True)
    assert first["passed"] and first["margin"] == 0.03
    assert sum(first["positions"]["bins"]) == first["positions"]["n"] > 50
    assert {b["baseline"] for b in first["baselines"]} >= {"random", "option_prior"}


def test_bad_records_are_skipped_and_a_bad_margin_is_refused() -> None:
    audit = audit_release(["not a record", {"question_id": "x"}, 42])
    assert audit.scores == () and audit.n_grounding == 0 and audit.failing() == []
    with pytest.raises(ValueError, match="margin = 3 must be a fraction"):
        audit_release([], margin=3)


def test_the_frame_has_one_row_per_blind_score(
        releases: dict[int, list[dict[str, Any]]]) -> None:
    frame = bias_frame(audit_release(releases[2]))
    # 3 grounding priors; 3 choice priors per VNBench group (retrieval, ordering, counting)
    assert tuple(frame.columns) == BIAS_COLUMNS and len(frame) == 3 + 3 * 3
    assert "random" not in set(frame["baseline"])
    assert "accuracy per try (counting)" in set(frame["metric"])
    assert all("vs random" in s for s in frame["summary"])


def _empty_store(path: Path) -> Path:
    with Store(path):
        pass
    return path


@pytest.mark.slow
def test_the_gate_passes_three_seeds_and_fails_planted_bias_naming_it(
        releases: dict[int, list[dict[str, Any]]], tmp_path: Path) -> None:
    tables = store_frames(_empty_store(tmp_path / "empty.duckdb"), params=QualityParams())
    only = {"release_bias"}
    for seed in SEEDS:
        result = run_gate(tables=tables, release_questions=releases[seed],
                          out_dir=tmp_path / str(seed), params=QualityParams(), only=only)
        assert result.passed, result.to_text()
        [suite] = [s for s in result.suites if s.suite == "release_bias"]
        assert suite.status == "passed" and suite.n_rows == 12
    result = run_gate(tables=tables, release_questions=plant_early(releases[0]),
                      out_dir=tmp_path / "early", params=QualityParams(), only=only)
    assert not result.passed
    [failure] = result.failures
    assert failure.name == "release_bias.blind_within_margin_of_random"
    assert "baseline='position_prior'" in failure.details and "vs random" in failure.details
    result = run_gate(tables=tables, release_questions=plant_ones(releases[0]),
                      out_dir=tmp_path / "ones", params=QualityParams(blind_margin=0.03),
                      only=only)
    assert not result.passed and "baseline='option_prior'" in result.failures[0].details
    loose = run_gate(tables=tables, release_questions=plant_ones(releases[0]),
                     out_dir=tmp_path / "loose", params=QualityParams(blind_margin=1.0),
                     only=only)
    assert loose.passed  # the margin is the params'
