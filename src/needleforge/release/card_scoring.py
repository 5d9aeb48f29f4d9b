"""The card's "Scoring" section: which tIoU a number uses, how long the answer windows are, and
how far apart two scores must be before this release ranks them.

Why on the card: a grounding score means little without its definition (whole seconds
inflate the overlap of short windows, ``docs/metrics.md``) and without the window lengths it
was measured on; a VNBench score means little without its sampling error, which the sample
size decides. The card is written before any model that watches the videos is scored, so it
scores the ones that do not: the random baseline and the blind baselines answer from the
questions alone, exactly as the evaluate stage's ``--model random`` (16 frame instants) and
``--model <blind>`` do, so their VNBench overall and 95 % interval here are the leaderboard's.
The card names the pairs of them whose intervals overlap, and the score a model that reads
the needles must beat (the highest blind upper end) to be told apart from all of them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from needleforge.evaluate.intervals import Interval, overlaps, stratified_ci
from needleforge.evaluate.records import VNBENCH_TASKS, question_from_json, vnbench_group
from needleforge.records.questions import BUCKETS
from needleforge.release.file_io import Record
from needleforge.release.markup import Paragraph, Section, Table

#: The score whose interval the card shows as typical (VNBench overall, circular accuracy).
TYPICAL_SCORE = 0.2

DEFINITIONS = (
    "Grounding scores (needleforge score, the lmms-eval and VLMEvalKit hooks, the leaderboard) "
    "measure tIoU on exact seconds: a window [s, e] covers e - s seconds, as moment_detr "
    "measures it. The NeMo paper's figure is reported beside it, named 'second sets': a "
    "window covers the whole seconds floor(s) .. ceil(e), which rounds every window outwards "
    "and inflates the overlap of short ones. A prediction shifted by half its window's length "
    "overlaps it by 1/3 in exact seconds (a miss at tIoU 0.5) but, for a 2 s window, by 2 of "
    "4 whole seconds (a hit).")


def _window_rows(records: Sequence[Record]) -> tuple[tuple[str, ...], ...]:
    by_bucket: dict[str, list[float]] = defaultdict(list)
    for r in records:
        if r.get("family") == "nemo":
            by_bucket[str(r["bucket"])].extend(float(e) - float(s) for s, e in r["answer_spans"])
    rows = []
    for bucket in (*BUCKETS, *sorted(set(by_bucket) - set(BUCKETS))):
        lengths = by_bucket.get(bucket)
        if not lengths:
            continue
        q = np.quantile(lengths, [0.0, 0.1, 0.5, 0.9, 1.0])
        rows.append((bucket, str(len(lengths)), *(f"{v:.2f}" for v in q),
                     f"{np.mean(np.asarray(lengths) < 5.0):.0%}"))
    return tuple(rows)


def _overall(task_means: Mapping[str, npt.NDArray[np.float64]]) -> npt.NDArray[np.float64]:
    groups: dict[str, list[npt.NDArray[np.float64]]] = defaultdict(list)
    for task, means in task_means.items():
        groups[vnbench_group(task) or "other"].append(means)
    return np.asarray(np.mean([np.mean(v, axis=0) for v in groups.values()], axis=0))


def _vnbench_resolution(records: Sequence[Record]) -> Paragraph | None:
    samples: dict[str, set[str]] = defaultdict(set)
    for r in records:
        if r.get("family") == "vnbench" and r["task"] in VNBENCH_TASKS:
            samples[str(r["task"])].add(str(r["question_id"]))
    if not samples:
        return None
    # a model right on TYPICAL_SCORE of every task's samples (as evenly as the counts allow)
    typical = {t: [float(i < round(TYPICAL_SCORE * len(ids))) for i in range(len(ids))]
               for t, ids in samples.items()}
    score = float(_overall({t: np.asarray([np.mean(v)]) for t, v in typical.items()})[0])
    low, high = stratified_ci(typical, _overall)
    sizes = sorted({len(v) for v in samples.values()})
    per_task = " to ".join(str(n) for n in (sizes[0], sizes[-1])) if len(sizes) > 1 \
        else str(sizes[0])
    return Paragraph(
        f"VNBench: {per_task} samples per official task, {sum(map(len, samples.values()))} in "
        f"all. At this size a model scoring {100 * score:.1f} % VNBench overall has a 95 % "
        f"interval of {100 * low:.1f}-{100 * high:.1f} % (samples resampled within each task), "
        "so scores closer than that are not told apart. Two models whose intervals overlap are "
        "not ranked by this release: the leaderboard (needleforge leaderboard) gives every "
        "model's interval and names each pair that overlaps.")


def blind_vnbench_scores(records: Sequence[Record]) -> dict[str, tuple[float, Interval]]:
    """VNBench overall and its interval of the random and blind baselines on the VNBench
    tries of ``records``, as the leaderboard would give them (empty without VNBench)."""
    from needleforge.evaluate.blind import (  # the baselines: only when a card is written
        BLIND_NAMES,
        blind_baseline,
        blind_predictions,
        random_answer,
    )
    from needleforge.evaluate.score import score

    everything = [question_from_json(r) for r in records]
    keep = [r.get("family") == "vnbench" for r in records]
    questions = [q for q, k in zip(everything, keep, strict=True) if k]
    if not questions:
        return {}
    # cross-fitted over the whole release, as `needleforge evaluate` fits them
    answers = {"random": [random_answer(q) for q in everything]}
    answers |= {name: blind_predictions(everything, blind_baseline(name)) for name in BLIND_NAMES}
    out: dict[str, tuple[float, Interval]] = {}
    for name, predictions in answers.items():
        kept = [p for p, k in zip(predictions, keep, strict=True) if k]
        summary = score(questions, kept).vnbench
        if summary is not None:
            out[name] = (summary.overall, summary.overall_ci)
    return out


def _blind_blocks(records: Sequence[Record]) -> list[Paragraph | Table]:
    scores = blind_vnbench_scores(records)
    if not scores:
        return []
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1][0], kv[0]))
    table = Table(("Model", "VNBench overall", "95 % interval"), tuple(
        (name, f"{100 * v:.2f} %", f"{100 * ci[0]:.1f}-{100 * ci[1]:.1f} %")
        for name, (v, ci) in ranked), caption="Models that never open a video, on this "
        "release's VNBench tries (the leaderboard's rows of the same names)")
    pairs = [f"{a} and {b}" for i, (a, (_, ci_a)) in enumerate(ranked)
             for b, (_, ci_b) in ranked[i + 1:] if overlaps(ci_a, ci_b)]
    bar = max(ci[1] for name, (_, ci) in scores.items() if name != "random")
    text = ("Their intervals overlap, so this release does not tell apart: "
            + ", ".join(pairs) + "." if pairs else
            "No two of their intervals overlap.")
    return [table, Paragraph(
        f"{text} A model that reads the needles is told apart from every blind baseline only "
        f"when the low end of its VNBench interval exceeds {100 * bar:.1f} % (the highest "
        "blind upper end), and from random when it exceeds "
        f"{100 * scores['random'][1][1]:.1f} %; the leaderboard gives the embedded baseline's "
        "interval and names every pair that overlaps. Random is not the chance level to beat: "
        "VNBench's circular evaluation counts a try only when every rotation of its options "
        "is answered right, which random letters almost never do, while a blind guesser that "
        "picks the same option text in every rotation is right whenever its prior is.")]


def scoring_section(records: Sequence[Record], *, min_window_s: float,
                    n_short: int) -> Section:
    """The section for the shipped ``records``; ``n_short`` questions were left out for an
    answer window shorter than ``min_window_s``."""
    blocks: list[Paragraph | Table] = [Paragraph(DEFINITIONS)]
    rows = _window_rows(records)
    if rows:
        blocks.append(Paragraph(
            f"Every answer window lasts at least {min_window_s:g} s "
            f"(quality.min_answer_window_s, checked by the gate); {n_short} question(s) with a "
            "shorter one were left out. At tIoU 0.5 a prediction of the right length may be "
            "off by a third of its window: 1 s for a 3 s window, about one frame step of a "
            "model that samples a frame a second."))
        blocks.append(Table(("Bucket", "Answer windows", "Shortest (s)", "10 %", "Median",
                             "90 %", "Longest (s)", "Under 5 s"), rows,
                            caption="Answer window lengths per montage bucket (every span of "
                            "every grounding question)"))
    resolution = _vnbench_resolution(records)
    if resolution is not None:
        blocks += [resolution, *_blind_blocks(records)]
    return Section("Scoring", tuple(blocks))
