"""Helpers shared by the VNBench tests: lavfi haystacks, video records, a cheap embedder.

Haystacks are ffmpeg ``testsrc2`` (moving colour bars with a running clock): busy enough that
a pasted image or a subtitle changes pixels everywhere it lands, and different in every
second, so a frame copied from the wrong second is caught by the bit-identity checks.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from needleforge.backends.base import RGBImage
from needleforge.backends.embedding import Embeddings, normalize_rows
from needleforge.media import probe
from needleforge.params import RenderParams
from needleforge.records import Authorization, Video, video_id_for
from needleforge.vnbench.records import VNBenchSample
from tests.conftest import ffmpeg

#: Small frames and 10 fps keep every encode in the tens of milliseconds.
PROFILE = RenderParams(width=320, height=180, fps=10, preset="veryfast", workers=2)


def lavfi_source(path: Path, *, seconds: int, source: str = "testsrc2") -> Path:
    """``ffmpeg -f lavfi -i SOURCE=size=320x180:rate=25:duration=S -c:v libx264 out.mp4``."""
    joint = ":" if "=" in source else "="
    ffmpeg("-f", "lavfi", "-i", f"{source}{joint}size=320x180:rate=25:duration={seconds}",
           "-c:v", "libx264", "-pix_fmt", "yuv420p", "-g", "50", str(path))
    return path


def video_record(path: Path) -> Video:
    """An authorized :class:`Video` for a local file (as ingest would store it)."""
    data = path.read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    auth = Authorization(rights_holder="tests", licence_id="test-1.0", scope=("benchmark",),
                         valid_until=dt.date(2099, 12, 31))
    return Video(video_id=video_id_for(sha), sha256=sha, program="tests", source_path=str(path),
                 stored_path=str(path), size_bytes=len(data), media=probe(path),
                 authorization=auth)


class HistogramEmbedder:
    """A stand-in embedder: 8-bin per-channel colour histograms (fast, deterministic)."""

    name = "test-histogram"
    version = "1"

    def embed(self, images: Sequence[RGBImage]) -> Embeddings:
        rows = [np.concatenate([np.histogram(img[..., c], bins=8, range=(0, 256))[0]
                                for c in range(3)]).astype(float) for img in images]
        return normalize_rows(np.array(rows).reshape(len(rows), 24))


def haystack_frame(sample: VNBenchSample, k: int, *, fps: int) -> int | None:
    """The haystack frame that output frame ``k`` copies, or None inside a needle."""
    t = k / fps
    shift = 0.0
    for needle in sample.needles:
        if needle.start_s <= t < needle.end_s:
            return None
        if needle.method == "insert" and needle.end_s <= t:
            shift += needle.end_s - needle.start_s
    return k - round(shift * fps)


def mean_abs_diff(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a.astype(np.int16) - b.astype(np.int16)).mean())
