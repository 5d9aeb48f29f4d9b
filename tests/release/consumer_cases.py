"""Synthetic release records for the consumer conformance tests, and a release folder of them.

Why synthetic: the consumers' scoring is about counts and groupings (9 task types, 4 tries
per sample, window lengths), so the tests need many samples of every type, which the stage
would take minutes to render. The records have exactly the keys a built release gives them
(``tests/release/test_consumers_hub.py`` builds a real one too); videos are empty files,
since no consumer check decodes them.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any, get_args

from needleforge.params import VNBenchTask
from needleforge.release.exports import write_exports
from needleforge.release.file_io import write_jsonl, write_questions_parquet
from needleforge.release.readme import write_readme

OFFICIAL = get_args(VNBenchTask)
LONG = ("ret_edit1_long", "ret_insert1_long", "ord_edit1_long", "ord_insert1_long")
ACT = ("ret_act", "ord_act", "cnt_act")
LETTERS = "ABCD"


def _choice_tries(sample_id: str, task: str, rng: random.Random) -> list[dict[str, Any]]:
    """The 4 rotations of one sample, as :func:`needleforge.vnbench.choice_records` makes."""
    options = [f"{task}-opt{i}-{rng.randrange(10**6)}" for i in range(4)]
    correct = rng.randrange(4)
    duration = float(rng.randint(12, 60))
    needle = float(rng.randint(1, int(duration) - 2))
    out = []
    for t in range(4):
        rotated = options[-t:] + options[:-t] if t else list(options)
        out.append({
            "question_id": sample_id, "family": "vnbench", "task": task,
            "question": f"Which option for {sample_id}?", "video": f"videos/{sample_id}.mp4",
            "duration_s": duration, "bucket": "short", "needle_type": "subtitle",
            "n_needles": 1, "options": rotated, "answer_index": (correct + t) % 4, "try": t,
            "needle_spans": [[needle, needle + 1.0]], "haystack": f"vabc-t0-l{int(duration)}",
            "source_video_ids": ["vabc"]})
    return out


def vnbench_choice_records(*, samples_per_task: int, seed: int = 0, long: bool = True,
                           act: bool = True, skip: tuple[str, ...] = ()
                           ) -> list[dict[str, Any]]:
    """Tries of ``samples_per_task`` samples of every official task (less ``skip``), plus
    Long and Act tasks when asked; sample ids are hex strings of one length, like the stage's.
    """
    rng = random.Random(seed)
    tasks = [t for t in OFFICIAL if t not in skip] + list(LONG if long else ()) + list(
        ACT if act else ())
    records = []
    for task in tasks:
        for _ in range(samples_per_task):
            records += _choice_tries(f"{rng.getrandbits(48):012x}", task, rng)
    return records


def grounding_records(n: int, *, seed: int = 0) -> list[dict[str, Any]]:
    """``n`` NeMo grounding questions, 1-3 target windows of 2-25 s each (so moment_detr's
    "long" range of 30-150 s windows holds none, as in the sample release)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        duration = float(rng.randint(60, 140))
        spans, clock = [], 0.0
        for _ in range(rng.randint(1, 3)):
            start = clock + rng.randint(1, 10)
            end = start + rng.randint(2, 25)
            if end > duration:
                break
            spans.append([start, end])
            clock = end
        spans = spans or [[0.0, 5.0]]
        out.append({
            "question_id": f"q{i:04d}", "family": "nemo", "task": "object_grounding",
            "bucket": "short", "needle_type": "object", "n_needles": len(spans),
            "question": f"When does thing {i} appear?", "video": f"videos/m{i:04d}.mp4",
            "duration_s": duration, "answer_spans": spans, "montage_id": f"m{i:04d}",
            "source_video_ids": ["vabc"]})
    return out


def write_release(root: Path, records: list[dict[str, Any]], *, name: str = "demo") -> Path:
    """A release folder of ``records``: questions, empty videos, exports and README."""
    root.mkdir(parents=True, exist_ok=True)
    write_jsonl(root / "questions.jsonl", records)
    write_questions_parquet(root / "questions.parquet", records)
    (root / "videos").mkdir(exist_ok=True)
    for video in {r["video"] for r in records}:
        (root / video).write_bytes(b"")
    write_exports(root, records, release_name=name)
    write_readme(root, records, name=name, title="needleforge test")
    return root


def load_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))
