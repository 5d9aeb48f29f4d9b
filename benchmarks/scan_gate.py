"""The label check's change gate: detect only what changed (ours) against every frame whole.

The negative check's label scan (:mod:`needleforge.nemo.checks.negative_scan`) at
needleforge's defaults (a frame a second at 2x, pose on) runs twice on the same scenes of a
represented store (the demo's ``data/db/represent.duckdb`` by default), once with
``check.changed_only`` off (the baseline: the detector sees every frame whole) and once with it
on (:mod:`needleforge.nemo.checks.change_gate`: the detector sees only the part of a frame
that changed since the scene's earlier frames). Printed: CPU seconds of each (this process's,
the detector's threads included), the frames' worth of pixels the detector saw, and what each
scan saw: the labels at the check's threshold per scene, those only one of them saw (with
their scores), so a label the gate would have cost a negative check is listed by name.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/scan_gate.py [--db data/db/represent.duckdb]
[--videos 3] [--scenes 45]``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from benchmarks.check_cost import load

from needleforge.backends import default_registry
from needleforge.nemo import build_probe
from needleforge.params import NemoParams
from needleforge.records import Scene, SceneScan, Video


def scan_all(params: NemoParams, videos: list[Video], scenes: list[Scene]
             ) -> tuple[list[SceneScan], float, float]:
    """Every scene scanned by the label check ``params`` ask for: the scans, CPU seconds,
    and the frames' worth of pixels the detector saw."""
    probe = build_probe(params, videos=videos, registry=default_registry())
    assert probe is not None
    with probe:
        started = time.process_time()
        scans = [probe.scan(scene) for scene in scenes]
        return scans, time.process_time() - started, probe.cost.detector_area


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--db", type=Path, default=Path("data/db/represent.duckdb"))
    parser.add_argument("--videos", type=int, default=3)
    parser.add_argument("--scenes", type=int, default=45, help="scenes, spread over the videos")
    args = parser.parse_args()
    corpus = load(args.db, args.videos)
    every = [s for v in corpus.videos for s in corpus.scenes[v.video_id]]
    scenes = every[::max(1, len(every) // args.scenes)][:args.scenes]
    base = NemoParams().with_check(instances=False)
    runs = {name: scan_all(base.with_check(changed_only=gated), corpus.videos, scenes)
            for name, gated in (("every frame whole", False), ("changed parts only", True))}
    seconds = sum(s.end_s - s.start_s for s in scenes)
    print(f"store {args.db}: {len(scenes)} scenes, {seconds:.0f} s of video; label check at "
          f"the defaults (every {base.check.every_s:g} s, x{base.check.input_scale:g}, min "
          f"score {base.check.min_score:g})")
    print("| label scan | CPU s | frames | detector saw (frames' worth) | labels seen |")
    print("|---|---:|---:|---:|---:|")
    seen = {}
    for name, (scans, cpu, area) in runs.items():
        seen[name] = {(scan.scene_id, s.label): s.score for scan in scans for s in scan.sightings}
        print(f"| {name} | {cpu:.1f} | {sum(s.n_frames for s in scans)} | {area:.0f} | "
              f"{len(seen[name])} |")
    whole, gated = seen["every frame whole"], seen["changed parts only"]
    (_, full_cpu, _), (_, gate_cpu, _) = runs.values()
    print(f"\nthe gate is {full_cpu / max(gate_cpu, 1e-9):.1f}x cheaper; (scene, label) pairs "
          f"seen only on whole frames: {len(whole.keys() - gated.keys())}, only with the "
          f"gate: {len(gated.keys() - whole.keys())}")
    for key in sorted(whole.keys() - gated.keys()):
        print(f"  only whole: {key[1]} in {key[0]} (score {whole[key]:.2f})")
    for key in sorted(gated.keys() - whole.keys()):
        print(f"  only gated: {key[1]} in {key[0]} (score {gated[key]:.2f})")


if __name__ == "__main__":
    main()
