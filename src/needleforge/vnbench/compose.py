"""One sample from a subtask, a haystack and its needle pools: needles, places, question.

Everything is drawn from one generator seeded by (seed, task, haystack index, and the
haystack's source hash, start and length); the sample id hashes the same values,
so a sample never changes when other tasks or samples are added, and the same inputs give
the same sample on every machine.

What a blind model could learn across samples is balanced over each task's samples instead
of drawn per sample (:func:`~needleforge.vnbench.plan.balanced_draw`, by haystack index): the
correct option's position, the retrieval answer among its candidates, the true order's
pattern (ordering), and the counting options' centre and the truth's rank among them
(counting; see :func:`~needleforge.vnbench.questions.draw_counts`). Each is drawn from its own
stream, so none predicts another.
"""

from __future__ import annotations

import dataclasses
import random

from needleforge.vnbench.plan import (
    balanced_draw,
    edit_seconds,
    insert_points,
    place,
    rendered_duration,
    sample_rng,
    short_hash,
)
from needleforge.vnbench.questions import (
    CountDraw,
    counting_options,
    draw_counts,
    ordering_options,
    question_text,
    retrieval_options,
)
from needleforge.vnbench.records import (
    N_OPTIONS,
    Haystack,
    Needle,
    NeedleRegion,
    VNBenchError,
    VNBenchSample,
)
from needleforge.vnbench.subtasks import (
    ORDER_PATTERNS,
    Draft,
    Pools,
    SubtaskSpec,
    count_bounds,
    draft,
    grid_regions,
    labels_for,
)

#: Length of an edited needle and of an inserted still (seed 000, Sec. 3.2: 1 second).
NEEDLE_S = 1


@dataclasses.dataclass(frozen=True, slots=True)
class Layout:
    """Frame size (for region placement), clip needle length, counting option spread."""

    width: int
    height: int
    clip_s: int
    count_sigma: float


def compose_sample(
    spec: SubtaskSpec, *, haystack: Haystack, pools: Pools, index: int, seed: int,
    layout: Layout,
) -> VNBenchSample:
    """The sample of ``spec`` on ``haystack`` (see the module docstring for determinism).

    Raises:
        VNBenchError: when the pools are too small or the haystack too short for the
            subtask; the message says which, so the stage can report the skip.
    """
    where = (haystack.source_sha256, haystack.start_s, haystack.duration_s)
    rng = sample_rng("sample", seed, spec.task, index, *where)
    counts = _count_draw(spec, pools=pools, index=index, seed=seed, layout=layout, rng=rng)
    order = (balanced_draw(len(ORDER_PATTERNS), index=index, parts=("order", seed, spec.task))
             if spec.group == "ordering" else None)
    label_index = (balanced_draw(len(labels_for(spec, pools=pools)) or 1, index=index,
                                 parts=("label", seed, spec.task))
                   if spec.group == "retrieval" else None)
    drafted = draft(spec, pools=pools, rng=rng, count=counts.truth if counts else None,
                    order=order, label_index=label_index)
    needles = _needles(spec, drafted=drafted, haystack=haystack, rng=rng, layout=layout)
    slot = balanced_draw(N_OPTIONS, index=index, parts=("slot", seed, spec.task))
    options, answer_index = _options(spec, drafted=drafted, needles=needles, rng=rng,
                                     counts=counts, slot=slot)
    label = drafted.counted
    question = question_text(spec.group, form=spec.form, rng=rng, label=label)
    sample_id = f"vnb-{spec.task}-{short_hash(seed, spec.task, index, *where)}"
    return VNBenchSample(
        sample_id=sample_id, task=spec.task, group=spec.group, needle_kind=spec.kind,
        method=spec.method, haystack=haystack, needles=needles, question=question,
        options=tuple(options), answer_index=answer_index,
        duration_s=rendered_duration(haystack, needles=needles), video=f"{sample_id}.mp4",
        seed=seed)


def _needles(spec: SubtaskSpec, *, drafted: Draft, haystack: Haystack, rng: random.Random,
             layout: Layout) -> tuple[Needle, ...]:
    """Place the drafted contents on the haystack's whole-second grid."""
    n = len(drafted.contents)
    needle_s = layout.clip_s if spec.kind == "clip" else NEEDLE_S
    if spec.method == "edit":
        positions = edit_seconds(haystack.duration_s, n=n, rng=rng)
    else:
        positions = insert_points(haystack.duration_s, n=n, rng=rng)
    needles = []
    for content, (position, start_s, end_s) in zip(
            drafted.contents, place(spec.method, positions=positions, needle_s=needle_s),
            strict=True):
        regions: tuple[NeedleRegion, ...] = ()
        if spec.kind == "image" and spec.method == "edit" and content.asset is not None:
            regions = grid_regions(content.asset, copies=content.copies, width=layout.width,
                                   height=layout.height, rng=rng)
        needles.append(Needle(kind=spec.kind, method=spec.method, label=content.label,
                              haystack_s=position, start_s=start_s, end_s=end_s,
                              text=content.text, asset=content.asset, regions=regions))
    return tuple(needles)


def _count_draw(spec: SubtaskSpec, *, pools: Pools, index: int, seed: int, layout: Layout,
                rng: random.Random) -> CountDraw | None:
    """A counting sample's options and truth (None for other groups): the centre and the
    truth's rank balanced over the task's samples, each from its own stream."""
    if spec.group != "counting":
        return None
    low, high = count_bounds(spec, pools=pools)
    centre = low + balanced_draw(high - low + 1, index=index, parts=("centre", seed, spec.task))
    rank = balanced_draw(N_OPTIONS, index=index, parts=("rank", seed, spec.task))
    return draw_counts(low=low, high=high, centre=centre, rank=rank, sigma=layout.count_sigma,
                       rng=rng)


def _options(spec: SubtaskSpec, *, drafted: Draft, needles: tuple[Needle, ...],
             rng: random.Random, counts: CountDraw | None, slot: int) -> tuple[list[str], int]:
    if spec.group == "retrieval":
        return retrieval_options(needles[0].label, pool=drafted.pool, rng=rng, slot=slot)
    if spec.group == "ordering":
        return ordering_options([n.label for n in needles], rng=rng, slot=slot)
    planted = sum(n.copies for n in needles)
    if counts is None or counts.truth != planted:
        raise VNBenchError(f"{spec.title}: {planted} planted, options drawn for "
                           f"{counts.truth if counts else None}")
    return counting_options(counts, rng=rng, slot=slot)
