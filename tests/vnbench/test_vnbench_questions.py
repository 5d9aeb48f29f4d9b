"""Options by rule (retrieval pool, ordering shuffles, counting normal) and circular tries."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from needleforge.vnbench.questions import (
    WORDINGS,
    counting_options,
    ordering_options,
    question_text,
    retrieval_options,
)
from needleforge.vnbench.records import (
    Haystack,
    Needle,
    VNBenchError,
    VNBenchSample,
)
from needleforge.vnbench.subtasks import ACT_SUBTASKS, LONG_SUBTASKS, SUBTASKS


@given(truth=st.integers(1, 60), sigma=st.floats(0.05, 20), seed=st.integers(0, 10**6))
@settings(max_examples=300, deadline=None)
def test_counting_options_are_distinct_positive_with_one_truth(truth: int, sigma: float,
                                                                seed: int) -> None:
    options, answer = counting_options(truth, rng=random.Random(seed), sigma=sigma)
    values = [int(o) for o in options]
    assert len(set(values)) == 4 and min(values) >= 1
    assert values[answer] == truth and values.count(truth) == 1


def test_counting_negatives_sit_near_the_truth() -> None:
    rng = random.Random(0)
    spreads = []
    for _ in range(300):
        options, answer = counting_options(10, rng=rng, sigma=2.0)
        spreads += [abs(int(o) - 10) for i, o in enumerate(options) if i != answer]
    assert max(spreads) <= 10 and 1.0 < sum(spreads) / len(spreads) < 4.0


def test_tiny_counts_fall_back_to_the_nearest_integers() -> None:
    options, answer = counting_options(1, rng=random.Random(3), sigma=0.01)
    assert sorted(int(o) for o in options) == [1, 2, 3, 4] and options[answer] == "1"


@given(items=st.lists(st.text("abcdefgh", min_size=1, max_size=4), min_size=3, max_size=6,
                      unique=True), seed=st.integers(0, 10**6))
@settings(max_examples=200, deadline=None)
def test_ordering_options_are_distinct_shuffles(items: list[str], seed: int) -> None:
    options, answer = ordering_options(items, rng=random.Random(seed))
    assert options[answer] == ", ".join(items)
    assert len(set(options)) == 4
    assert all(sorted(o.split(", ")) == sorted(items) for o in options)


def test_ordering_needs_distinct_items() -> None:
    with pytest.raises(VNBenchError, match="distinct"):
        ordering_options(["a", "a", "b", "c"], rng=random.Random(0))


def test_retrieval_negatives_come_from_the_pool() -> None:
    pool = ["cat", "cup", "kiwi", "rocket", "horse", "pagoda"]
    for seed in range(50):
        options, answer = retrieval_options("kiwi", pool=pool, rng=random.Random(seed))
        assert options[answer] == "kiwi" and set(options) <= set(pool)
        assert len(set(options)) == 4
    with pytest.raises(VNBenchError, match="retrieval needs 3"):
        retrieval_options("kiwi", pool=["kiwi", "cat", "Cat", "cup"], rng=random.Random(0))


def test_every_subtask_has_several_phrasings() -> None:
    for spec in [*SUBTASKS.values(), *LONG_SUBTASKS.values(), *ACT_SUBTASKS.values()]:
        phrasings = WORDINGS[(spec.group, spec.form)]
        assert len(set(phrasings)) >= 3
        text = question_text(spec.group, form=spec.form, rng=random.Random(1),
                             label="gift box")
        assert text.endswith("?") and "{" not in text
    assert "the gift box" in question_text("counting", form="image", rng=random.Random(0),
                                           label="gift box")


def sample_with(options: tuple[str, ...], answer_index: int) -> VNBenchSample:
    haystack = Haystack(haystack_id="h", video_id="v", source="s.mp4", source_sha256="0" * 64,
                        start_s=0, duration_s=12)
    needle = Needle(kind="subtitle", method="edit", label=options[answer_index], haystack_s=3,
                    start_s=3.0, end_s=4.0, text=f"The secret word is {options[answer_index]}.")
    return VNBenchSample(sample_id="x", task="ret_edit1", group="retrieval",
                         needle_kind="subtitle", method="edit", haystack=haystack,
                         needles=(needle,), question="?", options=options,
                         answer_index=answer_index, duration_s=12.0, video="x.mp4", seed=0)


@pytest.mark.parametrize("answer_index", range(4))
def test_rotations_put_the_answer_under_every_letter_once(answer_index: int) -> None:
    sample = sample_with(("Ana", "Bo", "Cy", "Di"), answer_index)
    seen = []
    for try_index in range(4):
        options, answer = sample.rotation(try_index)
        assert options[answer] == sample.answer
        seen.append(answer)
    assert sorted(seen) == [0, 1, 2, 3]
    assert sample.rotation(0) == (("Ana", "Bo", "Cy", "Di"), answer_index)
    with pytest.raises(VNBenchError):
        sample.rotation(4)


def test_samples_refuse_repeated_options_and_overlapping_needles() -> None:
    with pytest.raises(VNBenchError, match="not distinct"):
        sample_with(("Ana", "ana", "Cy", "Di"), 0)
    good = sample_with(("Ana", "Bo", "Cy", "Di"), 0)
    twin = good.needles[0]
    overlapping = Needle(kind="subtitle", method="edit", label="Bo", haystack_s=3,
                         start_s=3.5, end_s=4.5, text="The secret word is Bo.")
    with pytest.raises(VNBenchError, match="overlap"):
        VNBenchSample(**{**good.to_dict(), "haystack": good.haystack,
                         "needles": (twin, overlapping)})
