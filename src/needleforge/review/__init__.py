"""Human review of NeMo questions: contact sheets to judge by eye, and a verdict file.

:func:`write_review` writes one PNG contact sheet per question (:mod:`.sheets`), an
``index.html`` and a ``verdicts_template.yaml``; judges record verdicts in a versioned YAML
file keyed by the content they judged (:mod:`.verdicts`), and :func:`judge_report` counts
them and compares them with the automatic verifier (:mod:`.report`).

A team reviews in Label Studio instead: :mod:`.labelstudio_push` sends one task per question
to a project (:mod:`.labelstudio_project`, :mod:`.ls_config`, over the REST client
:mod:`.ls_client`), :mod:`.labelstudio_pull` brings the annotations back as human verdicts in
the store (:mod:`.human_verdicts`, which also moves YAML verdict files over), with the judges'
agreement (:mod:`.agreement`). See docs/review.md.

What reads and writes the store around them is :mod:`needleforge.stages.review`.
"""

from needleforge.review.items import (
    ReviewItem,
    build_items,
    choose_items,
    other_segments,
    target_segments,
    verifier_passed,
)
from needleforge.review.report import Report, judge_report
from needleforge.review.run import ReviewInputs, ReviewOutcome, write_review
from needleforge.review.sheets import SegmentFrames, render_sheet, sheet_name, write_sheet
from needleforge.review.verdicts import (
    FileVerdict,
    VerdictError,
    load_verdicts,
    question_key,
    template_yaml,
)

__all__ = [
    "FileVerdict",
    "Report",
    "ReviewInputs",
    "ReviewItem",
    "ReviewOutcome",
    "SegmentFrames",
    "VerdictError",
    "build_items",
    "choose_items",
    "judge_report",
    "load_verdicts",
    "other_segments",
    "question_key",
    "render_sheet",
    "sheet_name",
    "target_segments",
    "template_yaml",
    "verifier_passed",
    "write_review",
    "write_sheet",
]
