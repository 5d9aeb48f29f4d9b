"""Prefect artifacts of a refresh or a release: what an operator sees first, in the UI.

Per run: a markdown summary (``refresh-summary`` / ``release-summary``: questions, montages
and videos by bucket, what changed, the sources that failed, or why nothing was released),
the quality gate's table (``quality-gate``: every suite's expectations evaluated, the failed
ones named) and links to the release card and the Data Docs report (``release-card``,
``quality-report``). The markdown and table are built by pure functions (tested without a
server); :func:`post` and :func:`post_gate` send them, inside a flow or task run.
"""

from __future__ import annotations

import dataclasses
import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from needleforge.quality.results import GateResult
from needleforge.records.failures import StageFailure
from needleforge.release.build import ReleaseReport


@dataclasses.dataclass(frozen=True, slots=True)
class RunSummary:
    """What one refresh (or release) run did, for its artifacts and return value.

    ``release`` is None when nothing was released; ``reason`` says why it released or not;
    ``failures`` are the sources that were refused or failed this run.
    """

    title: str
    reason: str
    release: ReleaseReport | None
    failures: tuple[StageFailure, ...] = ()
    previous: str | None = None
    failed: bool = False


def bucket_rows(release_dir: Path) -> list[tuple[str, str, int, int, int]]:
    """(family, bucket, questions, montages, videos shipped) of a release folder."""
    questions: dict[tuple[str, str], int] = defaultdict(int)
    montages: dict[tuple[str, str], set[str]] = defaultdict(set)
    videos: dict[tuple[str, str], set[str]] = defaultdict(set)
    path = release_dir / "questions.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    for line in lines:
        if not line.strip():
            continue
        r = json.loads(line)
        key = (str(r.get("family")), str(r.get("bucket")))
        questions[key] += 1
        video = r.get("video")
        montages[key].add(str(r.get("montage_id") or video))
        if isinstance(video, str) and (release_dir / video).is_file():
            videos[key].add(video)
    return [(f, b, questions[f, b], len(montages[f, b]), len(videos[f, b]))
            for f, b in sorted(questions)]


def _failures_md(failures: Sequence[StageFailure]) -> str:
    if not failures:
        return "## Sources that failed\n\nNone."
    lines = "\n".join(f"| {f.stage} | `{f.item}` | {f.reason}{'' if f.new else ' (seen before)'}"
                      f" | {f.detail.replace('|', '/')} |" for f in failures)
    return (f"## Sources that failed ({len(failures)})\n\n| Stage | Source | Reason | Detail |\n"
            f"|---|---|---|---|\n{lines}")


def summary_markdown(summary: RunSummary) -> str:
    """The run's markdown summary (see the module docstring)."""
    head = [f"# {summary.title}", "",
            f"**{'FAILED: ' if summary.failed else ''}{summary.reason}**"]
    report = summary.release
    if report is None:
        head += ["", "Nothing was released."]
        return "\n".join(head) + "\n\n" + _failures_md(summary.failures) + "\n"
    rows = "\n".join(f"| {f} | {b} | {q} | {m} | {v} |"
                     for f, b, q, m, v in bucket_rows(report.path))
    changes: Mapping[str, Any] = report.changes
    previous = changes.get("previous")
    changed = (f"Compared with `{previous}`: {changes.get('added', 0)} added, "
               f"{changes.get('removed', 0)} removed, {changes.get('changed', 0)} changed "
               "(details in CHANGELOG.md)." if previous else
               "First release: nothing to compare with.")
    body = [f"Release `{report.name}` in `{report.path}`: {report.n_questions} question(s), "
            f"{report.n_montages} montage(s), {report.n_videos} video(s).", "",
            "| Family | Bucket | Questions | Montages | Videos |", "|---|---|---|---|---|",
            rows, "", "## What changed", "", changed]
    gate = report.gate
    if gate is not None:
        body += ["", f"Quality gate: {'passed' if gate.passed else 'FAILED'} "
                 f"({sum(s.n_expectations for s in gate.suites)} expectations)."]
    return "\n".join([*head, "", *body]) + "\n\n" + _failures_md(summary.failures) + "\n"


def gate_rows(gate: GateResult) -> list[dict[str, Any]]:
    """One table row per suite: status, rows, expectations met, and the failed ones named."""
    failed: dict[str, list[str]] = defaultdict(list)
    for f in gate.failures:
        failed[f.suite].append(f"{f.check or f.expectation}: observed {f.observed}")
    return [{"suite": s.suite, "status": s.status, "rows": s.n_rows,
             "expectations": s.n_expectations, "failed": s.n_failed,
             "failed_expectations": "; ".join(failed[s.suite]) or "-",
             "note": s.note or "-"} for s in gate.suites]


def post_gate(gate: GateResult) -> None:
    """Create the ``quality-gate`` table as soon as the gate has run, passed or failed (a
    failing gate stops the release, and the table is what says why). For ``on_gate``."""
    from prefect.artifacts import create_table_artifact

    verdict = "passed" if gate.passed else f"FAILED ({len(gate.failures)} expectations)"
    create_table_artifact(gate_rows(gate), key="quality-gate",
                          description=f"Quality gate {verdict}")


def post(summary: RunSummary, *, key: str) -> None:
    """Create the run's summary (``key``: ``refresh-summary``, ``release-summary``) and,
    when it released, links to the card and the Data Docs (the gate's table comes from
    :func:`post_gate`)."""
    from prefect.artifacts import create_link_artifact, create_markdown_artifact

    create_markdown_artifact(summary_markdown(summary), key=key,
                             description=summary.reason[:250])
    report = summary.release
    if report is None:
        return
    root = report.path.resolve()
    create_link_artifact((root / "card.html").as_uri(), link_text=f"{report.name} card",
                         key="release-card", description="The release card (reads offline)")
    docs = root / "quality" / "index.html"
    if docs.is_file():
        create_link_artifact(docs.as_uri(), link_text=f"{report.name} Data Docs",
                             key="quality-report",
                             description="Great Expectations Data Docs (styles need internet)")
