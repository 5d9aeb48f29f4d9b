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
from needleforge.records.questions import QuestionRecordError, parquet_schema

_CHUNK = 1 << 20

#: One release row as the release's JSON files hold it (a question of questions.jsonl, a
#: montage of montages.jsonl): the type every release module reads rows as.
Record = Mapping[str, Any]


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
    """Write question records as one Parquet table, typed by the release question format
    (:func:`needleforge.records.questions.parquet_schema`: explicit types, so the same records
    always give the same schema and Hugging Face ``datasets`` maps each column to a plain
    feature; columns absent from every record are not written).

    Raises:
        ReleaseError: a record has a key with no declared type (it would be guessed).
    """
    try:
        schema = parquet_schema(records)
    except QuestionRecordError as exc:
        raise ReleaseError(str(exc)) from exc
    columns = {k: [r.get(k) for r in records] for k in schema.names}
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
