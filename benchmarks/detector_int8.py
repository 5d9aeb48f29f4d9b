"""The embedded SSD in INT8 against f32: CPU seconds, and whether the detections agree.

Same frames, same detector settings, both precisions in one run, alternating per frame, at the
three looks the pipeline takes (``EmbeddedDetector`` as each caller builds it):

- ``represent``: 300x300, score >= 0.5 (``objects.min_detection_score``);
- ``check``: the NeMo negative check, 2x input with the coarse maps at 300x300, score >= 0.3
  (``nemo.check.input_scale``, ``nemo.check.min_score``);
- ``verify``: the looking verifier's redetect, 1.5x with all six maps upscaled, score >= 0.4.

Frames: the **studio** corpus (the videos of a represented store, default the demo's
``data/db/represent.duckdb``: its real clips and synthetic programs), one every ``--every-s``
seconds at most 640 pixels wide as the check decodes them; and the **real-footage** clips
(``needleforge.studio.real_assets``, those the studio does not ship; skipped with a note when
the ``realfootage`` packages are not installed).

Per look and set it prints: CPU seconds per frame of each precision and the ratio f32/int8;
**box agreement** (an f32 detection is matched by an INT8 one of the same label with IoU >=
0.5, greedily, best scores first: the share of f32 detections matched, and of INT8 ones);
**presence agreement** (the share of frames whose set of labels is the same: what the
negative check answers); and the largest score change of a matched pair. The same figures for
f32 itself on each frame moved by +-1 grey level (an invisible change) give the floor: how
much these detections move when nothing that matters does (the check's threshold, 0.3, sits
where the scores of small and partly seen objects are).

Each instruction-set level runs in a child process of its own (``ONEDNN_MAX_CPU_ISA`` must be
set before oneDNN first runs): ``native`` (this CPU) and ``avx2`` (capped: AVX2, no VNNI, no
AVX-512); the convolution kernels oneDNN picked are printed to show the cap took. The cap
covers oneDNN's kernels (the convolutions, nearly all the time), not OpenVINO's own. Last,
each precision's detections are compared across the two levels: a release should not depend
on the machine that built it.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/detector_int8.py [--db DB] [--every-s 6]
[--real-frames 6] [--isa native avx2]`` (the first INT8 use quantizes, ~15 s, outside the
timings).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

LOOKS: dict[str, dict[str, Any]] = {
    "represent": {"score_threshold": 0.5},
    "check": {"score_threshold": 0.3, "input_scale": 2.0},
    "verify": {"score_threshold": 0.4, "input_scale": 1.5, "coarse_maps": "upscaled"},
}
ISA_ENV = {"native": None, "avx2": "AVX2"}
MATCH_IOU = 0.5


def studio_frames(db: Path, *, every_s: float) -> list[np.ndarray]:
    """A frame every ``every_s`` seconds of each video of the store at ``db``, 640 wide."""
    import av
    import cv2

    from needleforge.store import Store

    frames = []
    with Store(db, read_only=True) as store:
        videos = store.videos()
    for video in videos:
        with av.open(str(video.stored_path)) as container:
            next_t = 0.0
            for frame in container.decode(video=0):
                if frame.time is None or frame.time + 1e-6 < next_t:
                    continue
                next_t += every_s
                image = frame.to_ndarray(format="rgb24")
                scale = min(1.0, 640 / max(image.shape[:2]))
                if scale < 1.0:
                    size = (round(image.shape[1] * scale), round(image.shape[0] * scale))
                    image = cv2.resize(image, size, interpolation=cv2.INTER_AREA)
                frames.append(image)
    return frames


def real_frames(*, most: int) -> tuple[list[np.ndarray], str]:
    """Up to ``most`` frames of each real-footage clip the studio does not ship, and a note
    naming the clips not installed."""
    from needleforge.errors import StudioError
    from needleforge.studio.assets import REAL_CLIPS
    from needleforge.studio.real_assets import REAL_SOURCES, sample_frames

    frames, missing = [], []
    for name, source in REAL_SOURCES.items():
        if source.clip in REAL_CLIPS.values():
            continue
        try:
            frames.extend(sample_frames(name, every=25, most=most))
        except StudioError:
            missing.append(name)
    return frames, (f"not installed: {', '.join(missing)}" if missing else "")


def _match(f32: list[Any], int8: list[Any]) -> tuple[int, float]:
    """Pairs of same-label detections with IoU >= MATCH_IOU (greedy, best f32 score first),
    and the largest score change of a pair."""
    free = list(int8)
    matched, worst = 0, 0.0
    for d in sorted(f32, key=lambda d: -d.score):
        best = max((o for o in free if o.label == d.label), default=None,
                   key=lambda o: o.box.iou(d.box))
        if best is not None and best.box.iou(d.box) >= MATCH_IOU:
            free.remove(best)
            matched += 1
            worst = max(worst, abs(best.score - d.score))
    return matched, worst


def _noisy(frame: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``frame`` with every value moved by -1, 0 or +1: a change no one can see."""
    moved = frame.astype(np.int16) + rng.integers(-1, 2, frame.shape, dtype=np.int16)
    return np.clip(moved, 0, 255).astype(np.uint8)


