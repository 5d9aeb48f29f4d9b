"""The ingest stage: the authorized rows of a manifest probed, hashed and stored; the others
refused, and the refusals stored with their reasons."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from needleforge.ingest import IngestResult, ingest
from needleforge.params import Params
from needleforge.records.failures import StageFailure, from_rejection
from needleforge.store import Store


@dataclasses.dataclass(frozen=True, slots=True)
class IngestOutcome:
    """What an ingest did: its result, the rows new to the store, the store's counts after it,
    and each refused row as a failure (``new`` False for one the store held already)."""

    result: IngestResult
    new_videos: int
    new_rejections: int
    counts: dict[str, int]
    failures: tuple[StageFailure, ...]


def ingest_store(*, manifest: Path, db: Path, media_dir: Path, params: Params) -> IngestOutcome:
    """Ingest ``manifest``'s rows into ``db``, their media into ``media_dir``.

    Raises:
        IngestError: the manifest cannot be read. StoreError: ``db`` is not a usable store.
    """
    return record_ingest(db=db, result=ingest(manifest, media_dir=media_dir,
                                              params=params.ingest))


def record_ingest(*, db: Path, result: IngestResult) -> IngestOutcome:
    """Store an ingest's videos and refusals (one transaction); the ingest flow calls this
    once its rows, processed as tasks, are gathered.

    Raises:
        StoreError: ``db`` is not a usable store.
    """
    with Store(db) as store:
        known = {r.rejection_id for r in store.rejections()}
        new_videos, new_refusals = store.record_ingest(result.videos, result.rejections)
        counts = store.counts()
    failures = tuple(from_rejection(r, new=r.rejection_id not in known)
                     for r in result.rejections)
    return IngestOutcome(result, new_videos, new_refusals, counts, failures)
