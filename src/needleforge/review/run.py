"""The review step: contact sheets, an index, a verdict template and the judged report.

:func:`review_store` reads a store (read-only), chooses the questions to review
(:func:`~needleforge.review.items.choose_items`), writes one sheet per question, then
``index.html`` and ``verdicts_template.yaml``, each published atomically, and — given a
verdict file — counts the human verdicts (:func:`~needleforge.review.report.judge_report`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path

from needleforge.media.outputs import write_text_atomic
from needleforge.review.index import IndexRow, index_html
from needleforge.review.items import ReviewItem, build_items, choose_items
from needleforge.review.report import Report, judge_report
from needleforge.review.sheets import (
    SegmentFrames,
    prepare_out_dir,
    render_sheet,
    sheet_name,
    write_sheet,
)
from needleforge.review.verdicts import FileVerdict, load_verdicts, question_key, template_yaml
from needleforge.store import Store

INDEX_NAME = "index.html"
TEMPLATE_NAME = "verdicts_template.yaml"


@dataclasses.dataclass(frozen=True, slots=True)
class ReviewOutcome:
    """What :func:`review_store` wrote; ``report`` is None without a verdict file."""

    out_dir: Path
    sheets: tuple[Path, ...]
    index: Path
    template: Path
    missing_frames: int
    report: Report | None
    problems: tuple[str, ...] = ()  # why frames are missing: one message per video


@dataclasses.dataclass(frozen=True, slots=True)
class _Loaded:
    chosen: list[ReviewItem]
    all_items: list[ReviewItem]
    frames: SegmentFrames


def _load(db: Path, *, all_buckets: bool, limit: int | None) -> _Loaded:
    with Store(db, read_only=True) as store:
        items = build_items(store.questions(), store.montages(), objects=store.objects(),
                            verifications=store.verifications())
        videos = {v.video_id: v for v in store.videos()}
        scenes = {s.scene_id: s for s in store.scenes()}
    chosen = choose_items(items, all_buckets=all_buckets, limit=limit)
    return _Loaded(chosen, items, SegmentFrames(videos, scenes))


def _draw_all(loaded: _Loaded, out: Path, verdicts: Mapping[str, FileVerdict],
              on_sheet: Callable[[int, int], None] | None) -> list[IndexRow]:
    """Render and publish every chosen question's sheet; its index rows."""
    rows: list[IndexRow] = []
    try:
        for done, item in enumerate(loaded.chosen, start=1):
            key = question_key(item.question, item.montage)
            row = IndexRow(item, sheet_name(item.question_id), key, verdicts.get(key))
            image = render_sheet(item, loaded.frames, key=key, verdict=row.verdict)
            write_sheet(out / row.sheet, image)
            rows.append(row)
            if on_sheet is not None:
                on_sheet(done, len(loaded.chosen))
    finally:
        loaded.frames.close()
    return rows


def review_store(
    db: Path,
    out: Path,
    *,
    verdicts_path: Path | None = None,
    all_buckets: bool = False,
    limit: int | None = None,
    on_sheet: Callable[[int, int], None] | None = None,
) -> ReviewOutcome:
    """Write the review folder ``out`` for the questions of the store ``db``.

    ``on_sheet(done, total)`` is called after each sheet (a progress bar).

    Raises:
        VerdictError: the verdict file is missing or malformed (checked before any work).
        StoreError: ``db`` is missing, not a needleforge store, or inconsistent.
        OutputError: ``out`` cannot be created or written.
    """
    verdicts = {} if verdicts_path is None else load_verdicts(verdicts_path)
    loaded = _load(db, all_buckets=all_buckets, limit=limit)
    prepare_out_dir(out)
    rows = _draw_all(loaded, out, verdicts, on_sheet)
    scope = "all buckets" if all_buckets else "short, single-needle"
    summary = f"{len(rows)} question(s) ({scope}) from {db}"
    report = None
    if verdicts_path is not None:
        report = judge_report(
            {r.item.question_id: r.key for r in rows}, verdicts,
            verifier_passed={r.item.question_id: r.item.verifier_passed for r in rows},
            known_keys=[question_key(i.question, i.montage) for i in loaded.all_items])
        summary += f"\nverdicts: {verdicts_path}\n{report.to_text()}"
    index = write_text_atomic(out / INDEX_NAME, index_html(rows, title="needleforge review",
                                                           summary=summary), what="review index")
    template = write_text_atomic(
        out / TEMPLATE_NAME,
        template_yaml(loaded.chosen, verdicts,
                      sheet_names={r.item.question_id: r.sheet for r in rows}),
        what="verdict template")
    return ReviewOutcome(out, tuple(out / r.sheet for r in rows), index, template,
                         loaded.frames.missing, report, tuple(loaded.frames.problems.values()))
