"""Whole-store snapshots: every row of every table, to show nothing stored was lost or torn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from needleforge.store import Store

Snapshot = dict[str, set[tuple[Any, ...]]]


def snapshot(db: Path) -> Snapshot:
    """Every table's rows as a set (opened read-only, so taking it changes nothing)."""
    with Store(db, read_only=True) as store:
        tables = list(store.counts())
        return {t: {tuple(map(_hashable, r)) for r in store.query(f"SELECT * FROM {t}")}
                for t in tables}


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def assert_kept(before: Snapshot, after: Snapshot) -> None:
    """Every row present before is still present, unchanged, after."""
    for table, rows in before.items():
        lost = rows - after[table]
        assert not lost, f"{table}: rows lost or changed: {sorted(map(str, lost))[:3]}"