def _agreement(reference: list[list[Any]], other: list[list[Any]]) -> dict[str, float]:
    """How far ``other``'s detections of the same frames agree with ``reference``'s."""
    pairs = [_match(a, b) for a, b in zip(reference, other, strict=True)]
    matched = sum(m for m, _ in pairs)
    return {"reference": sum(map(len, reference)), "other": sum(map(len, other)),
            "matched": matched, "worst_score": max((w for _, w in pairs), default=0.0),
            "same_labels": sum({d.label for d in a} == {d.label for d in b}
                               for a, b in zip(reference, other, strict=True))}


def _child(args: argparse.Namespace) -> None:
    """One instruction-set level: detect every frame with both precisions, print JSON."""
    from needleforge.backends.embedded.detector import EmbeddedDetector

    sets = {"studio": studio_frames(args.db, every_s=args.every_s)}
    real, note = real_frames(most=args.real_frames)
    if real:
        sets["real footage"] = real
    out: dict[str, Any] = {"note": note, "kernels": {}, "looks": {}, "labels": {}}
    for look, options in LOOKS.items():
        detectors = {p: EmbeddedDetector(num_threads=1, precision=p, **options)
                     for p in ("f32", "int8")}
        for precision, detector in detectors.items():
            out["kernels"][precision] = _kernels(detector)
        for set_name, frames in sets.items():
            cpu = dict.fromkeys(detectors, 0.0)
            found: dict[str, list[list[Any]]] = {p: [] for p in (*detectors, "noise")}
            rng = np.random.default_rng(0)
            for index, frame in enumerate(frames):
                order = list(detectors) if index % 2 == 0 else list(detectors)[::-1]
                for precision in order:
                    started = time.process_time()
                    found[precision].append(detectors[precision].detect(frame, t_s=0.0))
                    cpu[precision] += time.process_time() - started
                found["noise"].append(detectors["f32"].detect(_noisy(frame, rng), t_s=0.0))
            out["looks"][f"{look}|{set_name}"] = {
                "frames": len(frames), "cpu_s": cpu,
                "int8": _agreement(found["f32"], found["int8"]),
                "noise": _agreement(found["f32"], found["noise"])}
            out["labels"][f"{look}|{set_name}"] = {
                p: [sorted([d.label, round(d.box.x, 3), round(d.box.y, 3)] for d in f)
                    for f in found[p]] for p in detectors}
    print(json.dumps(out))


def _kernels(detector: Any) -> str:
    """The convolution kernels oneDNN chose for ``detector``'s compiled model."""
    model = detector._runtime._request.get_compiled_model().get_runtime_model()
    kinds = collections.Counter(
        op.get_rt_info()["primitiveType"].astype(str) for op in model.get_ops()
        if op.get_rt_info()["layerType"].astype(str) == "Convolution")
    return ", ".join(f"{k} x{n}" for k, n in kinds.most_common(3))


