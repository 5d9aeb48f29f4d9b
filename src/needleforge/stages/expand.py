"""The expand stage (NeMo stage 3): medium/long and multi-needle montages from the verified
short ones, into the store.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from needleforge.backends import default_registry
from needleforge.nemo import ExpansionResult, Table2, benchmark_table, expand
from needleforge.params import Params
from needleforge.runtime.progress import OnCount
from needleforge.stages.nemo import keep_scans, stored_probe
from needleforge.store import Store


def expand_store(*, db: Path, params: Params,
                 on_group: OnCount | None = None) -> ExpansionResult:
    """NeMo stage 3 into ``db``: medium/long and multi-needle montages from verified short ones.

    Stage 3 owns the medium/long montages and the short multi-needle ones it made: those
    are dropped and rewritten, so a rerun on the same store writes the same rows. With
    ``nemo.check.negatives`` the new negatives of object montages are checked like stage 2's,
    reusing the scans stage 2 stored. ``on_group(done, total)``: the montage groups of every
    lane as they are planned (:func:`~needleforge.nemo.expand.expand`).

    Raises:
        StoreError: ``db`` is not a usable store. NemoError: inconsistent inputs.
    """
    with Store(db) as store:
        probe = stored_probe(store, params, default_registry())
        try:
            result = expand(
                videos=store.videos(), scenes=store.scenes(), tags=store.scene_tags(),
                objects=store.objects(), montages=store.montages(),
                questions=store.questions(), verifications=store.verifications(),
                params=params.expand, nemo=params.nemo, probe=probe, on_group=on_group)
        finally:
            keep_scans(store, probe)
        if probe is not None:
            result = dataclasses.replace(result, probe_cost=probe.cost)
        stale = [m.montage_id for m in store.montages() if m.bucket != "short"
                 or any(s.needle_index for s in m.segments)]
        store.drop_montages(stale)
        store.record_generation(result.montages, result.questions, result.verifications)
    return result


def benchmark_of(*, db: Path) -> Table2:
    """The store's montages and questions counted as NeMoBench's Table 2 (read-only).

    Raises:
        StoreError: ``db`` is not a usable store.
    """
    with Store(db, read_only=True) as store:
        return benchmark_table(store.montages(), store.questions())
