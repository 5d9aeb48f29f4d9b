"""Samples as release records: the scorer's multiple-choice tries and VNBench-style JSON.

Both formats hold one record per **try**: the 4 rotations of a sample's options, so that the
correct option is under every letter once (circular evaluation).

- :func:`choice_records` → ``questions.jsonl`` objects read by
  :class:`needleforge.evaluate.records.ChoiceQuestion` (``question_id`` = sample id, shared by
  the tries; ``try`` 0–3; extra keys ``needle_spans`` and ``haystack`` are ignored by it).
- :func:`vnbench_records` → the layout of the VNBench release JSON: ``video``, ``question``,
  ``options``, ``gt`` (answer text), ``gt_option`` (its letter in this try), ``needle_time``
  (start second of every needle in the video), ``length`` (seconds), ``type`` (the task),
  ``try``; plus ``question_id`` so tries can be grouped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from needleforge.media.outputs import write_text_atomic
from needleforge.vnbench.records import LETTERS, N_OPTIONS, VNBenchSample


def choice_records(sample: VNBenchSample) -> list[dict[str, Any]]:
    """The 4 tries of ``sample`` as scorer question records."""
    records = []
    for try_index in range(N_OPTIONS):
        options, answer_index = sample.rotation(try_index)
        records.append({
            "question_id": sample.sample_id, "family": "vnbench", "task": sample.task,
            "question": sample.question, "video": sample.video,
            "duration_s": sample.duration_s, "bucket": sample.bucket,
            "needle_type": sample.needle_type, "n_needles": len(sample.needles),
            "options": list(options), "answer_index": answer_index, "try": try_index,
            "needle_spans": [list(span) for span in sample.needle_spans],
            "haystack": sample.haystack.haystack_id,
            "source_video_id": sample.haystack.video_id,
        })
    return records


def vnbench_records(sample: VNBenchSample) -> list[dict[str, Any]]:
    """The 4 tries of ``sample`` in the VNBench JSON layout."""
    records = []
    for try_index in range(N_OPTIONS):
        options, answer_index = sample.rotation(try_index)
        records.append({
            "video": sample.video, "question": sample.question, "options": list(options),
            "gt": sample.answer, "gt_option": LETTERS[answer_index],
            "needle_time": [start for start, _ in sample.needle_spans],
            "length": sample.duration_s, "type": sample.task, "try": try_index,
            "question_id": sample.sample_id,
        })
    return records


def all_records(samples: Sequence[VNBenchSample]) -> tuple[list[dict[str, Any]],
                                                           list[dict[str, Any]]]:
    """(scorer records, VNBench records) of every sample, sample by sample."""
    questions = [r for s in samples for r in choice_records(s)]
    vnbench = [r for s in samples for r in vnbench_records(s)]
    return questions, vnbench


def write_jsonl(records: Iterable[dict[str, Any]], *, path: Path) -> Path:
    """Write one JSON object per line (UTF-8, keys in order, non-ASCII kept).

    Written to a scratch file and renamed, so a crash never leaves half a file.

    Raises:
        OutputError: the folder cannot be written (read-only, disk full).
    """
    lines = [json.dumps(r, ensure_ascii=False) for r in records]
    return write_text_atomic(path, "".join(f"{line}\n" for line in lines),
                             what="VNBench questions")


def write_vnbench_json(records: Sequence[dict[str, Any]], *, path: Path) -> Path:
    """Write the VNBench-style records as one JSON array (UTF-8, indented), atomically.

    Raises:
        OutputError: the folder cannot be written (read-only, disk full).
    """
    return write_text_atomic(path, json.dumps(list(records), ensure_ascii=False, indent=1)
                             + "\n", what="VNBench records")
