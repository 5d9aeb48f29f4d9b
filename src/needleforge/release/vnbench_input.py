"""The VNBench set a release ships beside the NeMo questions (``needleforge vnbench`` output).

The vnbench stage writes a folder holding ``questions.jsonl`` (scorer records, family
``vnbench``, 4 rotations per sample) and one ``<sample_id>.mp4`` per sample. A release takes
both: each record's ``video`` is rewritten to where the release keeps it
(``videos/<file>``), and ``source_video_ids`` names the ingested video its haystack was cut
from, so authorization and contamination treat VNBench questions like NeMo ones.

Why the source comes from ``haystack``: VNBench haystack ids are ``<video_id>-t<start>-l<len>``
(:mod:`needleforge.vnbench.plan`) and video ids never contain ``-``; the id is then checked
against the store, so a set built from another store is refused instead of shipped unchecked.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from needleforge.errors import ReleaseError
from needleforge.records import Video
from needleforge.records.questions import (
    ChoiceQuestion,
    QuestionRecordError,
    check_extra,
    parse_question,
)
from needleforge.release.answers import seconds

QUESTIONS_FILE = "questions.jsonl"
VIDEO_DIR = "videos"
_MAX_LISTED = 10


@dataclasses.dataclass(frozen=True, slots=True)
class VNBenchInput:
    """VNBench tries ready to ship, sorted by (question_id, try).

    ``records`` are release records (``video`` relative to the release root);
    ``videos`` maps each release video path to the stage's file; ``source_of`` maps each
    sample (``question_id``) to its haystack's source video id.
    """

    records: tuple[dict[str, Any], ...]
    videos: Mapping[str, Path]
    source_of: Mapping[str, str]


def _read_lines(path: Path) -> list[tuple[int, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ReleaseError(f"VNBench folder {path.parent}: no {path.name} (run needleforge "
                           "vnbench first)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ReleaseError(f"cannot read {path}: {exc}") from exc
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise ReleaseError(f"{path}:{number}: not valid JSON ({exc.msg})") from exc
    return out


def _source_id(extra: Mapping[str, Any], *, where: str, known: Mapping[str, Video]) -> str:
    haystack = extra.get("haystack")
    if not isinstance(haystack, str) or not haystack.strip():
        raise ReleaseError(f"{where}: no haystack id, so its source video is unknown")
    # Sets built since the stage wrote ``source_video_id`` say it; older ones only in the id.
    stated = extra.get("source_video_id")
    video_id = stated if isinstance(stated, str) and stated else haystack.split("-", 1)[0]
    if video_id not in known:
        raise ReleaseError(f"{where}: haystack {haystack!r} comes from video {video_id!r}, "
                           "which is not in the store (was the VNBench set built from "
                           "another store?)")
    return video_id


def _read_try(raw: Any, *, number: int, where: str) -> ChoiceQuestion:
    """One line of the stage's file as a VNBench try (its extra columns checked too)."""
    try:
        row = parse_question(raw, line=number)
        check_extra(row.extra)
    except QuestionRecordError as exc:
        raise ReleaseError(f"{where}: not a question record ({exc})") from exc
    if row.family != "vnbench" or not isinstance(row, ChoiceQuestion):
        raise ReleaseError(f"{where}: family = {row.family!r} is not a VNBench "
                           "multiple-choice record")
    return row


def _release_record(row: ChoiceQuestion, *, video: str, source: str) -> dict[str, Any]:
    """The row as shipped: stage columns in order, times rounded, the video and source set."""
    extra = dict(row.extra)
    extra.pop("source_video_id", None)  # shipped as the list every family has
    if isinstance(extra.get("needle_spans"), list):
        extra["needle_spans"] = [[seconds(s), seconds(e)] for s, e in extra["needle_spans"]]
    extra["source_video_ids"] = [source]
    shipped = dataclasses.replace(row, video=video, duration_s=seconds(float(row.duration_s)),
                                  extra=extra)
    return shipped.to_dict()


def read_vnbench(folder: Path, *, videos: Mapping[str, Video]) -> VNBenchInput:
    """Read the VNBench stage's ``folder`` for a release built from a store with ``videos``.

    Raises:
        ReleaseError: the folder or its ``questions.jsonl`` is missing or unreadable; a line is
            not JSON, not a family-``vnbench`` multiple-choice record the scorer accepts, or
            repeats a (question_id, try); a sample's video file is missing or not a plain
            file name; a haystack's source video is not in the store. The message names the
            file and line, or the sample.
    """
    if not folder.is_dir():
        raise ReleaseError(f"VNBench folder {folder} does not exist")
    path = folder / QUESTIONS_FILE
    records: dict[tuple[str, int], dict[str, Any]] = {}
    files: dict[str, Path] = {}
    source_of: dict[str, str] = {}
    missing: set[str] = set()
    for number, raw in _read_lines(path):
        where = f"{path}:{number}"
        row = _read_try(raw, number=number, where=where)
        name = row.video
        if PurePosixPath(name).name != name or name in {"", ".", ".."}:
            raise ReleaseError(f"{where}: video {name!r} must be a file name in {folder}")
        if not (folder / name).is_file():
            missing.add(name)
        key = row.key
        if key in records:
            raise ReleaseError(f"{where}: sample {key[0]} try {key[1]} appears twice")
        source = _source_id(row.extra, where=where, known=videos)
        release_video = f"{VIDEO_DIR}/{name}"
        records[key] = _release_record(row, video=release_video, source=source)
        files[release_video] = folder / name
        source_of[key[0]] = source
    if missing:
        shown = sorted(missing)
        raise ReleaseError(f"VNBench folder {folder}: {len(shown)} sample video(s) missing: "
                           f"{', '.join(shown[:_MAX_LISTED])}")
    ordered = tuple(records[k] for k in sorted(records))
    return VNBenchInput(records=ordered, videos=dict(sorted(files.items())),
                        source_of=source_of)
