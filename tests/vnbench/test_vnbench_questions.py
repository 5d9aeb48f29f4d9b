"""Options by rule (retrieval pool, ordering shuffles, counting normal, the truth's slot)
and circular tries."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from needleforge.vnbench.plan import balanced_draw
from needleforge.vnbench.questions import (
    WORDINGS,
    CountDraw,
    counting_options,
    draw_counts,
    option_range,
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


@given(low=st.integers(1, 30), width=st.integers(0, 20), sigma=st.floats(0.05, 20),
       rank=st.integers(0, 3), seed=st.integers(0, 10**6), data=st.data())
@settings(max_examples=300, deadline=None)
def test_counting_draws_are_distinct_positive_with_one_plantable_truth(
        low: int, width: int, sigma: float, rank: int, seed: int, data: st.DataObject) -> None:
    high = low + width
    centre = data.draw(st.integers(low, high))
    draw = draw_counts(low=low, high=high, centre=centre, rank=rank, sigma=sigma,
                       rng=random.Random(seed))
    first, last = option_range(low, high)
    assert len(set(draw.values)) == 4 and list(draw.values) == sorted(draw.values)
    assert all(first <= v <= last for v in draw.values) and first >= 1
    assert low <= draw.truth <= high
    if width >= 3:  # every option can be planted: the truth is the rank-th smallest
        assert draw.values[rank] == draw.truth
    options, answer = counting_options(draw, rng=random.Random(seed), slot=rank)
    assert answer == rank and options[answer] == str(draw.truth)
    assert sorted(int(o) for o in options) == list(draw.values)


def test_counting_options_sit_near_the_centre() -> None:
    rng = random.Random(0)
    spreads = []
    for i in range(300):
        draw = draw_counts(low=1, high=40, centre=20, rank=i % 4, sigma=2.0, rng=rng)
        spreads += [abs(v - 20) for v in draw.values]
    assert max(spreads) <= 10 and 1.0 < sum(spreads) / len(spreads) < 4.0


def test_tiny_spreads_fall_back_to_the_nearest_counts() -> None:
    draw = draw_counts(low=1, high=5, centre=1, rank=0, sigma=0.01, rng=random.Random(3))
    assert draw.values == (1, 2, 3, 4) and draw.truth == 1


def test_every_shown_count_is_right_equally_often() -> None:
    """The bias of drawing the truth first ("1" right whenever it is shown, since no
    distractor is below 1) is gone: P(right | shown) is 1/4 for every count."""
    shown: Counter[int] = Counter()
    right: Counter[int] = Counter()
    for i in range(4000):
        draw = draw_counts(low=1, high=5, centre=1 + i % 5, rank=(i // 5) % 4, sigma=2.0,
                           rng=random.Random(i))
        shown.update(draw.values)
        right[draw.truth] += 1
    for count in range(1, 6):
        assert right[count] / shown[count] == pytest.approx(0.25, abs=0.03), count


def test_narrow_count_ranges_widen_the_options_but_plant_only_plantable_counts() -> None:
    assert option_range(2, 4) == (1, 4) and option_range(1, 2) == (1, 4)
    assert option_range(3, 3) == (1, 4) and option_range(1, 5) == (1, 5)
    for seed in range(50):
        draw = draw_counts(low=2, high=4, centre=3, rank=0, sigma=2.0,
                           rng=random.Random(seed))
        assert draw.values == (1, 2, 3, 4) and draw.truth in (2, 3, 4)


def test_bad_counting_requests_name_the_values() -> None:
    with pytest.raises(VNBenchError, match="centre 9"):
        draw_counts(low=1, high=5, centre=9, rank=0, sigma=2.0, rng=random.Random(0))
    with pytest.raises(VNBenchError, match="slot = 4"):
        counting_options(CountDraw((1, 2, 3, 4), 2), rng=random.Random(0), slot=4)


@given(n=st.integers(1, 30), blocks=st.integers(1, 4), seed=st.integers(0, 100))
@settings(max_examples=60, deadline=None)
def test_balanced_draws_take_every_value_once_per_block(n: int, blocks: int,
                                                        seed: int) -> None:
    values = [balanced_draw(n, index=i, parts=("t", seed)) for i in range(n * blocks)]
    for b in range(blocks):
        assert sorted(values[b * n:(b + 1) * n]) == list(range(n))
    assert values == [balanced_draw(n, index=i, parts=("t", seed)) for i in range(n * blocks)]


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
