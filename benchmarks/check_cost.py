"""What NeMo's negative checks cost per target x negative pair, and as targets per video grow.

Issue 22 asks for the checks' CPU seconds per target x negative pair and per source hour, how
they grow with the targets of a video (2, 8, 32), against the path where every pair is looked
at on its own. This script measures both paths in one run on a represented store (the demo's
``data/db/represent.duckdb`` by default; its media files must be where the store says):

- **per-pair path (the baseline)**: a pair is answered by scanning its negative scene for the
  target's label from scratch, every frame whole (``check.changed_only`` off), nothing kept,
  then the exhaustive instance search (``check.instance_search=exhaustive``): one such scene
  scan plus that per-pair cost. Both parts are measured below: the scan as the mean CPU
  seconds of scanning ``--baseline-scenes`` scenes, the per-pair part on the same pairs as
  the stored path's (models are loaded once, for either path).
- **stored-evidence path (the code as it is)**: one :class:`~needleforge.nemo.checks.
  negative_scan.TiledProbe` for all pairs. The label check's dense detections of every label
  are computed once per scene and kept (``negative_scans``), so a pair is a lookup; only the
  part of each frame that changed since the scene's earlier frames is detected
  (:mod:`~needleforge.nemo.checks.change_gate`). The instance check (``check.instances``)
  searches the target's own pixels in the scene's frames, which depends on the target, so it
  is paid per pair (its frames are the label scan's, decoded once), coarse to fine.

Targets are each video's object tracks (the largest first), ``T`` per video for ``T`` in
``--targets``; negatives are every other scene of the same video, as stage 2 draws them. What
is measured: the stored path's scan of every scene once, its cost per pair asked one at a
time on ``--sample-pairs`` pairs spread over the targets (stage 2's way), then, for each
``T``, every pair of its targets asked with the probe told of them first (expand's way: a
scene is searched for all its targets in one pass, so the instance check's share of a pair
falls as targets grow). The table for each ``T`` adds them up: the per-pair path costs pairs
x its per-pair cost; the stored path costs the one scan of every scene plus pairs x its
per-pair cost, told. The checks run at needleforge's
default settings (``NemoParams()``: a frame a second at 2x, instance check on) unless
``--set`` says otherwise. CPU seconds are this process's (``time.process_time``: every thread,
the detector's included).

Run: ``python benchmarks/check_cost.py [--db data/db/represent.duckdb] [--videos 1]
[--targets 2 8 32] [--sample-pairs 96]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections.abc import Sequence
from pathlib import Path

from needleforge.backends import default_registry
from needleforge.nemo import build_probe
from needleforge.nemo.targets import Target
from needleforge.params import NemoParams
from needleforge.records import ObjectTrack, Scene, SceneScan, Video
from needleforge.store import Store


@dataclasses.dataclass(frozen=True, slots=True)
class Corpus:
    videos: list[Video]
    scenes: dict[str, list[Scene]]  # video id -> scenes in time order
    tracks: dict[str, list[ObjectTrack]]  # video id -> tracks, largest first


def load(db: Path, videos: int) -> Corpus:
    """The ``videos`` longest videos of ``db`` with their scenes and tracks."""
    with Store(db) as store:
        chosen = sorted(store.videos(), key=lambda v: -v.media.duration_s)[:videos]
        ids = {v.video_id for v in chosen}
        scenes = {v.video_id: store.scenes(v.video_id) for v in chosen}
        scene_of = {s.scene_id: s.video_id for ss in scenes.values() for s in ss}
        tracks: dict[str, list[ObjectTrack]] = {v: [] for v in ids}
        for track in store.objects():
            video = scene_of.get(track.scene_id)
            if video is not None:
                tracks[video].append(track)
    for video in tracks:
        tracks[video].sort(key=lambda t: -t.mean_area_frac)
    return Corpus(chosen, scenes, tracks)


def pairs_for(corpus: Corpus, per_video: int) -> list[tuple[Target, Scene]]:
    """Every (object target, other scene of its video) pair, ``per_video`` targets a video."""
    out: list[tuple[Target, Scene]] = []
    for video in corpus.videos:
        by_id = {s.scene_id: s for s in corpus.scenes[video.video_id]}
        for track in corpus.tracks[video.video_id][:per_video]:
            target = Target("object", by_id[track.scene_id], track)
            out += [(target, s) for s in corpus.scenes[video.video_id]
                    if s.scene_id != track.scene_id]
    return out


def stored(params: NemoParams, videos: Sequence[Video], scenes: Sequence[Scene],
           pairs: Sequence[tuple[Target, Scene]], *, told: bool = False,
           known: Sequence[SceneScan] = ()) -> tuple[float, float, int, list[SceneScan]]:
    """One probe as ``params`` make it: CPU seconds to scan ``scenes`` once (label evidence,
    kept; scenes whose scans are in ``known`` are taken from there, as a store would), then
    CPU seconds per pair for ``pairs`` answered from it (the lookups and the instance
    search; the scenes of ``pairs`` must be among ``scenes``); how many of those pairs were
    refused; and the label scans. ``told``: the probe is first told which targets will ask
    about which scenes (as expand tells it: :meth:`TiledProbe.expect`), so each scene is
    searched for all of its targets in one pass."""
    registry = default_registry()
    probe = build_probe(params, videos=videos, registry=registry)
    assert probe is not None
    with probe:
        probe.preload(known)
        started = time.process_time()
        for scene in scenes:
            probe.scan(scene)
        scans_s = time.process_time() - started
        label_scans = [scan for scan in probe.new_scans() if scan.probe_key == probe.key]
        started = time.process_time()
        if told:
            by_target: dict[str, tuple[Target, list[Scene]]] = {}
            for target, scene in pairs:
                by_target.setdefault(target.target_id, (target, []))[1].append(scene)
            for target, asked in by_target.values():
                probe.expect(target, asked)
        refused = sum(probe.evidence(scene, target) is not None for target, scene in pairs)
        per_pair = (time.process_time() - started) / max(len(pairs), 1)
    return scans_s, per_pair, refused, [*known, *label_scans]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--db", type=Path, default=Path("data/db/represent.duckdb"))
    parser.add_argument("--videos", type=int, default=1)
    parser.add_argument("--targets", type=int, nargs="+", default=[2, 8, 32])
    parser.add_argument("--sample-pairs", type=int, default=96,
                        help="pairs the stored path answers, spread over the targets")
    parser.add_argument("--baseline-scenes", type=int, default=12,
                        help="scenes the baseline's per-scene scan cost is measured on")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                        help="nemo params, e.g. check.every_s=8 check.instances=false")
    args = parser.parse_args()
    data = NemoParams().model_dump()
    for pair in args.set:
        key, _, value = pair.partition("=")
        where, _, name = key.rpartition(".")  # check.every_s: a key of nemo.check
        node = data.get(where) if where else data
        if not isinstance(node, dict):
            raise SystemExit(f"--set {pair!r}: no nemo.{where} to set; e.g. check.every_s=8")
        node[name] = value  # an unknown name is refused by model_validate, named
    params = NemoParams.model_validate(data)
    corpus = load(args.db, args.videos)
    hours = sum(v.media.duration_s for v in corpus.videos) / 3600
    scenes = [s for v in corpus.videos for s in corpus.scenes[v.video_id]]
    most = max(args.targets)
    every = pairs_for(corpus, most)
    sample = every[::max(1, len(every) // args.sample_pairs)][:args.sample_pairs]
    print(f"store {args.db}: {len(corpus.videos)} video(s), {hours * 60:.1f} min, "
          f"{len(scenes)} scenes; tracks per video "
          f"{[len(corpus.tracks[v.video_id]) for v in corpus.videos]}; checks: every "
          f"{params.check.every_s:g} s at x{params.check.input_scale:g}, instances "
          f"{'on' if params.check.instances else 'off'}")
    scans_s, per_pair, refused, label_scans = stored(params, corpus.videos, scenes, sample)
    baseline = params.with_check(changed_only=False, instance_search="exhaustive")
    few = scenes[::max(1, len(scenes) // args.baseline_scenes)][:args.baseline_scenes]
    few_ids = {s.scene_id for s in few}
    few_pairs = [(t, s) for t, s in sample if s.scene_id in few_ids] or sample[:8]
    few = list({s.scene_id: s for s in [*few, *(s for _, s in few_pairs)]}.values())
    base_scans_s, base_pair, _, _ = stored(baseline, corpus.videos, few, few_pairs)
    base = base_scans_s / len(few) + base_pair
    print(f"baseline (every frame whole, exhaustive instance search): {base:.2f} CPU s a pair "
          f"(a scene scan {base_scans_s / len(few):.2f} over {len(few)} scenes, then "
          f"{base_pair:.3f} a pair over {len(few_pairs)} pairs)")
    print(f"stored evidence (as configured): scanning every scene once {scans_s:.1f} CPU s "
          f"({scans_s / len(scenes):.2f} a scene, {scans_s / hours:.0f} per source hour); then "
          f"{per_pair:.3f} CPU s a pair ({len(sample)} pairs, {refused} refused)\n")
    print("Each row below asks every pair of its targets, the probe told of them first (as "
          "expand does), its label scans taken from the scan above:\n")
    print("| targets/video | pairs | per-pair path CPU s | stored path CPU s | CPU s/pair | "
          "CPU s per source hour | cheaper per pair | told: CPU s a pair after the scan |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for per_video in args.targets:
        pairs = pairs_for(corpus, per_video)
        n = len(pairs)
        _, told_pair, _, _ = stored(params, corpus.videos, scenes, pairs, told=True,
                                    known=label_scans)
        total = scans_s + n * told_pair
        print(f"| {per_video} | {n} | {n * base:.0f} | {total:.0f} | {total / n:.3f} | "
              f"{total / hours:.0f} | {base * n / total:.1f}x | {told_pair:.3f} |")


if __name__ == "__main__":
    main()
