"""Authorized ingest: manifests, authorization, probing, hashing, content-addressed storage."""

from needleforge.ingest.run import (
    Accepted,
    IngestResult,
    RowJob,
    finish_ingest,
    ingest,
    plan_ingest,
    process_row,
)
from needleforge.ingest.source_manifest import ManifestRow, RowProblem, read_manifest

__all__ = [
    "Accepted",
    "IngestResult",
    "ManifestRow",
    "RowJob",
    "RowProblem",
    "finish_ingest",
    "ingest",
    "plan_ingest",
    "process_row",
    "read_manifest",
]
