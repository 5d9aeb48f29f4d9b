"""Writing release files byte-for-byte reproducibly: JSON, JSONL, Parquet, linked videos.

Same records in, same bytes out: keys keep the order the records were built in, floats are
written by Python's shortest round-trip repr, text is UTF-8 with ``\\n`` line ends, and Parquet
gets explicit column types (never inferred from the first row) and no pandas metadata.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
import pyarrow.parquet as pq

from needleforge.errors import ReleaseError

_CHUNK = 1 << 20

#: Arrow types of the question columns, so a Parquet file of the same records always has the
#: same schema, and Hugging Face ``datasets`` maps each to a plain feature (spans become
#: ``Sequence(Sequence(float64))``). Columns absent from every record are not written.
QUESTION_TYPES: Mapping[str, pa.DataType] = {
    "question_id": pa.string(), "family": pa.string(), "task": pa.string(),
    "bucket": pa.string(), "needle_type": pa.string(), "n_needles": pa.int64(),
    "question": pa.string(), "video": pa.string(), "duration_s": pa.float64(),
    "answer_spans": pa.list_(pa.list_(pa.float64())), "options": pa.list_(pa.string()),
    "answer_index": pa.int64(), "try": pa.int64(),
    "needle_time": pa.list_(pa.list_(pa.float64())),
    "needle_spans": pa.list_(pa.list_(pa.float64())), "haystack": pa.string(),
    "montage_id": pa.string(), "target_scene_id": pa.string(),
    "target_object_id": pa.string(), "description": pa.string(), "template_id": pa.string(),
    "backend": pa.string(), "model_version": pa.string(), "verified_by": pa.list_(pa.string()),
    "source_video_ids": pa.list_(pa.string()),
}


def json_line(obj: Any) -> str:
    """One compact JSON line (no NaN: a NaN in a release is a bug, not data)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def write_jsonl(path: Path, records: Iterable[Mapping[str, Any]]) -> int:
    """Write one JSON object per line; returns how many."""
    lines = [json_line(r) for r in records]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return len(lines)


def write_json(path: Path, obj: Any) -> None:
    """Pretty JSON (2-space indent, key order kept) with a final newline."""
    text = json.dumps(obj, ensure_ascii=False, indent=2, allow_nan=False)
    path.write_text(text + "\n", encoding="utf-8")


def write_questions_parquet(path: Path, records: Sequence[Mapping[str, Any]]) -> None:
    """Write question records as one Parquet table with the types of :data:`QUESTION_TYPES`.

    Raises:
        ReleaseError: a record has a key with no declared type (it would be guessed).
    """
    present = {k for r in records for k in r}
    unknown = sorted(present - set(QUESTION_TYPES))
    if unknown:
        raise ReleaseError(f"question keys {unknown} have no Parquet type; add them to "
                           "QUESTION_TYPES")
    names = [k for k in QUESTION_TYPES if k in present]
    schema = pa.schema([pa.field(k, QUESTION_TYPES[k]) for k in names])
    columns = {k: [r.get(k) for r in records] for k in names}
    table = pa.Table.from_pydict(columns, schema=schema)
    pq.write_table(table, path, compression="zstd")


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks (videos can be large)."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def place_file(src: Path, dst: Path, *, mode: Literal["hardlink", "copy"]) -> None:
    """Put ``src`` at ``dst``: a hard link when asked and possible, else a byte copy.

    Why fall back: a hard link cannot cross file systems (render cache on another disk) and
    some file systems refuse links; a copy is always correct, only slower.

    Raises:
        ReleaseError: ``src`` cannot be read or ``dst`` cannot be written.
    """
    if mode == "hardlink":
        try:
            os.link(src, dst)
            return
        except OSError:
            pass  # not fatal: copy below
    try:
        shutil.copyfile(src, dst)
    except OSError as exc:
        raise ReleaseError(f"cannot copy {src} to {dst}: {exc}") from exc


def list_files(root: Path) -> list[str]:
    """Every file under ``root`` as a POSIX path relative to it, sorted."""
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
