"""Tiny release media for the adapter and run tests, made by ffmpeg from lavfi and a photo."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

from tests.conftest import ffmpeg


def chelsea_png() -> Path:
    """scikit-image's bundled tabby-cat photo (451x300), which the SSD detector calls "cat"."""
    spec = importlib.util.find_spec("skimage")
    assert spec is not None and spec.submodule_search_locations, "scikit-image is not installed"
    return Path(next(iter(spec.submodule_search_locations))) / "data" / "chelsea.png"


def make_cat_clip(path: Path) -> Path:
    """8 s at 10 fps, 450x300: black 0–3 s, the Chelsea photo 3–6 s, black 6–8 s.

    Why: the cat span [3, 6] sits on whole seconds like a montage needle, so the embedded
    baseline's answer can be checked exactly. Command (by hand)::

        ffmpeg -f lavfi -i color=c=black:s=450x300:r=10:d=3 -loop 1 -framerate 10 -t 3 \
          -i chelsea.png -f lavfi -i color=c=black:s=450x300:r=10:d=2 -filter_complex \
          "[0:v]setsar=1,format=yuv420p[a];[1:v]scale=450:300,setsar=1,format=yuv420p[c];\
           [2:v]setsar=1,format=yuv420p[b];[a][c][b]concat=n=3:v=1[v]" -map "[v]" \
          -c:v libx264 -pix_fmt yuv420p cat.mp4
    """
    ffmpeg("-f", "lavfi", "-i", "color=c=black:s=450x300:r=10:d=3",
           "-loop", "1", "-framerate", "10", "-t", "3", "-i", str(chelsea_png()),
           "-f", "lavfi", "-i", "color=c=black:s=450x300:r=10:d=2",
           "-filter_complex",
           "[0:v]setsar=1,format=yuv420p[a];[1:v]scale=450:300,setsar=1,format=yuv420p[c];"
           "[2:v]setsar=1,format=yuv420p[b];[a][c][b]concat=n=3:v=1[v]",
           "-map", "[v]", "-c:v", "libx264", "-pix_fmt", "yuv420p", str(path))
    return path


def make_bars_clip(path: Path, *, duration_s: int = 4) -> Path:
    """``duration_s`` seconds of 160x90 test bars at 10 fps: any decodable video.

    Command: ``ffmpeg -f lavfi -i testsrc2=size=160x90:rate=10:duration=4 -c:v libx264
    -pix_fmt yuv420p bars.mp4``
    """
    ffmpeg("-f", "lavfi", "-i", f"testsrc2=size=160x90:rate=10:duration={duration_s}",
           "-c:v", "libx264", "-pix_fmt", "yuv420p", str(path))
    return path


def grounding_record(question_id: str, *, video: str, spans: list[list[float]],
                     duration_s: float = 8.0, bucket: str = "short",
                     question: str = "When is the cat seen?") -> dict[str, Any]:
    """A NeMo grounding question record as a release writes it."""
    return {"question_id": question_id, "family": "nemo", "task": "object_grounding",
            "question": question, "video": video, "duration_s": duration_s, "bucket": bucket,
            "needle_type": "object", "n_needles": len(spans), "answer_spans": spans}


def choice_records(question_id: str, *, video: str, options: list[str], answer: int,
                   question: str, duration_s: float = 8.0,
                   task: str = "ret_insert1") -> list[dict[str, Any]]:
    """The 4 rotations of one VNBench multiple-choice sample."""
    records = []
    for t in range(4):
        rotated = options[t:] + options[:t]
        records.append({"question_id": question_id, "family": "vnbench", "task": task,
                        "question": question, "video": video, "duration_s": duration_s,
                        "bucket": "short", "needle_type": "image", "n_needles": 1,
                        "options": rotated, "answer_index": rotated.index(options[answer]),
                        "try": t})
    return records


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    """One JSON object per line."""
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path
