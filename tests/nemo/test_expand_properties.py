"""Invariants of expansion on random programs and parameters (hypothesis).

For any tables, caps and seed: every montage is inside its bucket and its lane's range, its
segments tile it, stay inside their scenes and start on the whole-second grid; target
segments are never adjacent; each question's pieces are its verified target span exactly
(each >= ``min_piece_s`` when split); no scene of a montage holds what any of its targets
excludes; every verdict passes; the counts add up; and the same seed gives the same result.
"""

from __future__ import annotations

import expand_cases as ec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from needleforge.params import BucketCaps, CellCaps, ExpandParams, NemoParams


@st.composite
def corpora(draw: st.DrawFn) -> ec.Corpus:
    """One or two programs of 1–3 videos; sizes reach long montages in about a third of cases."""
    programs = {f"p{i}": draw(st.integers(1, 3)) for i in range(draw(st.integers(1, 2)))}
    low = draw(st.floats(0.5, 6.0))
    return ec.corpus(programs, scenes=draw(st.integers(15, 50)), seed=draw(st.integers(0, 999)),
                     min_s=low, max_s=draw(st.floats(low + 4.0, 30.0)))


@st.composite
def expand_params(draw: st.DrawFn) -> ExpandParams:
    def cap() -> CellCaps:
        caps = st.sampled_from([-1, 0, 1, 2, 3, 4])
        return CellCaps(object=draw(caps), scene=draw(caps))

    medium_low = draw(st.floats(150.0, 500.0))
    long_low = draw(st.floats(901.0, 1200.0))
    min_piece = draw(st.sampled_from([1.0, 2.0, 2.5]))
    return ExpandParams(
        seed=draw(st.integers(0, 2**31)), medium_min_s=medium_low,
        medium_max_s=draw(st.floats(medium_low, 900.0)), long_min_s=long_low,
        long_max_s=draw(st.floats(long_low, 2400.0)),
        medium_targets=draw(st.integers(1, 3)), long_targets=draw(st.integers(1, 6)),
        min_piece_s=min_piece,
        min_multi_target_s=draw(st.floats(6.0, 10.0)) if min_piece < 2.5 else 6.0,
        max_pieces=draw(st.none() | st.integers(2, 6)),
        short_multi=cap(), medium=BucketCaps(single=cap(), multi=cap()),
        long=BucketCaps(single=cap(), multi=cap()),
    )


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=corpora(), params=expand_params())
def test_expansion_keeps_every_invariant(data: ec.Corpus, params: ExpandParams) -> None:
    nemo = NemoParams(short_min_s=15.0)
    short = ec.short_stage(data, nemo=nemo)
    result = ec.run(data, short, params, nemo)
    ec.check_invariants(result, data, short, params=params, nemo=nemo)
    for cell in result.cells:
        assert cell.made <= cell.eligible
        assert cell.wanted < 0 or cell.made <= cell.wanted
        assert cell.made + cell.short_by >= min(cell.eligible, max(cell.wanted, 0))
    assert sum(c.made for c in result.cells) == len(result.questions)
    assert ec.run(data, short, params, nemo) == result
