"""Where haystacks come from and where needles go: whole seconds, chosen by seed.

**Haystacks.** A haystack is ``[start_s, start_s + L)`` of an ingested video with ``start_s``
and ``L`` whole numbers of seconds, so the scene-clip cache encodes it once with a keyframe
at every second and needles can be cut in and out by stream copy. ``L`` is drawn uniformly
from ``[min_s, max_s]`` (capped by the chosen video), the video uniformly among those long
enough, the start uniformly among the positions that fit.

**Needles** last whole seconds and never overlap. An *edited* needle takes one haystack second
(drawn on); two edited needles are at least one untouched second apart, so a repeated
subtitle is seen as two appearances, not one long one. An *inserted* needle is spliced in
front of haystack second ``b`` (``b = L``: after the last); two inserted needles use different
``b``, so at least one haystack second separates them. Positions are uniform over all
placements allowed (the "depth" of the paper's Fig. 3 and 8 is then uniform too).
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Sequence

from needleforge.records import Video
from needleforge.vnbench.records import Haystack, Method, Needle, VNBenchError, VNBenchSkip


def sample_rng(*parts: object) -> random.Random:
    """A generator seeded by ``parts`` (a string seed: the same on every run and machine)."""
    return random.Random(":".join(str(p) for p in parts))


def balanced_draw(n_values: int, *, index: int, parts: Sequence[object]) -> int:
    """A value in ``0..n_values - 1`` for the ``index``-th sample of a task, stratified: each
    block of ``n_values`` consecutive samples takes every value once, in an order drawn by
    ``parts`` and the block.

    Why: a uniform draw per sample leaves chance imbalances a blind model can exploit in a
    small release (3 of 8 counting answers being "1"); blocks keep every value's share within
    one sample of even, while sample ``index`` still depends only on its own block, so adding
    samples never moves earlier ones.

    Raises:
        VNBenchError: ``n_values`` < 1 or ``index`` < 0.
    """
    if n_values < 1 or index < 0:
        raise VNBenchError(f"balanced draw of {n_values} values for sample {index}")
    block, offset = divmod(index, n_values)
    order = list(range(n_values))
    sample_rng("balance", *parts, block).shuffle(order)
    return order[offset]


def short_hash(*parts: object, length: int = 12) -> str:
    """Hex prefix of the sha256 of ``parts`` joined by ``:`` (for content-derived ids)."""
    return hashlib.sha256(":".join(str(p) for p in parts).encode()).hexdigest()[:length]


def whole_seconds(duration_s: float) -> int:
    """The whole seconds a video of ``duration_s`` holds (1 ms of float noise forgiven)."""
    return math.floor(duration_s + 1e-3)


def pick_haystacks(
    videos: Sequence[Video], *, n: int, min_s: int, max_s: int, seed: int, tag: str
) -> tuple[list[Haystack], list[VNBenchSkip]]:
    """``n`` haystacks of ``[min_s, max_s]`` whole seconds from ``videos`` (see module doc).

    Haystack ``i`` depends only on the seed, ``tag``, ``i`` and the videos (sorted by id), so
    adding samples never moves the earlier ones. Returns no haystacks and one skip when no
    video lasts ``min_s``.

    Raises:
        VNBenchError: when ``n < 0`` or ``min_s`` is not in ``1..max_s``.
    """
    if n < 0 or not 1 <= min_s <= max_s:
        raise VNBenchError(f"bad haystack request: n = {n}, range [{min_s}, {max_s}] s")
    usable = sorted((v for v in videos if whole_seconds(v.media.duration_s) >= min_s),
                    key=lambda v: v.video_id)
    if not usable:
        longest = max((v.media.duration_s for v in videos), default=0.0)
        return [], [VNBenchSkip(f"{tag} haystacks", f"no ingested video lasts {min_s} s (longest: "
                         f"{longest:.1f} s of {len(videos)} videos)")]
    haystacks = []
    for i in range(n):
        rng = sample_rng("haystack", seed, tag, i)
        video = usable[rng.randrange(len(usable))]
        total = whole_seconds(video.media.duration_s)
        length = rng.randint(min_s, min(max_s, total))
        start = rng.randint(0, total - length)
        haystacks.append(Haystack(
            haystack_id=f"{video.video_id}-t{start}-l{length}", video_id=video.video_id,
            source=video.stored_path, source_sha256=video.sha256, start_s=start,
            duration_s=length))
    return haystacks, []


def edit_seconds(length_s: int, *, n: int, rng: random.Random) -> list[int]:
    """``n`` haystack seconds in ``[0, length_s)``, pairwise at least 2 apart, sorted.

    Uniform over all such sets: pick ``n`` distinct values from ``length_s - (n - 1)`` and
    spread them by adding ``i`` to the ``i``-th smallest.

    Raises:
        VNBenchError: when the haystack is too short for ``n`` separated seconds.
    """
    room = length_s - (n - 1)
    if n < 1 or room < n:
        raise VNBenchError(f"a {length_s} s haystack cannot hold {n} edited needles with a "
                           f"free second between them (needs {2 * n - 1} s)")
    return [v + i for i, v in enumerate(sorted(rng.sample(range(room), n)))]


def insert_points(length_s: int, *, n: int, rng: random.Random) -> list[int]:
    """``n`` distinct splice points in ``[0, length_s]`` (before second ``b``), sorted.

    Raises:
        VNBenchError: when there are fewer than ``n`` points.
    """
    if n < 1 or length_s + 1 < n:
        raise VNBenchError(f"a {length_s} s haystack has no {n} distinct splice points")
    return sorted(rng.sample(range(length_s + 1), n))


def place(
    method: Method, *, positions: Sequence[int], needle_s: int
) -> list[tuple[int, float, float]]:
    """``(haystack_s, start_s, end_s)`` of each needle in the rendered video, in order.

    Inserted needles shift everything after them by ``needle_s``; edits shift nothing.
    """
    placed = []
    for j, position in enumerate(sorted(positions)):
        if method == "edit":
            placed.append((position, float(position), float(position + 1)))
        else:
            start = float(position + j * needle_s)
            placed.append((position, start, start + needle_s))
    return placed


def rendered_duration(haystack: Haystack, *, needles: Sequence[Needle]) -> float:
    """Length of the rendered video: the haystack plus every inserted needle."""
    inserted = sum(n.end_s - n.start_s for n in needles if n.method == "insert")
    return float(haystack.duration_s) + inserted
