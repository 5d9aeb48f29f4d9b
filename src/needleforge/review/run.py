"""The review step: contact sheets, an index, a verdict template and the judged report.

:func:`write_review` takes a store's questions (read by :func:`needleforge.stages.review
.review_store`), chooses the ones to review (:func:`~needleforge.review.items.choose_items`),
writes one sheet per question, then ``index.html`` and ``verdicts_template.yaml``, each
published atomically, and — given a verdict file — counts the human verdicts
(:func:`~needleforge.review.report.judge_report`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from needleforge.media.outputs import write_text_atomic
from needleforge.records import Scene, Video
from needleforge.review.index import IndexRow, index_html
from needleforge.review.items import ReviewItem, choose_items
from needleforge.review.report import Report, judge_report
from needleforge.review.sheets import (
    SegmentFrames,
    prepare_out_dir,
    render_sheet,
    sheet_name,
    write_sheet,
)
from needleforge.review.verdicts import FileVerdict, question_key, template_yaml

INDEX_NAME = "index.html"
TEMPLATE_NAME = "verdicts_template.yaml"


@dataclasses.dataclass(frozen=True, slots=True)
class ReviewOutcome:
    """What :func:`write_review` wrote; ``report`` is None without a verdict file."""

    out_dir: Path
    sheets: tuple[Path, ...]
    index: Path
    template: Path
    missing_frames: int
    report: Report | None
    problems: tuple[str, ...] = ()  # why frames are missing: one message per video


@dataclasses.dataclass(frozen=True, slots=True)
class ReviewInputs:
    """What a review is drawn from: every question of the store ``source`` as a review item
    (:func:`~needleforge.review.items.build_items`), and the videos and scenes of its frames."""

    items: Sequence[ReviewItem]
    videos: Mapping[str, Video]
    scenes: Mapping[str, Scene]
    source: Path


def _draw_all(chosen: Sequence[ReviewItem], frames: SegmentFrames, out: Path,
              verdicts: Mapping[str, FileVerdict],
              on_sheet: Callable[[int, int], None] | None) -> list[IndexRow]:
    """Render and publish every chosen question's sheet; its index rows."""
    rows: list[IndexRow] = []
    try:
        for done, item in enumerate(chosen, start=1):
            key = question_key(item.question, item.montage)
            row = IndexRow(item, sheet_name(item.question_id), key, verdicts.get(key))
            image = render_sheet(item, frames, key=key, verdict=row.verdict)
            write_sheet(out / row.sheet, image)
            rows.append(row)
            if on_sheet is not None:
                on_sheet(done, len(chosen))
    finally:
        frames.close()
    return rows


def write_review(
    inputs: ReviewInputs,
    out: Path,
    *,
    verdicts: Mapping[str, FileVerdict],
    verdicts_path: Path | None = None,
    all_buckets: bool = False,
    limit: int | None = None,
    on_sheet: Callable[[int, int], None] | None = None,
) -> ReviewOutcome:
    """Write the review folder ``out`` for the questions of ``inputs``; ``verdicts`` are those
    of the verdict file ``verdicts_path`` (a report is counted only when it is given).

    ``on_sheet(done, total)`` is called after each sheet (a progress bar).

    Raises:
        StoreError: the store's records are inconsistent (a segment's scene is missing).
        OutputError: ``out`` cannot be created or written.
    """
    chosen = choose_items(inputs.items, all_buckets=all_buckets, limit=limit)
    frames = SegmentFrames(inputs.videos, inputs.scenes)
    prepare_out_dir(out)
    rows = _draw_all(chosen, frames, out, verdicts, on_sheet)
    scope = "all buckets" if all_buckets else "short, single-needle"
    summary = f"{len(rows)} question(s) ({scope}) from {inputs.source}"
    report = None
    if verdicts_path is not None:
        report = judge_report(
            {r.item.question_id: r.key for r in rows}, verdicts,
            verifier_passed={r.item.question_id: r.item.verifier_passed for r in rows},
            known_keys=[question_key(i.question, i.montage) for i in inputs.items])
        summary += f"\nverdicts: {verdicts_path}\n{report.to_text()}"
    index = write_text_atomic(out / INDEX_NAME, index_html(rows, title="needleforge review",
                                                           summary=summary), what="review index")
    template = write_text_atomic(
        out / TEMPLATE_NAME,
        template_yaml(chosen, verdicts,
                      sheet_names={r.item.question_id: r.sheet for r in rows}),
        what="verdict template")
    return ReviewOutcome(out, tuple(out / r.sheet for r in rows), index, template,
                         frames.missing, report, tuple(frames.problems.values()))
