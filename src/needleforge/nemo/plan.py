"""Short montage plans: the target segment placed at a random depth among whole negatives.

A plan is a :class:`~needleforge.records.Montage`: segments that tile ``[0, duration)``.
For one target:

1. The target segment is the whole scene (scene needle) or the object's track snapped onto
   the scene's whole-second keyframe grid (object needle, :func:`targets.object_span`);
   negatives are whole scenes. Every segment therefore starts at ``scene.start_s + k`` for a
   whole ``k`` and stays inside its scene, which the render cache can cut by stream copy.
2. A montage length is drawn uniformly from ``[short_min_s, short_max_s]``; negatives are
   taken in their (already shuffled) order until the montage reaches that length and holds
   ``min_negatives``, skipping any that would push it past ``short_max_s`` (< 150 s, so the
   montage is always in the short bucket).
3. The target goes in at a depth drawn by time (:func:`~needleforge.nemo.multi.time_gaps`:
   a uniform moment of the negatives' running time, nearest gap), so its start is spread
   evenly over the montage rather than first in one montage of ``n + 1``.

An optional ``accept`` check (stage 2's negative probe,
:mod:`~needleforge.nemo.checks.negative_scan`) is asked about each negative just before it would be
taken, and a refused one is passed over like one that does not fit: only the scenes a montage would
use are ever checked.

When the negatives cannot reach ``short_min_s`` (or ``min_negatives``) the target is skipped
with a :class:`PlanSkip` saying what was available: no montage is ever made outside its bucket.
Ids derive from content (sha256), so the same seed and tables give byte-identical plans.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
from collections.abc import Callable, Sequence

from needleforge.nemo.multi import ScenePiece, tile, time_gaps
from needleforge.nemo.targets import Target
from needleforge.params import NemoParams
from needleforge.records import Montage, NeedleType, Scene, Segment, bucket_for


@dataclasses.dataclass(frozen=True, slots=True)
class PlanSkip:
    """Why a target got no montage (too few negatives, a target segment too long)."""

    reason: str


def content_digest(payload: object) -> str:
    """16 hex digits of the sha256 of ``payload`` as canonical JSON: the tail of every plan's
    id (short montages here, expanded ones in :mod:`~needleforge.nemo.grow`)."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def montage_id_for(target: Target, segments: Sequence[Segment], *, seed: int) -> str:
    """``m`` + 16 hex digits of the sha256 of the target, the seed and every segment."""
    return "m" + content_digest({
        "needle_type": target.needle_type,
        "target": target.target_id,
        "seed": seed,
        "segments": [[s.video_id, s.scene_id, round(s.src_start_s, 6), round(s.src_end_s, 6),
                      s.role, s.needle_index] for s in segments],
    })


def question_id_for(
    montage_id: str, *, needle_type: NeedleType, target_id: str, template_id: str
) -> str:
    """``q`` + 16 hex digits of the sha256 of the montage, needle type, target and template."""
    return "q" + content_digest([montage_id, needle_type, target_id, template_id])


def _fill(
    negatives: Sequence[Scene], *, base_s: float, goal_s: float, params: NemoParams,
    accept: Callable[[Scene], bool] | None,
) -> tuple[list[Scene], int]:
    """Negatives in order until ``goal_s`` and ``min_negatives`` are met, never past the cap,
    skipping those ``accept`` refuses; also how many it refused."""
    chosen: list[Scene] = []
    refused = 0
    total = base_s
    for scene in negatives:
        if total >= goal_s and len(chosen) >= params.min_negatives:
            break
        if total + scene.duration_s > params.short_max_s:
            continue
        if accept is not None and not accept(scene):
            refused += 1
            continue
        chosen.append(scene)
        total += scene.duration_s
    return chosen, refused


def plan_short_montage(
    target: Target, negatives: Sequence[Scene], *, params: NemoParams, rng: random.Random,
    accept: Callable[[Scene], bool] | None = None,
) -> Montage | PlanSkip:
    """A short montage for ``target`` from ``negatives`` (in the order given), or why not.

    ``rng`` draws the montage length and the target's depth; pass one seeded per target.
    ``accept``, when given, is asked about each negative just before it is taken; refused
    ones are passed over (see the module docstring).
    Raises:
        ValueError: when a negative is the target scene or comes from another video
            (negatives are chosen by :func:`negatives.select_negatives`).
    """
    for scene in negatives:
        if scene.scene_id == target.scene.scene_id or scene.video_id != target.video_id:
            raise ValueError(f"negative {scene.scene_id} is the target scene or from another "
                             f"video than {target.video_id}")
    start_s, end_s = target.span()
    target_s = end_s - start_s
    if target_s >= params.short_max_s:
        return PlanSkip(f"target segment of {target_s:.2f} s leaves no room for negatives "
                        f"under short_max_s = {params.short_max_s} s")
    goal_s = rng.uniform(params.short_min_s, params.short_max_s)
    chosen, refused = _fill(negatives, base_s=target_s, goal_s=goal_s, params=params,
                            accept=accept)
    total_s = target_s + sum(s.duration_s for s in chosen)
    if total_s < params.short_min_s or len(chosen) < params.min_negatives:
        checked = f" ({refused} refused by the negative check)" if refused else ""
        return PlanSkip(
            f"too few negatives: {len(chosen)} of {len(negatives)} eligible fit{checked}, giving "
            f"{total_s:.2f} s; need >= {params.short_min_s} s and >= {params.min_negatives} "
            f"negatives (montage <= {params.short_max_s} s)"
        )
    depth = time_gaps([s.duration_s for s in chosen], 1, rng=rng)[0]
    pieces = [ScenePiece(s, s.start_s, s.end_s, "negative") for s in chosen]
    pieces.insert(depth, ScenePiece(target.scene, start_s, end_s, "target", target.target_id))
    segments = tile(pieces)
    duration_s = segments[-1].montage_end_s
    bucket = bucket_for(duration_s)
    if bucket != "short":
        return PlanSkip(f"montage of {duration_s:.2f} s falls in bucket {bucket!r}, not short")
    return Montage(montage_id=montage_id_for(target, segments, seed=params.seed),
                   bucket=bucket, segments=segments, seed=params.seed)
