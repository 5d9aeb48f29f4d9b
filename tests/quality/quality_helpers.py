"""Small stores and releases for the quality gate tests: clean, so each test breaks one rule.

The store is written with plain SQL rather than the records' constructors because the tests
need rows the records would refuse (a scene gap, an overlapping needle, an expired licence).
Every time is chosen so the clean data passes every suite with no tolerance to spare.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import itertools
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from needleforge.store import Store

CHECK_DAY = dt.date(2030, 6, 1)


def _sha(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()


def _insert(store: Store, table: str, rows: Sequence[dict[str, Any]]) -> None:
    for row in rows:
        columns = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        store.query(f"INSERT INTO {table} ({columns}) VALUES ({marks})", list(row.values()))


def _video(name: str, duration_s: float) -> dict[str, Any]:
    sha = _sha(name)
    return {
        "video_id": f"v{sha[:16]}", "sha256": sha, "program": "studio-a", "title": name,
        "source_path": f"{name}.mp4", "stored_path": f"store/{sha}.mp4", "size_bytes": 1000,
        "duration_s": duration_s, "fps": 25.0, "width": 640, "height": 360,
        "video_codec": "h264", "rotation_deg": 0, "n_frames": int(duration_s * 25),
        "container": "mp4", "rights_holder": "studio", "licence_id": "lic-1",
        "scope": ["benchmark", "research"], "valid_until": dt.date(2099, 12, 31),
        "ingested_at": dt.datetime(2030, 1, 1),
    }


def _scenes(video_id: str, bounds: Sequence[float]) -> list[dict[str, Any]]:
    return [{"scene_id": f"{video_id}-s{i:04d}", "video_id": video_id, "idx": i,
             "start_s": start, "end_s": end, "n_frames": int((end - start) * 25),
             "subtitle_text": ""}
            for i, (start, end) in enumerate(itertools.pairwise(bounds))]


def _segment(montage_id: str, position: int, start: float, length: float, *, scene_id: str,
             video_id: str, role: str = "negative", needle: int | None = None) -> dict[str, Any]:
    return {"montage_id": montage_id, "position": position, "video_id": video_id,
            "scene_id": scene_id, "src_start_s": 0.0, "src_end_s": length,
            "montage_start_s": start, "role": role, "needle_index": needle,
            "target_id": scene_id if role == "target" else None}


def build_clean_store(path: Path) -> Path:
    """Two videos tiled by scenes, tracked objects, two montages, verified questions.

    Montage ``m-short`` (60 s) holds one target; ``m-multi`` (40 s) holds one target split
    into two 3 s pieces (a multi-needle question).
    """
    a, b = _video("a", 30.0), _video("b", 20.0)
    va, vb = a["video_id"], b["video_id"]
    scenes = _scenes(va, [0.0, 10.0, 18.5, 30.0]) + _scenes(vb, [0.0, 7.25, 20.0])
    s0 = scenes[0]["scene_id"]
    objects = [{
        "object_id": f"{s0}-o{i:02d}", "scene_id": s0, "idx": i, "tag": "car", "start_s": 1.0,
        "end_s": 9.0, "visible_s": 8.0 - i, "mean_area_frac": 0.1, "mean_score": 0.9,
        "referring_expression": "the red car on the left", "colour": "red",
        "position": "left", "size_rank": 0, "attributes": "{}", "backend": "embedded",
        "model_version": "1",
    } for i in range(2)]
    neg = {"scene_id": scenes[1]["scene_id"], "video_id": va}
    tgt = {"scene_id": s0, "video_id": va}
    segments = [
        _segment("m-short", 0, 0.0, 25.0, **neg),
        _segment("m-short", 1, 25.0, 10.0, role="target", needle=0, **tgt),
        _segment("m-short", 2, 35.0, 25.0, **neg),
        _segment("m-multi", 0, 0.0, 3.0, role="target", needle=0, **tgt),
        _segment("m-multi", 1, 3.0, 30.0, **neg),
        _segment("m-multi", 2, 33.0, 3.0, role="target", needle=1, **tgt),
        _segment("m-multi", 3, 36.0, 4.0, **neg),
    ]
    montages = [
        {"montage_id": "m-short", "bucket": "short", "duration_s": 60.0, "n_segments": 3,
         "seed": 0},
        {"montage_id": "m-multi", "bucket": "short", "duration_s": 40.0, "n_segments": 4,
         "seed": 0},
    ]
    questions = [{
        "question_id": f"q-{m}", "montage_id": m, "needle_type": "scene",
        "target_scene_id": s0, "target_object_id": None, "description": "a street at night",
        "text": "When does the street at night appear?", "template_id": "t1",
        "backend": "embedded", "model_version": "1"} for m in ("m-short", "m-multi")]
    verdicts = [{"question_id": q["question_id"], "verifier": "embedded", "model_version": "1",
                 "passed": True, "reason": "unique to the target"} for q in questions]
    with Store(path) as store:
        for table, rows in (("videos", [a, b]), ("scenes", scenes), ("objects", objects),
                            ("montages", montages), ("montage_segments", segments),
                            ("questions", questions), ("verifications", verdicts)):
            _insert(store, table, rows)
    return path


def copy_db(clean: Path, *, into: Path) -> Path:
    """A private copy of a (closed) store, so a test can break it without touching others."""
    target = into / f"copy-{clean.name}"
    shutil.copyfile(clean, target)
    return target


def sql(path: Path, *statements: str) -> Path:
    """Apply SQL statements to a store (how a test breaks exactly one rule)."""
    with Store(path) as store:
        for statement in statements:
            store.query(statement)
    return path


def grounding(qid: str, spans: Sequence[Sequence[float]], **extra: Any) -> dict[str, Any]:
    """A valid NeMo grounding record (overrides via ``extra``)."""
    record: dict[str, Any] = {
        "question_id": qid, "family": "nemo", "task": "scene_grounding",
        "question": "When does the street at night appear?", "video": f"videos/{qid}.mp4",
        "duration_s": 60.0, "bucket": "short", "needle_type": "scene",
        "n_needles": len(spans), "answer_spans": [list(s) for s in spans]}
    record.update(extra)
    return record


def choice_tries(qid: str, options: Sequence[str] = ("Alice", "Bob", "Carol", "Dave"),
                 answer: int = 1) -> list[dict[str, Any]]:
    """The 4 rotations of one VNBench sample: try t shifts the options left by t."""
    return [{
        "question_id": qid, "family": "vnbench", "task": "ret_edit1",
        "question": "What is the secret word?", "video": f"videos/{qid}.mp4",
        "duration_s": 60.0, "bucket": "short", "needle_type": "subtitle", "n_needles": 1,
        "options": [options[(i + t) % 4] for i in range(4)], "answer_index": (answer - t) % 4,
        "try": t} for t in range(4)]


def clean_release() -> list[dict[str, Any]]:
    """One single-needle question, one multi-needle question, one 4-try VNBench sample."""
    return [
        grounding("q-short", [(25.0, 35.0)]),
        grounding("q-multi", [(0.0, 3.0), (33.0, 36.0)], duration_s=40.0),
        *choice_tries("s1"),
    ]
