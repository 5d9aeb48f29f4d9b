"""The VNBench annotation files of a release, laid out so VideoNIAH's own scripts score them.

Read from ``joez17/VideoNIAH`` (commit 8193a3b, 2025-03-09):

- ``llava_examples/evaluation_utils.py`` groups a result file's tries by ``video_path`` (the
  annotation's ``video``), counts a sample when its 4 tries are right, then **sums** the
  accuracy of every type whose name contains ``ret``, ``ord`` or ``cnt`` and divides each sum
  by 3; it also reads ``ret_insert1`` and ``ret_insert2`` by name (a missing type is a
  ``KeyError``). So its file must hold exactly the 9 official types: Long (``*_long``) and
  Act (``*_act``) types would be summed in, giving 133 % for perfect answers.
- ``evaluation/eval.py`` groups by ``question_id[:-2]`` within each type and averages the
  types present, so our ids are ``<sample>_<try>`` (:func:`needleforge.vnbench.vnbench_entry`).

Hence three files, each in the same layout: ``exports/vnbench.json`` (the 9 official types,
what both scripts score), ``exports/vnbench_long.json`` and ``exports/vnbench_act.json``
(each scored by ``eval.py`` on its own). A release that ships any VNBench try must hold all 9
official types, every sample with its 4 tries, and one video per sample, or it is refused.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, get_args

from needleforge.errors import ReleaseError
from needleforge.params import VNBenchTask
from needleforge.records.questions import N_TRIES
from needleforge.release.file_io import Record, write_json
from needleforge.vnbench import VNBenchError, suite_of, vnbench_entry

#: The 9 VNBench task types VideoNIAH's evaluation expects (owner: ``config.VNBenchTask``).
OFFICIAL_TASKS: tuple[str, ...] = get_args(VNBenchTask)
#: Release path of each suite's file.
FILES: Mapping[str, str] = {"main": "exports/vnbench.json", "long": "exports/vnbench_long.json",
                            "act": "exports/vnbench_act.json"}
_SHOWN = 5


def _choices(records: Sequence[Record]) -> list[Record]:
    return [r for r in records if r.get("family") == "vnbench" and "options" in r]


def _shown(items: Sequence[str]) -> str:
    more = f" and {len(items) - _SHOWN} more" if len(items) > _SHOWN else ""
    return ", ".join(items[:_SHOWN]) + more


def check_vnbench_release(records: Sequence[Record]) -> None:
    """Refuse a release whose VNBench tries VideoNIAH's scripts would miscount.

    Why before anything is written: the build checks its inputs first (see
    :mod:`needleforge.release.build`), and a set without some official type cannot be scored
    by VNBench's own ``evaluation_utils.py`` at all.

    Raises:
        ReleaseError: the release ships VNBench tries but lacks one of the 9 official types
            (named), a sample has not exactly the tries 0–3, a video is shared by two samples,
            or a task is not a VNBench task.
    """
    choices = _choices(records)
    if not choices:
        return
    for r in choices:
        try:
            suite_of(str(r["task"]))
        except VNBenchError as exc:
            raise ReleaseError(f"VNBench sample {r['question_id']!r}: {exc}") from exc
    missing = [t for t in OFFICIAL_TASKS if t not in {r["task"] for r in choices}]
    if missing:
        raise ReleaseError(
            f"the release ships VNBench tries but lacks the official task type(s) "
            f"{', '.join(missing)}; VNBench is scored over all 9 ({', '.join(OFFICIAL_TASKS)}) "
            "and its evaluation fails without them: generate them (vnbench.tasks) or leave "
            "VNBench out of this release")
    tries: dict[str, list[int]] = defaultdict(list)
    samples_of_video: dict[str, set[str]] = defaultdict(set)
    for r in choices:
        tries[str(r["question_id"])].append(int(r["try"]))
        samples_of_video[str(r["video"])].add(str(r["question_id"]))
    broken = sorted(s for s, t in tries.items() if sorted(t) != list(range(N_TRIES)))
    if broken:
        raise ReleaseError(f"VNBench samples without exactly the tries 0..{N_TRIES - 1}: "
                           f"{_shown(broken)}")
    shared = sorted(v for v, s in samples_of_video.items() if len(s) > 1)
    if shared:
        raise ReleaseError(f"VNBench videos shared by several samples (VNBench groups tries "
                           f"by video): {_shown(shared)}")


def vnbench_files(records: Sequence[Record]) -> dict[str, list[dict[str, Any]]]:
    """Release path → VNBench entries of that file, in record order; only non-empty files.

    Raises:
        ReleaseError: see :func:`check_vnbench_release`.
    """
    check_vnbench_release(records)
    out: dict[str, list[dict[str, Any]]] = {}
    for r in _choices(records):
        out.setdefault(FILES[suite_of(str(r["task"]))], []).append(vnbench_entry(r))
    return {path: out[path] for path in FILES.values() if path in out}


def write_vnbench_files(root: Path, records: Sequence[Record]) -> list[str]:
    """Write :func:`vnbench_files` under ``root``; returns the paths written.

    Raises:
        ReleaseError: see :func:`check_vnbench_release`.
    """
    files = vnbench_files(records)
    for rel, entries in files.items():
        write_json(root / rel, entries)
    return list(files)
