"""Samples as release records: the scorer's multiple-choice tries and VNBench-style JSON.

Both formats hold one record per **try**: the 4 rotations of a sample's options, so that the
correct option is under every letter once (circular evaluation).

- :func:`choice_records` → ``questions.jsonl`` rows, built as
  :class:`needleforge.records.questions.ChoiceQuestion` (``question_id`` = sample id, shared by
  the tries; ``try`` 0–3; extra columns ``needle_spans``, ``haystack`` and
  ``source_video_id``, which the scorer ignores).
- :func:`vnbench_entry` → one try in the layout of the VNBench annotation JSON, as VideoNIAH's
  own scripts read it (``joez17/VideoNIAH``: ``llava_examples/model_video_niah.py`` reads
  ``video``, ``question``, ``options``, ``gt`` (the answer text), ``type`` and ``try``;
  ``evaluation/eval.py`` groups the 4 tries of a sample by ``question_id[:-2]``, so the id
  is ``<sample>_<try>``). We add ``sample_id`` (the sample, in a field of its own),
  ``gt_option`` (the letter in this try), ``needle_time`` (start second of every needle) and
  ``length`` (seconds). Release records and stage samples go through the same function, so the
  layout has one owner.
- :func:`suite_of` tells which file of a release a task belongs in: VNBench's own evaluation
  sums every task whose name contains ``ret``, ``ord`` or ``cnt``, so Long and Act tries ship
  in files of their own (see :mod:`needleforge.release.vnbench_files`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeAlias

from needleforge.media.outputs import write_text_atomic
from needleforge.records.questions import LETTERS, N_TRIES, ChoiceQuestion
from needleforge.vnbench.records import VNBenchError, VNBenchSample
from needleforge.vnbench.subtasks import ACT_SUBTASKS, LONG_SUBTASKS, SUBTASKS

#: Which release file a VNBench task ships in: the 9 official tasks, Long, or Act.
Suite: TypeAlias = Literal["main", "long", "act"]


def choice_records(sample: VNBenchSample) -> list[dict[str, Any]]:
    """The 4 tries of ``sample`` as release question rows.

    Raises:
        QuestionRecordError: a try the scorer would refuse (a task outside the VNBench
            groups); never for a sample the stage made.
    """
    records = []
    for try_index in range(N_TRIES):
        options, answer_index = sample.rotation(try_index)
        row = ChoiceQuestion(
            question_id=sample.sample_id, family="vnbench", task=sample.task,
            question=sample.question, video=sample.video, duration_s=sample.duration_s,
            bucket=sample.bucket, needle_type=sample.needle_type,
            n_needles=len(sample.needles), options=options, answer_index=answer_index,
            try_index=try_index,
            extra={"needle_spans": [list(span) for span in sample.needle_spans],
                   "haystack": sample.haystack.haystack_id,
                   "source_video_id": sample.haystack.video_id})
        records.append(row.to_dict())
    return records


def vnbench_entry(record: Mapping[str, Any]) -> dict[str, Any]:
    """One try (a :func:`choice_records` or release record) in the VNBench JSON layout.

    Raises:
        VNBenchError: ``try`` is not a single digit 0–3 (``<sample>_<try>`` must end in two
            characters for VNBench's ``question_id[:-2]`` grouping).
    """
    try_index = record["try"]
    if type(try_index) is not int or not 0 <= try_index < N_TRIES:
        raise VNBenchError(f"sample {record['question_id']!r}: try = {try_index!r} must be "
                           f"an integer in 0..{N_TRIES - 1}")
    options = list(record["options"])
    answer = int(record["answer_index"])
    return {
        "question_id": f"{record['question_id']}_{try_index}",
        "sample_id": record["question_id"], "video": record["video"],
        "question": record["question"], "options": options, "gt": options[answer],
        "gt_option": LETTERS[answer],
        "needle_time": [span[0] for span in record.get("needle_spans", [])],
        "length": record["duration_s"], "type": record["task"], "try": try_index,
    }


def vnbench_records(sample: VNBenchSample) -> list[dict[str, Any]]:
    """The 4 tries of ``sample`` in the VNBench JSON layout."""
    return [vnbench_entry(r) for r in choice_records(sample)]


def suite_of(task: str) -> Suite:
    """``main`` for the 9 official VNBench tasks, ``long`` or ``act`` for the extensions.

    Raises:
        VNBenchError: an unknown task name.
    """
    if task in SUBTASKS:
        return "main"
    if task in LONG_SUBTASKS:
        return "long"
    if task in ACT_SUBTASKS:
        return "act"
    known = sorted({*SUBTASKS, *LONG_SUBTASKS, *ACT_SUBTASKS})
    raise VNBenchError(f"task {task!r} is not a VNBench task ({', '.join(known)})")


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
