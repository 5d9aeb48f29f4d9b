"""The VNBench subtasks (seed 000, Table 1 and App. A.4, D, E) as data, and what each draws.

=================  ===========  ==========================================================
task               paper        needles
=================  ===========  ==========================================================
``ret_edit1``      Retrieval-E  1 subtitle "The secret word is NAME." drawn on 1 s
``ret_insert1``    Retrieval-I1 1 level-1 (common) image spliced in as a 1 s still
``ret_insert2``    Retrieval-I2 1 level-2 (hard: landmark) image spliced in as a 1 s still
``ord_edit1``      Ordering-E   4 subtitles with 4 different names
``ord_insert1``    Ordering-I1  4 level-1 images of 4 different labels
``ord_insert2``    Ordering-I2  4 level-2 images of 4 different labels
``cnt_edit1``      Counting-E1  count_min..count_max subtitles (names drawn with repeats)
``cnt_edit2``      Counting-E2  one level-1 image pasted in 1–4 regions of each of 4 seconds;
                                the answer counts every copy
``cnt_insert1``    Counting-I   count_min..count_max stills of one level-1 label
``*_long``         Long         ret_edit1, ret_insert1, ord_edit1, ord_insert1 on 10–30 min
``ret_act`` …      Act          1 / 4 / count_min..count_max inserted action clips
=================  ===========  ==========================================================
"""

from __future__ import annotations

import dataclasses
import itertools
import random
from collections.abc import Sequence
from typing import Literal

from PIL import Image

from needleforge.vnbench.assets import ImageSet
from needleforge.vnbench.clips import ClipSet
from needleforge.vnbench.names import subtitle_for
from needleforge.vnbench.records import Group, Method, NeedleKind, NeedleRegion, VNBenchError

ORDER_NEEDLES = 4
#: Counting-E2: seconds edited and the most copies per second (seed 000, App. A.4).
EDIT2_SECONDS = 4
EDIT2_MAX_COPIES = 4
#: Every order of an ordering sample's needles, as positions in their sorted labels.
ORDER_PATTERNS: tuple[tuple[int, ...], ...] = tuple(itertools.permutations(range(ORDER_NEEDLES)))
#: Counting-E2 copies go into distinct cells of this grid, each shrunk by the margin.
GRID = 3
_CELL_MARGIN = 0.08


@dataclasses.dataclass(frozen=True, slots=True)
class SubtaskSpec:
    """What a subtask plants and asks; ``level`` picks the image categories (1 or 2)."""

    task: str
    title: str
    group: Group
    kind: NeedleKind
    method: Method
    level: Literal[1, 2] | None = None
    long: bool = False

    @property
    def form(self) -> str:
        """The wording key: the needle kind, or ``image_edit`` for pasted images."""
        return "image_edit" if self.kind == "image" and self.method == "edit" else self.kind


def _spec(task: str, title: str, group: Group, kind: NeedleKind, method: Method,
          level: Literal[1, 2] | None = None) -> SubtaskSpec:
    return SubtaskSpec(task, title, group, kind, method, level)


SUBTASKS: dict[str, SubtaskSpec] = {s.task: s for s in (
    _spec("ret_edit1", "Retrieval-E", "retrieval", "subtitle", "edit"),
    _spec("ret_insert1", "Retrieval-I1", "retrieval", "image", "insert", 1),
    _spec("ret_insert2", "Retrieval-I2", "retrieval", "image", "insert", 2),
    _spec("ord_edit1", "Ordering-E", "ordering", "subtitle", "edit"),
    _spec("ord_insert1", "Ordering-I1", "ordering", "image", "insert", 1),
    _spec("ord_insert2", "Ordering-I2", "ordering", "image", "insert", 2),
    _spec("cnt_edit1", "Counting-E1", "counting", "subtitle", "edit"),
    _spec("cnt_edit2", "Counting-E2", "counting", "image", "edit", 1),
    _spec("cnt_insert1", "Counting-I", "counting", "image", "insert", 1),
)}
LONG_TASKS = ("ret_edit1", "ret_insert1", "ord_edit1", "ord_insert1")
LONG_SUBTASKS: dict[str, SubtaskSpec] = {
    f"{t}_long": dataclasses.replace(SUBTASKS[t], task=f"{t}_long",
                                     title=f"{SUBTASKS[t].title} (Long)", long=True)
    for t in LONG_TASKS
}
ACT_SUBTASKS: dict[str, SubtaskSpec] = {s.task: s for s in (
    _spec("ret_act", "Retrieval-Act", "retrieval", "clip", "insert"),
    _spec("ord_act", "Ordering-Act", "ordering", "clip", "insert"),
    _spec("cnt_act", "Counting-Act", "counting", "clip", "insert"),
)}


