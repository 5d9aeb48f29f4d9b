"""VLMEvalKit exports: a multiple-choice TSV, a grounding TSV and the dataset module using them.

Layout and conventions are owned by the shipped module
(:mod:`needleforge.release.vlmevalkit_dataset`, copied as
``exports/vlmevalkit/needleforge_vlmevalkit.py``); this module only writes its files.

Why two TSVs: VLMEvalKit's prompt and scoring code assumes one kind of question per dataset,
and its pandas loading turns a column that is empty on some rows into floats (a ``try`` of
``1.0``, NaN on grounding rows). Each file has only the columns its rows all fill.
"""

from __future__ import annotations

import csv
import importlib.resources
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from needleforge.errors import ReleaseError
from needleforge.records.questions import vnbench_group
from needleforge.release.file_io import Record
from needleforge.release.vlmevalkit_dataset import (
    CIRCULAR_OFFSET,
    EXPORT_DIR,
    GROUNDING_COLUMNS,
    GROUNDING_TSV,
    LETTERS,
    MCQ_COLUMNS,
    MCQ_TSV,
)

MODULE_FILE = f"{EXPORT_DIR}/needleforge_vlmevalkit.py"


def _tsv(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter="\t", lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(rows)
    return buf.getvalue()


def _video(record: Record) -> tuple[str, str]:
    """(``video``, ``video_path``): the release path without and with its extension."""
    path = str(record["video"])
    return str(Path(path).with_suffix("")), path


def mcq_tsv(records: Sequence[Record]) -> str:
    """Every multiple-choice try as a row (columns ``MCQ_COLUMNS``), grouped by sample.

    Samples are numbered in order of first appearance; try ``t`` of sample ``k`` has
    ``index = k + t * CIRCULAR_OFFSET`` and ``g_index = k``.

    Raises:
        ReleaseError: more samples than the circular index convention can number.
    """
    samples: dict[str, int] = {}
    rows: list[list[Any]] = []
    for r in records:
        if "options" not in r:
            continue
        k = samples.setdefault(str(r["question_id"]), len(samples))
        if k >= CIRCULAR_OFFSET:
            raise ReleaseError(f"{len(samples)} multiple-choice samples: VLMEvalKit's circular "
                               f"index holds fewer than {CIRCULAR_OFFSET}")
        video, video_path = _video(r)
        options = list(r["options"])
        rows.append([
            k + int(r["try"]) * CIRCULAR_OFFSET, k, r["question_id"], r["try"], video,
            video_path, r["question"], *options, LETTERS[int(r["answer_index"])], r["task"],
            vnbench_group(str(r["task"])) or "other", r["bucket"], r["duration_s"],
            r["needle_type"], r["n_needles"]])
    rows.sort(key=lambda row: row[0])
    return _tsv(MCQ_COLUMNS, rows)


def grounding_tsv(records: Sequence[Record]) -> str:
    """Every grounding question as a row (columns ``GROUNDING_COLUMNS``)."""
    rows: list[list[Any]] = []
    for r in records:
        if "answer_spans" not in r:
            continue
        video, video_path = _video(r)
        rows.append([len(rows), r["question_id"], video, video_path, r["question"],
                     json.dumps(r["answer_spans"]), r["task"], r["bucket"], r["duration_s"],
                     r["needle_type"], r["n_needles"]])
    return _tsv(GROUNDING_COLUMNS, rows)


def module_source() -> str:
    """The text of the dataset module shipped as ``exports/vlmevalkit/``."""
    return importlib.resources.files("needleforge.release").joinpath(
        "vlmevalkit_dataset.py").read_text(encoding="utf-8")


def write_vlmevalkit(root: Path, records: Sequence[Record]) -> list[str]:
    """Write the TSVs that have rows, and the module when any does; the paths written."""
    out = root / EXPORT_DIR
    files = {MCQ_TSV: mcq_tsv(records) if any("options" in r for r in records) else None,
             GROUNDING_TSV: grounding_tsv(records)
             if any("answer_spans" in r for r in records) else None}
    written = []
    for name, text in files.items():
        if text is not None:
            out.mkdir(parents=True, exist_ok=True)
            (out / name).write_text(text, encoding="utf-8")
            written.append(f"{EXPORT_DIR}/{name}")
    if written:
        (root / MODULE_FILE).write_text(module_source(), encoding="utf-8")
        written.append(MODULE_FILE)
    return written
