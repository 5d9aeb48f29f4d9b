"""What a blind model could learn across samples is balanced by the sampler, not filtered.

Over a task's samples (haystack indices 0..n-1): the correct option sits under each letter
equally often, retrieval answers do not repeat within a block, counting options are drawn
before the truth (each shown count right equally often, the truth at every rank equally
often) and the planted count is the answer, ordering patterns do not repeat within a block.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest
from PIL import Image

from needleforge.vnbench.assets import ImageSet, NeedleImage
from needleforge.vnbench.clips import ClipSet, NeedleClip
from needleforge.vnbench.compose import Layout, compose_sample
from needleforge.vnbench.plan import pick_haystacks
from needleforge.vnbench.records import VNBenchError, VNBenchSample
from needleforge.vnbench.subtasks import (
    ACT_SUBTASKS,
    ORDER_PATTERNS,
    SUBTASKS,
    Pools,
    draft,
    split_copies,
)
from tests.vnbench.test_vnbench_plan import video

N = 8
LAYOUT = Layout(width=320, height=180, clip_s=2, count_sigma=2.0)


@pytest.fixture(scope="module")
def pools(tmp_path_factory: pytest.TempPathFactory) -> Pools:
    """Eight labels per category and clip set; every needle file is one tiny PNG."""
    png = tmp_path_factory.mktemp("needles") / "n.png"
    Image.new("RGB", (40, 30), "orange").save(png)
    images = tuple(NeedleImage(cat, f"{cat}-{i}", png)
                   for cat in ("animal", "landmark") for i in range(8))
    clips = tuple(NeedleClip(f"motion-{i}", png) for i in range(8))
    return Pools(names=tuple(f"Name{i}" for i in range(8)), images=ImageSet(images),
                 clips=ClipSet(clips), level_categories={1: ("animal",), 2: ("landmark",)},
                 count_min=1, count_max=5)


def _samples(task: str, pools: Pools, *, seed: int = 0) -> list[VNBenchSample]:
    spec = {**SUBTASKS, **ACT_SUBTASKS}[task]
    haystacks, _ = pick_haystacks([video("a", 120.0)], n=N, min_s=30, max_s=60, seed=seed,
                                  tag="main")
    return [compose_sample(spec, haystack=h, pools=pools, index=i, seed=seed, layout=LAYOUT)
            for i, h in enumerate(haystacks)]


@pytest.mark.parametrize("task", ["ret_edit1", "ord_insert1", "cnt_edit1", "cnt_edit2",
                                  "cnt_act"])
def test_the_answer_sits_under_every_letter_twice_in_eight_samples(task: str,
                                                                   pools: Pools) -> None:
    letters = Counter(s.answer_index for s in _samples(task, pools))
    assert letters == {0: 2, 1: 2, 2: 2, 3: 2}


def test_retrieval_answers_do_not_repeat_within_a_block(pools: Pools) -> None:
    for task in ("ret_edit1", "ret_insert1", "ret_act"):
        answers = [s.answer for s in _samples(task, pools)]
        assert len(set(answers)) == N, (task, answers)


@pytest.mark.parametrize("task", ["cnt_edit1", "cnt_edit2", "cnt_insert1", "cnt_act"])
def test_counting_plants_its_answer_at_every_rank(task: str, pools: Pools) -> None:
    samples = _samples(task, pools, seed=3)
    ranks = Counter(sorted(int(o) for o in s.options).index(int(s.answer)) for s in samples)
    assert ranks == {0: 2, 1: 2, 2: 2, 3: 2}
    for s in samples:
        assert int(s.answer) == sum(n.copies for n in s.needles)  # the planted count


def test_ordering_patterns_do_not_repeat_and_the_order_is_the_needles(pools: Pools) -> None:
    samples = _samples("ord_insert1", pools)
    patterns = []
    for s in samples:
        order = [n.label for n in s.needles]
        assert s.answer == ", ".join(order)
        patterns.append(tuple(sorted(order).index(label) for label in order))
    assert len(set(patterns)) == N and set(patterns) <= set(ORDER_PATTERNS)


def test_edit2_copies_split_the_count_and_bad_counts_are_refused(pools: Pools) -> None:
    for total in range(4, 17):
        copies = split_copies(total, rng=random.Random(total))
        assert sum(copies) == total and all(1 <= c <= 4 for c in copies) and len(copies) == 4
    with pytest.raises(VNBenchError, match="17 copies"):
        split_copies(17, rng=random.Random(0))
    with pytest.raises(VNBenchError, match=r"plants 1\.\.5, not 9"):
        draft(SUBTASKS["cnt_edit1"], pools=pools, rng=random.Random(0), count=9)


def test_samples_still_do_not_move_when_more_are_added(pools: Pools) -> None:
    spec = SUBTASKS["cnt_insert1"]
    haystacks, _ = pick_haystacks([video("a", 120.0)], n=N, min_s=30, max_s=60, seed=0,
                                  tag="main")
    few = [compose_sample(spec, haystack=h, pools=pools, index=i, seed=0, layout=LAYOUT)
           for i, h in enumerate(haystacks[:3])]
    assert few == _samples("cnt_insert1", pools)[:3]
