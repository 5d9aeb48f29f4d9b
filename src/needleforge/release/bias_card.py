"""The card's "Bias audit" section and its two plots (:mod:`needleforge.quality.bias`).

Why on the card: a benchmark's score means something only if its answers cannot be guessed
without watching; the card shows how well baselines that never open a video do on this very
release, beside the random baseline, with the answer-position histogram, the right options of
the counting and ordering tasks and the letter balance that explain them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from needleforge.quality.bias import BaselineScore, BiasAudit
from needleforge.records.questions import LETTERS
from needleforge.release.markup import Block, Figure, Paragraph, Section, Table


def write_bias_plots(root: Path, audit: BiasAudit) -> list[Figure]:
    """Write the audit's plots under ``root/plots``; returns them as card images."""
    from needleforge.release import plots  # matplotlib costs ~0.4 s to import: only here

    (root / "plots").mkdir(exist_ok=True)
    images: list[Figure] = []
    if audit.n_grounding:
        plot = plots.answer_position_bars(root, bins=audit.position_bins,
                                           multi=audit.multi_bins)
        images.append(Figure(plot.path, plot.alt))
    blind = [s for s in audit.scores if s.baseline != "random"]
    if blind:
        panels = {s.metric: [plots.ScoreBar(b.baseline, b.score, b.ci_low, b.ci_high)
                             for b in blind if b.metric == s.metric] for s in blind}
        randoms = {s.metric: s.random for s in audit.scores if s.baseline == "random"}
        plot = plots.blind_score_bars(root, panels=panels, random=randoms, margin=audit.margin)
        images.append(Figure(plot.path, plot.alt))
    return images


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f} %"


def _verdict(audit: BiasAudit) -> Paragraph:
    margin = f"{100 * audit.margin:g} points"
    failing = audit.failing()
    if not failing:
        return Paragraph(
            f"No blind baseline beats the random baseline by more than {margin} beyond "
            "sampling error: the low end of every interval is within the margin (the "
            "intervals hold at 95 % together). Blind baselines answer from questions.jsonl "
            "alone (question text, options, durations), each fitted on one half of the "
            "release and scored on the other (4 splits averaged); random is the random "
            "baseline's expected score on the same questions.")
    names = ", ".join(f"{s.baseline} ({s.metric}: {s.summary()})" for s in failing)
    return Paragraph(f"FAILED: {names} beat(s) the random baseline by more than {margin} "
                     "even at the low end of its interval: these answers can be guessed "
                     "without watching the videos.")


def _score_table(scores: Sequence[BaselineScore], margin: float) -> Table:
    rows = tuple(
        (s.baseline, s.metric, str(s.n), _pct(s.score),
         "exact" if s.baseline == "random" and s.ci_low == s.ci_high
         else f"{_pct(s.ci_low)} – {_pct(s.ci_high)}",
         _pct(s.random), f"{100 * s.excess:+.1f}",
         "reference" if s.baseline == "random" else
         "FAIL" if s.exceeds(margin) else "pass")
        for s in scores)
    return Table(("Baseline", "Metric", "Questions / tries", "Score", "Interval", "Random",
                  "Excess (points)", "Gate"), rows,
                 caption="Blind baselines against the random baseline's expected score "
                 "(intervals: 95 % together, cluster bootstrap)")


def _positions(audit: BiasAudit) -> tuple[Block, ...]:
    if not audit.n_grounding:
        return ()
    flat = ("" if audit.position_p is None else
            f"; chi-square test that single-needle answers sit evenly among the starts they "
            f"could have (start / (duration - answer length)): p = {audit.position_p:.3g}")
    text = (f"Answer span starts, {audit.n_spans} spans of {audit.n_grounding} grounding "
            f"questions: {_pct(audit.first_tenth)} in the first tenth of the video, "
            f"{_pct(audit.at_zero)} at 0 s{flat}.")
    headers = ("Answer spans", *(f"{10 * i}–{10 * (i + 1)} %"
                                 for i in range(len(audit.position_bins))))
    rows = (("all", *(str(c) for c in audit.position_bins)),
            ("of multi-needle questions", *(str(c) for c in audit.multi_bins)))
    return (Paragraph(text), Table(headers, rows,
                                   caption="Answer spans per tenth of the video they start in"))


def _options(audit: BiasAudit) -> tuple[Block, ...]:
    rows = []
    for task, counts in sorted(audit.options.items()):
        n = sum(counts.values())
        top, top_n = min(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        ranks = audit.ranks.get(task)
        rows.append((task, str(n), str(len(counts)), f"{top} ({top_n}/{n})",
                     " / ".join(str(r) for r in ranks) if ranks else "-"))
    if not rows:
        return ()
    return (Table(("Task", "Samples", "Distinct right texts", "Most frequent right text",
                   "Right count is 1st / 2nd / 3rd / 4th smallest"), tuple(rows),
                  caption="Right options of the counting and ordering tasks (one per sample)"),)


def _letters(audit: BiasAudit) -> tuple[Block, ...]:
    if not audit.letters:
        return ()
    rows = tuple((str(t), *(str(c) for c in counts))
                 for t, counts in sorted(audit.letters.items()))
    p = "" if audit.letter_p is None else f" (try 0 against even letters: chi-square p = " \
        f"{audit.letter_p:.3g})"
    return (Table(("Try", *LETTERS), rows, caption=f"Right letter per try{p}"),)


def bias_section(audit: BiasAudit, *, images: Sequence[Figure] = ()) -> Section:
    """The card section of ``audit``, showing ``images`` (:func:`write_bias_plots`)."""
    by_name = {Path(i.path).name: i for i in images}
    blocks: list[Block] = [_verdict(audit), _score_table(audit.scores, audit.margin)]
    if "blind_baselines.png" in by_name:
        blocks.append(by_name["blind_baselines.png"])
    blocks += _positions(audit)
    if "answer_positions.png" in by_name:
        blocks.append(by_name["answer_positions.png"])
    blocks += [*_options(audit), *_letters(audit)]
    return Section("Bias audit", tuple(blocks))