@dataclasses.dataclass(frozen=True, slots=True)
class Pools:
    """What needles of one haystack may be drawn from (images already filtered)."""

    names: tuple[str, ...]
    images: ImageSet
    clips: ClipSet
    level_categories: dict[int, tuple[str, ...]]
    count_min: int
    count_max: int


@dataclasses.dataclass(frozen=True, slots=True)
class NeedleContent:
    """One needle's content before placement."""

    label: str
    text: str | None = None
    asset: str | None = None
    copies: int = 1


@dataclasses.dataclass(frozen=True, slots=True)
class Draft:
    """A subtask's needles in time order, the retrieval pool, and the counted label."""

    contents: tuple[NeedleContent, ...]
    pool: tuple[str, ...] = ()
    counted: str = ""


def labels_for(spec: SubtaskSpec, *, pools: Pools) -> tuple[str, ...]:
    """The candidate labels (or names) of ``spec`` in ``pools``, sorted."""
    if spec.kind == "subtitle":
        return tuple(sorted(pools.names))
    if spec.kind == "clip":
        return pools.clips.labels()
    return pools.images.labels(pools.level_categories.get(spec.level or 1, ()))


def _content(spec: SubtaskSpec, *, label: str, pools: Pools, rng: random.Random,
             copies: int = 1) -> NeedleContent:
    if spec.kind == "subtitle":
        return NeedleContent(label=label, text=subtitle_for(label))
    files = ([c.path for c in pools.clips.of_label(label)] if spec.kind == "clip"
             else [i.path for i in pools.images.of_label(label)])
    return NeedleContent(label=label, asset=str(rng.choice(files)), copies=copies)


def count_bounds(spec: SubtaskSpec, *, pools: Pools) -> tuple[int, int]:
    """The counts a sample of counting ``spec`` can plant: Counting-E2's copies over its
    seconds (1 to :data:`EDIT2_MAX_COPIES` each), else ``count_min..count_max`` needles."""
    if spec.kind == "image" and spec.method == "edit":
        return EDIT2_SECONDS, EDIT2_SECONDS * EDIT2_MAX_COPIES
    return pools.count_min, pools.count_max


def split_copies(total: int, *, rng: random.Random) -> list[int]:
    """Copies per edited second of Counting-E2 (each 1..4) adding up to ``total``: one each,
    then one more at a time to a second drawn among those with room.

    Raises:
        VNBenchError: ``total`` outside :func:`count_bounds` of Counting-E2.
    """
    if not EDIT2_SECONDS <= total <= EDIT2_SECONDS * EDIT2_MAX_COPIES:
        raise VNBenchError(f"{total} copies cannot be spread over {EDIT2_SECONDS} seconds of "
                           f"1..{EDIT2_MAX_COPIES} copies")
    copies = [1] * EDIT2_SECONDS
    for _ in range(total - EDIT2_SECONDS):
        room = [i for i, c in enumerate(copies) if c < EDIT2_MAX_COPIES]
        copies[rng.choice(room)] += 1
    return copies


