"""Source manifests (YAML or CSV): read into typed rows, one verdict per row; written as YAML.

This module owns the manifest format: :class:`ManifestRow` is its one row type, what
:func:`read_manifest` gives the ingest and what :func:`write_manifest` writes (the studio's
sample manifests, :mod:`needleforge.studio`), so the two sides cannot drift apart.

A manifest lists the videos we may use and the rights under which we may use them. Problems
with the manifest *as a whole* (not UTF-8, not YAML/CSV, wrong top-level shape, unknown
top-level keys) raise :class:`ManifestError` and nothing is ingested. Problems with *one row*
(unknown or missing keys, bad dates, empty licence) become a :class:`RowProblem` so the other
rows still go on.

YAML layout::

    version: 1
    sources:
      - path: clips/bikes.mp4          # relative to the manifest's folder
        program: sample-real
        title: Bikes                   # optional
        rights_holder: Example Studio
        licence_id: CC-BY-3.0
        scope: [benchmark, research]   # uses granted
        valid_until: 2099-12-31        # inclusive
        published_at: 2017-12-01       # optional
        subtitles: clips/bikes.srt     # optional sidecar (SRT or WebVTT)

CSV layout: a header row with the same keys; ``scope`` separated by ``;``. Written manifests
are YAML, with optional ``#`` comment lines above a row (for people: the ingest decides from
the fields).
"""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from needleforge.errors import ManifestError
from needleforge.records import Authorization, RejectionReason

ROW_KEYS = frozenset(
    {"path", "program", "title", "rights_holder", "licence_id", "scope", "valid_until",
     "published_at", "subtitles"}
)
REQUIRED_KEYS = ("path", "program", "rights_holder", "licence_id", "scope", "valid_until")
TOP_LEVEL_KEYS = frozenset({"version", "sources"})
#: The layout version :func:`manifest_text` writes.
VERSION = 1
SUPPORTED_VERSIONS = (VERSION,)


@dataclasses.dataclass(frozen=True, slots=True)
class ManifestRow:
    """A well-formed manifest row (its files are not checked yet).

    ``row`` is its number in the manifest, from 1 in file order: where :func:`read_manifest`
    found it, or where :func:`manifest_text` writes it.
    """

    row: int
    path: str
    program: str
    title: str
    authorization: Authorization
    subtitles: str | None = None

    def to_mapping(self) -> dict[str, Any]:
        """The row's YAML fields in manifest order; optional fields left out when unset."""
        auth = self.authorization
        mapping: dict[str, Any] = {
            "path": self.path,
            "program": self.program,
            "title": self.title,
            "rights_holder": auth.rights_holder,
            "licence_id": auth.licence_id,
            "scope": list(auth.scope),
            "valid_until": auth.valid_until,
        }
        if auth.published_at is not None:
            mapping["published_at"] = auth.published_at
        if self.subtitles is not None:
            mapping["subtitles"] = self.subtitles
        return mapping


@dataclasses.dataclass(frozen=True, slots=True)
class RowProblem:
    """A row that cannot be used, with the reason code and a message naming the field."""

    row: int
    path: str
    reason: RejectionReason
    detail: str


def read_manifest(path: Path) -> list[ManifestRow | RowProblem]:
    """Parse ``path`` (``.yaml``/``.yml`` or ``.csv``) into one entry per row, in file order.

    Rows are numbered from 1 in the order they appear in ``sources`` (YAML) or after the
    header (CSV). Raises :class:`ManifestError` for whole-file problems.
    """
    raw = _read_text(path)
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml"):
        items = _yaml_rows(raw, path)
    elif suffix == ".csv":
        items = _csv_rows(raw, path)
    else:
        raise ManifestError(f"{path}: unknown manifest format {suffix!r} (use .yaml, .yml or .csv)")
    return [_parse_row(i, item) for i, item in enumerate(items, start=1)]


def manifest_text(rows: Sequence[ManifestRow], *, header: str = "",
                  comments: Mapping[int, str] | None = None) -> str:
    """The manifest as YAML text: ``header`` (``#`` lines, each ending in a newline) first,
    then the rows, each with ``comments[row.row]`` (if any) as ``#`` lines above it.

    Raises:
        ValueError: the rows are not numbered 1, 2, … in order (the numbers
            :func:`read_manifest` gives them back).
    """
    numbers = [r.row for r in rows]
    if numbers != list(range(1, len(rows) + 1)):
        raise ValueError(f"manifest rows must be numbered 1..{len(rows)} in order, got {numbers}")
    comments = comments or {}
    parts = [header, f"version: {VERSION}\n", "sources:\n"]
    for row in rows:
        if comment := comments.get(row.row):
            parts.extend(f"  # {line}\n" for line in comment.splitlines())
        dumped = yaml.safe_dump(
            [row.to_mapping()],
            sort_keys=False,
            default_flow_style=None,
            allow_unicode=True,
            width=1000,
        )
        parts.extend(f"  {line}\n" for line in dumped.splitlines())
    return "".join(parts)


