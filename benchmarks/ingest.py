"""Ingest throughput: probing + hashing + storing, as ratios against reading the same bytes.

Baseline (same run): reading every source file once in 1 MiB chunks (what any ingest must
at least do). Figures: sha256 hashing and the whole per-row ingest step relative to it, and
rows per second. Run: ``python benchmarks/ingest.py [--mib 256] [--files 8]``.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import tempfile
import time
from pathlib import Path

import yaml

from needleforge.ingest import ingest
from needleforge.ingest.media_store import sha256_file
from needleforge.media.ffmpeg import run_ffmpeg_args
from needleforge.params import IngestParams


def _make_sources(folder: Path, *, n_files: int, mib: int) -> list[Path]:
    """One real encoded clip, then copies padded with distinct tails to the wanted size."""
    clip = folder / "seed.mp4"
    run_ffmpeg_args(["-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25:duration=4",
                     "-c:v", "libx264", "-pix_fmt", "yuv420p", str(clip)], what=str(clip))
    per_file = max(1, mib // n_files) << 20
    paths = []
    for i in range(n_files):
        path = folder / f"src{i:02d}.mp4"
        shutil.copy(clip, path)
        with path.open("ab") as fh:  # MP4 readers ignore trailing bytes after the last box
            fh.write(bytes([i]) * max(0, per_file - clip.stat().st_size))
        paths.append(path)
    return paths


def _read_all(paths: list[Path]) -> None:
    for path in paths:
        with path.open("rb") as fh:
            while fh.read(1 << 20):
                pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mib", type=int, default=256, help="total source size")
    parser.add_argument("--files", type=int, default=8)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        paths = _make_sources(root, n_files=args.files, mib=args.mib)
        total_mib = sum(p.stat().st_size for p in paths) / 2**20
        manifest = root / "manifest.yaml"
        manifest.write_text(yaml.safe_dump({"sources": [
            {"path": p.name, "program": "bench", "rights_holder": "R", "licence_id": "CC0",
             "scope": ["benchmark"], "valid_until": "2099-01-01"} for p in paths]}))
        timings = {}
        start = time.perf_counter()
        _read_all(paths)
        timings["read (baseline)"] = time.perf_counter() - start
        start = time.perf_counter()
        for path in paths:
            sha256_file(path)
        timings["sha256"] = time.perf_counter() - start
        for mode in ("hardlink", "copy"):
            start = time.perf_counter()
            result = ingest(manifest, media_dir=root / f"media-{mode}",
                            params=IngestParams.model_validate({"link_mode": mode}))
            timings[f"ingest ({mode})"] = time.perf_counter() - start
            assert len(result.videos) == len(paths), result.rejections
    base = timings["read (baseline)"]
    print(f"{len(paths)} files, {total_mib:.0f} MiB")
    for name, seconds in timings.items():
        print(f"{name:18s} {seconds:7.3f} s  {total_mib / seconds:8.0f} MiB/s  "
              f"{seconds / base:5.2f}x baseline")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak:.0f} MiB")


if __name__ == "__main__":
    main()
