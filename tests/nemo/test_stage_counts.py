"""NeMo stages 2 and 3 count their work for a progress display: two steps a target in stage 2
(planned, verified), every lane's groups in stage 3; the counts rise one at a time to the
total and change nothing in the result."""

from __future__ import annotations

import expand_cases as ec
from nemo_cases import corpus, params

from needleforge.backends.embedded.writer import EmbeddedDescriber, EmbeddedVerifier
from needleforge.nemo import expand, generate
from needleforge.params import ExpandParams


def _rises_to_its_total(seen: list[tuple[int, int]]) -> None:
    assert seen, "nothing was counted"
    total = seen[-1][1]
    assert all(t == total for _, t in seen)
    assert [d for d, _ in seen] == list(range(1, total + 1))


def test_generate_counts_a_plan_and_a_verdict_per_target() -> None:
    kwargs = {**corpus().kwargs(), "params": params(seed=11)}
    seen: list[tuple[int, int]] = []
    counted = generate(**kwargs, describer=EmbeddedDescriber(seed=11),
                       verifier=EmbeddedVerifier(), on_step=lambda d, t: seen.append((d, t)))
    _rises_to_its_total(seen)
    assert seen[-1][1] == 2 * (len(counted.questions) + len(counted.skipped))
    plain = generate(**kwargs, describer=EmbeddedDescriber(seed=11),
                     verifier=EmbeddedVerifier())
    assert plain == counted


def test_expand_counts_every_lanes_groups() -> None:
    data = ec.corpus({"p1": 3}, scenes=50)
    short = ec.short_stage(data)
    seen: list[tuple[int, int]] = []
    counted = expand(**data.kwargs(), **short.kwargs(), params=ExpandParams(),
                     nemo=ec.PAPER_NEMO, on_group=lambda d, t: seen.append((d, t)))
    assert seen and seen[-1][0] == seen[-1][1] > 0
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)  # a lane may jump to its end
    assert counted == ec.run(data, short, ExpandParams())
