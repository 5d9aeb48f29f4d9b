"""Expansion end to end on synthetic programs: buckets, grid, pieces, disjointness, counts.

The corpus has two programs of several videos and one program with a single video, with
targets and negatives from a 34-term vocabulary; the short stage is stage 2's own planner
(see ``expand_cases``). Invariants are checked with stage-2 functions (``clashes``,
``excluded_terms``), not with the index expansion uses internally.
"""

from __future__ import annotations

import collections
import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import expand_cases as ec
import pytest

from needleforge.nemo.expand import ExpansionResult
from needleforge.nemo.negatives import excluded_terms
from needleforge.nemo.stats import answer_spans
from needleforge.nemo.tables import index_tables
from needleforge.params import BucketCaps, CellCaps, ExpandParams, NemoParams
from needleforge.records import Question

CAP = CellCaps(object=8, scene=8)
PARAMS = ExpandParams(seed=7, medium_targets=2, long_targets=3, short_multi=CAP,
                      medium=BucketCaps(single=CAP, multi=CAP),
                      long=BucketCaps(single=CAP, multi=CAP))


@pytest.fixture(scope="module")
def data() -> ec.Corpus:
    return ec.corpus({"p1": 3, "p2": 2, "solo": 1}, scenes=60)


@pytest.fixture(scope="module")
def short(data: ec.Corpus) -> ec.Short:
    return ec.short_stage(data, fail_every=5)


@pytest.fixture(scope="module")
def result(data: ec.Corpus, short: ec.Short) -> ExpansionResult:
    return ec.run(data, short, PARAMS)


def test_every_rule_holds(result: ExpansionResult, data: ec.Corpus, short: ec.Short) -> None:
    ec.check_invariants(result, data, short, params=PARAMS, nemo=NemoParams())
    assert {m.bucket for m in result.montages} == {"short", "medium", "long"}


def test_every_cell_is_filled_to_its_cap(result: ExpansionResult) -> None:
    for cell in result.cells:
        assert cell.wanted == 8
        assert cell.made == cell.passed == 8, cell
        assert cell.short_by == 0


def test_multi_needle_rows_have_several_pieces_single_rows_one(
    result: ExpansionResult,
) -> None:
    montages = {m.montage_id: m for m in result.montages}
    counts: collections.Counter[bool] = collections.Counter()
    for q in result.questions:
        n = len(answer_spans(montages[q.montage_id], q))
        counts[n > 1] += 1
    # short/multi + medium/multi + long/multi = 48 multi-needle questions, 32 single.
    assert counts == {True: 48, False: 32}


def test_long_montages_carry_several_mutually_disjoint_targets(
    result: ExpansionResult, data: ec.Corpus
) -> None:
    """Targets sharing a montage share no label or top tag, and none's scene holds what
    another excludes (check_invariants checks the latter for every segment)."""
    tables = index_tables(data.scenes, tags=data.tags, objects=data.objects)
    per_montage: dict[str, list[Question]] = collections.defaultdict(list)
    for q in result.questions:
        per_montage[q.montage_id].append(q)
    long_ids = [m.montage_id for m in result.montages if m.bucket == "long"]
    assert max(len(per_montage[m]) for m in long_ids) == 3
    for mid in long_ids:
        excluded = [excluded_terms(ec._target_of(q, tables), tables, text=q.description)
                    for q in per_montage[mid]]
        for i, a in enumerate(excluded):
            for b in excluded[i + 1:]:
                assert a.isdisjoint(b), (mid, a, b)


def test_failed_short_questions_are_never_expanded(
    result: ExpansionResult, short: ec.Short
) -> None:
    failed = {v.question_id for v in short.verifications if not v.passed}
    assert failed
    failed_targets = {(q.needle_type, q.target_object_id or q.target_scene_id)
                      for q in short.questions if q.question_id in failed}
    made = {(q.needle_type, q.target_object_id or q.target_scene_id) for q in result.questions}
    assert not made & failed_targets


def test_same_seed_same_plans_other_seed_other_plans(
    result: ExpansionResult, data: ec.Corpus, short: ec.Short
) -> None:
    again = ec.run(data, short, PARAMS)
    assert again == result
    other = ec.run(data, short, PARAMS.model_copy(update={"seed": 8}))
    assert {m.montage_id for m in other.montages}.isdisjoint(
        {m.montage_id for m in result.montages})


def test_rerun_on_its_own_output_changes_nothing(
    result: ExpansionResult, data: ec.Corpus, short: ec.Short
) -> None:
    """Reading expanded montages back from the store: they are not sources themselves."""
    grown = dataclasses.replace(
        short, montages=[*short.montages, *result.montages],
        questions=[*short.questions, *result.questions],
        verifications=[*short.verifications, *result.verifications])
    assert ec.run(data, grown, PARAMS) == result