def write_manifest(rows: Sequence[ManifestRow], *, path: Path, header: str = "",
                   comments: Mapping[int, str] | None = None) -> None:
    """Write :func:`manifest_text` as UTF-8 (atomically, via a temporary file)."""
    tmp = path.with_name(f"{path.name}.partial")
    tmp.write_text(manifest_text(rows, header=header, comments=comments), encoding="utf-8",
                   newline="\n")
    tmp.replace(path)


def _read_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ManifestError(f"{path}: manifest not found") from None
    except IsADirectoryError:
        raise ManifestError(f"{path}: is a directory, not a manifest file") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise ManifestError(
            f"{path}: not UTF-8 text (byte 0x{data[err.start]:02x} on line {line}); "
            "save the manifest as UTF-8"
        ) from None


def _yaml_rows(text: str, path: Path) -> list[Any]:
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ManifestError(f"{path}: not valid YAML: {err}") from None
    if not isinstance(doc, dict):
        raise ManifestError(f"{path}: expected a mapping with 'version' and 'sources'")
    unknown = sorted(str(k) for k in set(doc) - TOP_LEVEL_KEYS)
    if unknown:
        raise ManifestError(
            f"{path}: unknown top-level key(s) {unknown}; allowed: {sorted(TOP_LEVEL_KEYS)}"
        )
    version = doc.get("version", 1)
    if version not in SUPPORTED_VERSIONS:
        raise ManifestError(
            f"{path}: version = {version!r} unsupported; known: {SUPPORTED_VERSIONS}"
        )
    sources = doc.get("sources")
    if not isinstance(sources, list):
        raise ManifestError(f"{path}: 'sources' must be a list of rows")
    return sources


def _csv_rows(text: str, path: Path) -> list[Any]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    if not reader.fieldnames:
        raise ManifestError(f"{path}: CSV has no header row")
    header = [h.strip() for h in reader.fieldnames]
    unknown = sorted(set(header) - ROW_KEYS)
    if unknown:
        raise ManifestError(f"{path}: unknown column(s) {unknown}; allowed: {sorted(ROW_KEYS)}")
    rows: list[Any] = []
    for record in reader:
        if None in record:
            rows.append({"__error__": "has more cells than the header"})
            continue
        cleaned = {k.strip(): (v.strip() if isinstance(v, str) else v) for k, v in record.items()}
        row = {k: v for k, v in cleaned.items() if v not in ("", None)}
        if "scope" in row:
            row["scope"] = [s.strip() for s in str(row["scope"]).split(";") if s.strip()]
        rows.append(row)
    return rows


def _parse_row(index: int, item: Any) -> ManifestRow | RowProblem:
    if not isinstance(item, dict):
        return RowProblem(index, "", "invalid_row", f"row {index}: expected a mapping of keys")
    source = str(item.get("path", "")).strip()

    def problem(reason: RejectionReason, message: str) -> RowProblem:
        return RowProblem(index, source, reason, f"row {index} ({source or 'no path'}): {message}")

    if "__error__" in item:
        return problem("invalid_row", str(item["__error__"]))
    unknown = sorted(str(k) for k in set(item) - ROW_KEYS)
    if unknown:
        return problem("invalid_row", f"unknown key(s) {unknown}; allowed: {sorted(ROW_KEYS)}")
    missing = [k for k in REQUIRED_KEYS if item.get(k) in (None, "", [])]
    if missing:
        reason: RejectionReason = "unauthorized" if set(missing) & {
            "rights_holder", "licence_id", "scope", "valid_until"} else "invalid_row"
        return problem(reason, f"missing required key(s) {missing}")
    try:
        valid_until = _date(item["valid_until"], "valid_until")
        published_at = _date(item["published_at"], "published_at") if item.get(
            "published_at") else None
        scope = _scope(item["scope"])
    except ValueError as err:
        return problem("invalid_row", str(err))
    try:
        auth = Authorization(
            rights_holder=str(item["rights_holder"]).strip(),
            licence_id=str(item["licence_id"]).strip(),
            scope=scope,
            valid_until=valid_until,
            published_at=published_at,
        )
    except ValueError as err:
        return problem("unauthorized", str(err))
    subtitles = item.get("subtitles")
    return ManifestRow(
        row=index,
        path=source,
        program=str(item["program"]).strip(),
        title=str(item.get("title") or Path(source).stem),
        authorization=auth,
        subtitles=str(subtitles).strip() if subtitles else None,
    )


def _scope(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        raise ValueError(f"scope = {value!r} must be a list of strings")
    return tuple(s.strip() for s in value)


def _date(value: Any, field: str) -> dt.date:
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    try:
        return dt.date.fromisoformat(str(value).strip())
    except ValueError:
        raise ValueError(f"{field} = {value!r} is not a date (YYYY-MM-DD)") from None
