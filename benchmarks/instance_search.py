"""The instance check's search: coarse to fine (ours) against every window (the baseline).

Both searches of :class:`~needleforge.nemo.checks.instance.InstanceMatcher` run on the same
frames in one run: the negative check's dense frames (a frame a second, at most 640 pixels
wide) of (object target, other scene of its video) pairs from a represented store (the
demo's ``data/db/represent.duckdb`` by default). Half the pairs are chosen where the instance
check matters: the scene holds a track of the target's label (in the studio a label always
comes from one cut-out, so these are mostly the same object again); the other half are any
other scenes.

The coarse-to-fine search computes full-resolution scores only around places that score
well at half resolution, so its best score is never above the exhaustive one; what can go
wrong is a miss: a frame where the exhaustive search reaches the threshold and the
coarse-to-fine one does not. Printed: CPU ms a frame for each search (this process's CPU
time, OpenCV's threads included) and the speed-up; frames and pairs at or above the threshold
for each, the misses, and the largest score difference where both match.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/instance_search.py [--db data/db/represent.duckdb]
[--videos 3] [--pairs 120] [--seed 0]``.
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

from benchmarks.check_cost import load

from needleforge.nemo import VideoKeyframes
from needleforge.nemo.checks.instance import InstanceMatcher
from needleforge.nemo.checks.template_search import SEARCHES
from needleforge.records import ObjectTrack, Scene
from needleforge.records.phrases import normalize


def _pairs(db: Path, videos: int, count: int, seed: int
           ) -> tuple[list[tuple[ObjectTrack, Scene, Scene]], VideoKeyframes, VideoKeyframes]:
    """``count`` (track, its scene, other scene) pairs, half where the other scene holds a
    track of the same label; the dense frames of their videos, and the exact frame source
    the templates are cut from."""
    corpus = load(db, videos)
    same, other = [], []
    for video in corpus.videos:
        by_id = {s.scene_id: s for s in corpus.scenes[video.video_id]}
        labels: dict[str, set[str]] = {}
        for track in corpus.tracks[video.video_id]:
            labels.setdefault(track.scene_id, set()).add(normalize(track.tag))
        for track in corpus.tracks[video.video_id]:
            for scene in corpus.scenes[video.video_id]:
                if scene.scene_id == track.scene_id:
                    continue
                pair = (track, by_id[track.scene_id], scene)
                (same if normalize(track.tag) in labels.get(scene.scene_id, ()) else
                 other).append(pair)
    rng = random.Random(seed)
    half = count // 2
    chosen = rng.sample(same, min(half, len(same)))
    chosen += rng.sample(other, min(count - len(chosen), len(other)))
    videos = {v.video_id: v for v in corpus.videos}
    frames = VideoKeyframes(videos, per_scene=1, every_s=1.0, max_side=640, max_cached=2)
    exact = VideoKeyframes(videos, per_scene=1, max_side=640, max_cached=1)
    return chosen, frames, exact


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--db", type=Path, default=Path("data/db/represent.duckdb"))
    parser.add_argument("--videos", type=int, default=3)
    parser.add_argument("--pairs", type=int, default=120)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    pairs, frames, exact = _pairs(args.db, args.videos, args.pairs, args.seed)
    matchers = {name: InstanceMatcher(frames, exact.frame_at, search=name) for name in SEARCHES}
    threshold = matchers["exhaustive"].min_score
    cpu = dict.fromkeys(SEARCHES, 0.0)
    hits = {name: 0 for name in SEARCHES}
    pair_hits = {name: 0 for name in SEARCHES}
    n_frames, misses, worst = 0, [], 0.0
    for track, target_scene, scene in pairs:
        matched = dict.fromkeys(SEARCHES, False)
        for frame in frames(scene):
            scores = {}
            for name, matcher in matchers.items():
                started = time.process_time()
                best = matcher.best_in(frame.image, track, target_scene=target_scene)
                cpu[name] += time.process_time() - started
                scores[name] = -1.0 if best is None else best[0]
            n_frames += 1
            for name, score in scores.items():
                hits[name] += score >= threshold
                matched[name] |= score >= threshold
            full, fast = scores["exhaustive"], scores["coarse-to-fine"]
            if full >= threshold and fast < threshold:
                misses.append(f"{track.object_id} ({track.tag}) in {scene.scene_id} at "
                              f"{frame.t_s:.1f} s: exhaustive {full:.3f}, coarse-to-fine "
                              f"{fast:.3f}")
            elif full >= threshold:
                worst = max(worst, full - fast)
        for name in SEARCHES:
            pair_hits[name] += matched[name]
    frames.close()
    exact.close()
    print(f"store {args.db}: {len(pairs)} pairs ({n_frames} frames), threshold {threshold:g}")
    print("| search | CPU ms a frame | frames matched | pairs matched |")
    print("|---|---:|---:|---:|")
    for name in SEARCHES:
        print(f"| {name} | {1000 * cpu[name] / max(n_frames, 1):.1f} | {hits[name]} | "
              f"{pair_hits[name]} |")
    print(f"\ncoarse-to-fine is {cpu['exhaustive'] / max(cpu['coarse-to-fine'], 1e-9):.1f}x "
          f"cheaper; frames it misses: {len(misses)}; largest score difference where both "
          f"match: {worst:.2e}")
    for line in misses:
        print("  miss:", line)


if __name__ == "__main__":
    main()