def draft(spec: SubtaskSpec, *, pools: Pools, rng: random.Random, count: int | None = None,
          order: int | None = None, label_index: int | None = None) -> Draft:
    """Draw the needles of one sample of ``spec``.

    ``count`` is the answer of a counting sample (needles, or Counting-E2 copies),
    ``order`` the index in :data:`ORDER_PATTERNS` of an ordering sample's true order over
    its sorted labels and ``label_index`` the retrieval answer's index in
    :func:`labels_for` (modulo its size); all are balanced by the caller over a task's samples
    (:mod:`~needleforge.vnbench.compose`). None draws them here, uniformly.

    Raises:
        VNBenchError: when the pool is too small for the subtask (the message says how
            small), so the caller can skip the sample and report why; a ``count`` outside
            :func:`count_bounds`.
    """
    pool = labels_for(spec, pools=pools)
    if spec.group == "retrieval":
        _need(spec, pool=pool, n=4)
        label = rng.choice(pool) if label_index is None else pool[label_index % len(pool)]
        return Draft((_content(spec, label=label, pools=pools, rng=rng),), pool=pool)
    if spec.group == "ordering":
        _need(spec, pool=pool, n=ORDER_NEEDLES)
        chosen = rng.sample(pool, ORDER_NEEDLES)
        if order is not None:
            ranked = sorted(chosen)
            chosen = [ranked[i] for i in ORDER_PATTERNS[order]]
        return Draft(tuple(_content(spec, label=label, pools=pools, rng=rng)
                           for label in chosen))
    _need(spec, pool=pool, n=1)
    low, high = count_bounds(spec, pools=pools)
    n = rng.randint(low, high) if count is None else count
    if not low <= n <= high:
        raise VNBenchError(f"{spec.title} plants {low}..{high}, not {n}")
    if spec.kind == "image" and spec.method == "edit":
        label = rng.choice(pool)
        contents = tuple(_content(spec, label=label, pools=pools, rng=rng, copies=c)
                         for c in split_copies(n, rng=rng))
        return Draft(contents, counted=label)
    if spec.kind == "subtitle":
        return Draft(tuple(_content(spec, label=rng.choice(pool), pools=pools, rng=rng)
                           for _ in range(n)))
    label = rng.choice(pool)
    return Draft(tuple(_content(spec, label=label, pools=pools, rng=rng) for _ in range(n)),
                 counted=label)


def _need(spec: SubtaskSpec, *, pool: Sequence[str], n: int) -> None:
    if len(pool) < n:
        what = {"subtitle": "names", "clip": "clip labels"}.get(spec.kind, "image labels")
        raise VNBenchError(f"{len(pool)} usable {what} ({', '.join(pool) or 'none'}); "
                           f"{spec.title} needs {n}")


def grid_regions(asset: str, *, copies: int, width: int, height: int,
                 rng: random.Random) -> tuple[NeedleRegion, ...]:
    """Where ``copies`` copies of image ``asset`` go: distinct cells of a 3x3 grid.

    Each copy keeps the image's aspect ratio, fits its cell less an 8 % margin and is
    centred in it; regions are sorted top to bottom, left to right.

    Raises:
        VNBenchError: when the image cannot be read or more than 9 copies are asked for.
    """
    if not 1 <= copies <= GRID * GRID:
        raise VNBenchError(f"copies = {copies} must be in 1..{GRID * GRID}")
    try:
        with Image.open(asset) as opened:
            img_w, img_h = opened.size
    except OSError as err:
        raise VNBenchError(f"{asset}: not a readable image ({err})") from None
    cells = sorted(rng.sample(range(GRID * GRID), copies))
    cell_w, cell_h = width // GRID, height // GRID
    regions = []
    for cell in cells:
        box_w, box_h = cell_w * (1 - 2 * _CELL_MARGIN), cell_h * (1 - 2 * _CELL_MARGIN)
        scale = min(box_w / img_w, box_h / img_h)
        w, h = max(2, round(img_w * scale)), max(2, round(img_h * scale))
        x = (cell % GRID) * cell_w + (cell_w - w) // 2
        y = (cell // GRID) * cell_h + (cell_h - h) // 2
        regions.append(NeedleRegion(x=x, y=y, width=w, height=h))
    return tuple(regions)