def test_single_video_program_falls_back_to_its_own_scenes() -> None:
    data = ec.corpus({"solo": 1}, scenes=150)
    short = ec.short_stage(data)
    params = ExpandParams(long_targets=1, medium=BucketCaps(
        single=CellCaps(object=0, scene=0), multi=CellCaps(object=0, scene=0)),
        short_multi=CellCaps(object=0, scene=0),
        long=BucketCaps(single=CellCaps(object=3, scene=3), multi=CellCaps(object=0, scene=0)))
    result = ec.run(data, short, params)
    ec.check_invariants(result, data, short, params=params, nemo=NemoParams())
    assert [m.bucket for m in result.montages] == ["long"] * 6
    assert {s.video_id for m in result.montages for s in m.segments} == \
        {data.videos[0].video_id}


def test_single_short_video_program_skips_long_montages_with_a_reason() -> None:
    data = ec.corpus({"solo": 1}, scenes=40)
    short = ec.short_stage(data)
    result = ec.run(data, short, ExpandParams(long_targets=2))
    assert not [m for m in result.montages if m.bucket == "long"]
    long_skips = [s for s in result.shortfalls if s.bucket == "long"]
    assert long_skips
    assert all("single video" in s.reason and "930.0" in s.reason for s in long_skips)
    long_cells = [c for c in result.cells if c.bucket == "long"]
    assert all(c.made == 0 and c.short_by == c.eligible > 0 for c in long_cells)
    assert any(m.bucket == "medium" for m in result.montages)


def test_too_few_negatives_for_a_bucket_skips_and_reports() -> None:
    data = ec.corpus({"p": 1}, scenes=30, max_s=10.0)  # a video of ~3.5 minutes
    short = ec.short_stage(data)
    params = ExpandParams(medium_min_s=600.0, medium_max_s=900.0)
    result = ec.run(data, short, params)
    assert not [m for m in result.montages if m.bucket != "short"]
    reasons = {s.reason.split(":")[0] for s in result.shortfalls}
    assert reasons == {"too few negatives for a medium montage of 1 target",
                       "too few negatives for a long montage of 1 target"}
    skipped = collections.Counter((s.bucket, s.needles) for s in result.shortfalls)
    for cell in result.cells:
        if cell.bucket != "short":
            assert cell.made == 0 and cell.short_by == cell.eligible
    assert sum(skipped.values()) == sum(c.eligible for c in result.cells if c.bucket != "short")


def test_zero_caps_make_nothing_and_want_nothing() -> None:
    data = ec.corpus({"p": 1}, scenes=30)
    zero = CellCaps(object=0, scene=0)
    params = ExpandParams(short_multi=zero, medium=BucketCaps(single=zero, multi=zero),
                          long=BucketCaps(single=zero, multi=zero))
    result = ec.run(data, ec.short_stage(data), params)
    assert not result.montages and not result.questions and not result.shortfalls
    assert all(c.eligible == c.made == c.short_by == 0 for c in result.cells)


def test_medium_keeps_the_verified_short_negatives(
    result: ExpansionResult, short: ec.Short
) -> None:
    """Grown, not rebuilt: a one-target medium montage holds its short montage's negatives
    (or as many as fit, since a medium montage may stop before using them all)."""
    montages = {m.montage_id: m for m in result.montages}
    short_by_target = {q.target_object_id or q.target_scene_id: q for q in short.questions}
    short_montages = {m.montage_id: m for m in short.montages}
    for q in result.questions:
        montage = montages[q.montage_id]
        if montage.bucket != "medium":
            continue
        src = short_by_target[q.target_object_id or q.target_scene_id]
        kept = {s.scene_id for s in short_montages[src.montage_id].segments
                if s.role == "negative"}
        assert kept & {s.scene_id for s in montage.segments if s.role == "negative"}


_DIGEST = """
import hashlib, sys
sys.path.insert(0, {tests!r})
import expand_cases as ec
from needleforge.params import ExpandParams
data = ec.corpus({{"p1": 2, "p2": 1}}, scenes=40)
r = ec.run(data, ec.short_stage(data), ExpandParams(seed=3, long_targets=3, medium_targets=2))
print(len(r.montages), hashlib.sha256(repr(
    (r.montages, r.questions, r.verifications, r.shortfalls, r.cells)).encode()).hexdigest())
"""


def test_plans_do_not_depend_on_the_hash_seed() -> None:
    """Set iteration order changes with PYTHONHASHSEED: plans must not follow it."""
    code = _DIGEST.format(tests=str(Path(__file__).parent))
    digests = set()
    for hash_seed in ("0", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env=env, check=True)
        digests.add(proc.stdout.strip())
    assert len(digests) == 1
    assert int(digests.pop().split()[0]) > 0
