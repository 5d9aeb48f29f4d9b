"""The card's plots as PNG files (matplotlib, Agg, no pyplot state).

Why figures are built with :class:`matplotlib.figure.Figure` inside matplotlib's default style:
no global pyplot registry to leak figures between calls, and a user's ``matplotlibrc`` cannot
change the bytes; the PNG carries no software version string. Same data → same PNG bytes.
Each function writes one file and returns its path relative to the release root.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib.style
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from needleforge.release.stats import PassRate

_DPI = 100
_COLOURS = {"object": "#4c72b0", "scene": "#dd8452"}


@dataclasses.dataclass(frozen=True, slots=True)
class Plot:
    """A written plot: ``path`` relative to the release root, ``alt`` its description."""

    path: str
    alt: str


def _save(fig: Figure, root: Path, rel: str) -> None:
    fig.tight_layout()
    fig.savefig(root / rel, dpi=_DPI, format="png", metadata={"Software": None})


def duration_histogram(
    root: Path, *, bucket: str, durations_s: Sequence[float], bins: int
) -> Plot:
    """Montage durations of one bucket (the paper's Fig. 9), seconds or minutes on the x axis."""
    rel = f"plots/montage_duration_{bucket}.png"
    minutes = bucket != "short"
    values = [d / 60.0 if minutes else d for d in durations_s]
    with matplotlib.style.context("default"):
        fig = Figure(figsize=(6, 3.2))
        ax = fig.add_subplot()
        ax.hist(values, bins=bins, color="#4c72b0", edgecolor="white")
        ax.set_xlabel("montage duration (min)" if minutes else "montage duration (s)")
        ax.set_ylabel("montages")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title(f"{bucket.capitalize()} montages (n = {len(values)})")
        _save(fig, root, rel)
    return Plot(rel, f"Histogram of {bucket} montage durations")


def label_bars(
    root: Path, *, name: str, title: str, counts: Mapping[str, Counter[str]], top_n: int
) -> Plot:
    """Horizontal bars of the ``top_n`` most frequent labels, stacked by needle type."""
    rel = f"plots/{name}.png"
    total: Counter[str] = Counter()
    for c in counts.values():
        total.update(c)
    labels = [k for k, _ in sorted(total.items(), key=lambda kv: (-kv[1], kv[0]))[:top_n]]
    labels.reverse()  # largest at the top
    with matplotlib.style.context("default"):
        fig = Figure(figsize=(6, 1.2 + 0.28 * max(len(labels), 1)))
        ax = fig.add_subplot()
        left = [0] * len(labels)
        for kind in sorted(counts):
            widths = [counts[kind][k] for k in labels]
            ax.barh(labels, widths, left=left, label=kind,
                    color=_COLOURS.get(kind, "#8c8c8c"))
            left = [a + b for a, b in zip(left, widths, strict=True)]
        ax.set_xlabel("questions")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title(title)
        if len(counts) > 1:
            ax.legend(loc="best")
        _save(fig, root, rel)
    return Plot(rel, title)


def needle_count_bars(root: Path, *, counts: Mapping[str, Counter[int]]) -> Plot:
    """Questions per number of target needles, grouped by needle type."""
    rel = "plots/needles_per_question.png"
    ns = sorted({n for c in counts.values() for n in c})
    kinds = sorted(counts)
    width = 0.8 / max(len(kinds), 1)
    with matplotlib.style.context("default"):
        fig = Figure(figsize=(6, 3.2))
        ax = fig.add_subplot()
        for i, kind in enumerate(kinds):
            xs = [n + (i - (len(kinds) - 1) / 2) * width for n in ns]
            ax.bar(xs, [counts[kind][n] for n in ns], width=width, label=kind,
                   color=_COLOURS.get(kind, "#8c8c8c"))
        ax.set_xticks(ns)
        ax.set_xlabel("target needles per question")
        ax.set_ylabel("questions")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title("Needles per question")
        ax.legend()
        _save(fig, root, rel)
    return Plot(rel, "Bar chart of questions per number of target needles")


def pass_rate_bars(root: Path, *, rates: Sequence[PassRate]) -> Plot:
    """Verification pass rate per verifier and needle type, with the verdict counts."""
    rel = "plots/verification_pass_rates.png"
    labels = [f"{r.verifier}\n{r.needle_type}" for r in rates]
    with matplotlib.style.context("default"):
        fig = Figure(figsize=(6, 3.4))
        ax = fig.add_subplot()
        bars = ax.bar(labels, [100 * r.rate for r in rates],
                      color=[_COLOURS.get(r.needle_type, "#8c8c8c") for r in rates])
        ax.bar_label(bars, labels=[f"{r.passed}/{r.n}" for r in rates])
        ax.set_ylim(0, 110)
        ax.set_ylabel("pass rate (%)")
        ax.set_title("Verification pass rate by verifier and needle type")
        _save(fig, root, rel)
    return Plot(rel, "Bar chart of verification pass rates")


def answer_position_bars(root: Path, *, bins: Sequence[int], multi: Sequence[int]) -> Plot:
    """Answer spans per tenth of the video they start in (``bins``, of which ``multi`` belong
    to multi-needle questions: stacked), with the count a flat histogram would put in each
    (the bias audit's position histogram)."""
    rel = "plots/answer_positions.png"
    single = [a - b for a, b in zip(bins, multi, strict=True)]
    labels = [f"{10 * i}–{10 * (i + 1)}" for i in range(len(bins))]
    with matplotlib.style.context("default"):
        fig = Figure(figsize=(6, 3.2))
        ax = fig.add_subplot()
        ax.bar(labels, single, color="#4c72b0", label="single-needle")
        ax.bar(labels, list(multi), bottom=single, color="#dd8452", label="multi-needle")
        if bins:
            ax.axhline(sum(bins) / len(bins), color="#c44e52", linestyle="--", label="flat")
        ax.legend(loc="best", fontsize=7)
        ax.set_xlabel("start of the answer span (% of the video)")
        ax.set_ylabel("answer spans")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title(f"Answer positions ({sum(bins)} spans)")
        ax.tick_params(axis="x", labelsize=7)
        _save(fig, root, rel)
    return Plot(rel, "Bar chart of where grounding answer spans start, in tenths of the video")


@dataclasses.dataclass(frozen=True, slots=True)
class ScoreBar:
    """One bar of :func:`blind_score_bars`: a score and its interval, as fractions."""

    label: str
    score: float
    low: float
    high: float


def blind_score_bars(root: Path, *, panels: Mapping[str, Sequence[ScoreBar]],
                     random: Mapping[str, float], margin: float) -> Plot:
    """Each blind baseline's score with its interval, one panel per metric, beside the
    random baseline's expected score (line) and the margin above it (dotted line)."""
    rel = "plots/blind_baselines.png"
    names = list(panels)  # in the order given (the audit's)
    with matplotlib.style.context("default"):
        fig = Figure(figsize=(6, 1.4 + 1.8 * max(len(names), 1)))
        for k, name in enumerate(names):
            ax = fig.add_subplot(max(len(names), 1), 1, k + 1)
            bars = list(panels[name])
            ys = list(range(len(bars)))
            scores = [100 * b.score for b in bars]
            errors = [[100 * (b.score - b.low) for b in bars],
                      [100 * (b.high - b.score) for b in bars]]
            ax.barh(ys, scores, xerr=errors, color="#4c72b0", capsize=3)
            ax.set_yticks(ys, [b.label for b in bars])
            ax.axvline(100 * random[name], color="#c44e52", label="random")
            ax.axvline(100 * (random[name] + margin), color="#c44e52", linestyle=":",
                       label=f"random + {100 * margin:g} points")
            ax.set_xlabel(f"{name} (%)")
            ax.legend(loc="best", fontsize=7)
        fig.suptitle("Blind baselines (questions and metadata only) vs random")
        _save(fig, root, rel)
    return Plot(rel, "Bar chart of each blind baseline's score with its interval, beside random")