def _isa_flags() -> str:
    try:
        flags = Path("/proc/cpuinfo").read_text().split("flags", 1)[1].split("\n", 1)[0].split()
    except (OSError, IndexError):
        return "unknown"
    wanted = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8")
    return " ".join(f for f in wanted if f in flags)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", type=Path, default=Path("data/db/represent.duckdb"))
    parser.add_argument("--every-s", type=float, default=6.0)
    parser.add_argument("--real-frames", type=int, default=6,
                        help="frames of each real-footage clip (every 25th)")
    parser.add_argument("--isa", nargs="+", choices=sorted(ISA_ENV), default=["native", "avx2"])
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.every_s <= 0 or args.real_frames < 0:
        parser.error(f"--every-s = {args.every_s} must be > 0 and --real-frames = "
                     f"{args.real_frames} >= 0")
    if args.child:
        _child(args)
        return
    if not args.db.is_file():
        parser.error(f"--db {args.db}: no such store (make demo leaves one there)")
    from needleforge.backends.embedded.detector import EmbeddedDetector

    EmbeddedDetector(precision="int8")  # quantizes on first use: outside the timings
    print(f"CPU: {_isa_flags()}")
    results = {}
    for isa in args.isa:
        env = dict(os.environ)
        env.pop("ONEDNN_MAX_CPU_ISA", None)
        if ISA_ENV[isa] is not None:
            env["ONEDNN_MAX_CPU_ISA"] = ISA_ENV[isa]
        command = [sys.executable, __file__, "--child", "--db", str(args.db),
                   "--every-s", str(args.every_s), "--real-frames", str(args.real_frames)]
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"the {isa} run failed ({done.returncode}):\n{done.stderr[-3000:]}")
        results[isa] = json.loads(done.stdout.strip().splitlines()[-1])
        _report(isa, results[isa])
    if len(results) == 2:
        _across(results)


def _report(isa: str, result: dict[str, Any]) -> None:
    print(f"\n== {isa}: f32 kernels {result['kernels']['f32']}; "
          f"int8 kernels {result['kernels']['int8']}")
    if result["note"]:
        print(f"   real footage: {result['note']}")
    print("   agreement with f32: 'kept' = share of f32's detections found again (same label, "
          "IoU >= 0.5), 'in f32' = share of the other's found in f32's, 'labels' = frames with "
          "the same label set; int8, then f32 itself on the frame +-1 grey level (the floor)")
    print(f"{'look | set (frames)':<30} {'f32 ms':>7} {'int8 ms':>7} {'f32/int8':>8} | "
          f"{'kept':>5} {'in f32':>6} {'labels':>6} {'dscore':>6} | "
          f"{'kept':>5} {'in f32':>6} {'labels':>6}")
    for key, r in result["looks"].items():
        n = max(r["frames"], 1)
        f32_ms, int8_ms = 1000 * r["cpu_s"]["f32"] / n, 1000 * r["cpu_s"]["int8"] / n
        label = f"{key} ({r['frames']})"
        q, z = r["int8"], r["noise"]
        print(f"{label:<30} {f32_ms:7.1f} {int8_ms:7.1f} {f32_ms / max(int8_ms, 1e-9):8.2f} | "
              f"{_share(q['matched'], q['reference']):>5} {_share(q['matched'], q['other']):>6} "
              f"{_share(q['same_labels'], r['frames']):>6} {q['worst_score']:6.3f} | "
              f"{_share(z['matched'], z['reference']):>5} {_share(z['matched'], z['other']):>6} "
              f"{_share(z['same_labels'], r['frames']):>6}")


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.3f}" if whole else "-"


def _across(results: dict[str, Any]) -> None:
    """Each precision's detections, native against AVX2: the same frames, the same rows?"""
    native, avx2 = results["native"]["labels"], results["avx2"]["labels"]
    print("\nacross instruction sets (native vs avx2): frames with identical labels and boxes "
          "(to 3 decimals)")
    for key in native:
        line = [f"{key:<28}"]
        for precision in ("f32", "int8"):
            a, b = native[key][precision], avx2[key][precision]
            same = sum(x == y for x, y in zip(a, b, strict=True))
            line.append(f"{precision} {_share(same, len(a))}")
        print("  ".join(line))


if __name__ == "__main__":
    main()
