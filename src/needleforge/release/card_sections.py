"""Card sections a build adds after its gate: "Quality gate" and "Sources that failed".

The quality gate section, why on the card: the Great Expectations Data Docs pages load their
styles and scripts from CDNs, so offline (where many benchmark users read a pulled release)
they render unstyled and their tables collapse. The card is self-contained; it lists each
suite, every expectation it evaluated, and the observed values of the failing and borderline
ones, and says when the Data Docs need assets from the internet. Nothing here carries a clock
time, so the card stays byte-identical for the same inputs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlparse

from needleforge.quality.results import GateResult
from needleforge.records.failures import StageFailure
from needleforge.release.markup import Block, Bullets, Link, Paragraph, Section, Table

REPORT_INDEX = "quality/index.html"
_ASSET_RE = re.compile(r"<(?:link|script)\b[^>]*\b(?:href|src)=[\"'](https?://[^\"']+)[\"']",
                       re.IGNORECASE)


def remote_assets(index_html: Path) -> list[str]:
    """The stylesheets and scripts a Data Docs page loads from the internet, in page order
    (empty when the page is missing or needs none)."""
    try:
        text = index_html.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return list(dict.fromkeys(_ASSET_RE.findall(text)))


def _offline_note(root: Path) -> Paragraph:
    assets = remote_assets(root / REPORT_INDEX)
    if not (root / REPORT_INDEX).is_file():
        return Paragraph("No Data Docs report was written with this release.")
    if not assets:
        return Paragraph(f"Full report: {REPORT_INDEX} (Great Expectations Data Docs; "
                         "needs no internet).")
    hosts = sorted({urlparse(a).hostname or a for a in assets})
    return Paragraph(
        f"Full report: {REPORT_INDEX} (Great Expectations Data Docs). It loads "
        f"{len(assets)} stylesheet(s) and script(s) from {', '.join(hosts)}, which are not "
        "part of the release: offline it renders unstyled. This section holds the same "
        "verdicts.")


def _suite_table(gate: GateResult) -> Table:
    rows = tuple(
        (s.suite, s.status, str(s.n_rows),
         f"{s.n_expectations - s.n_failed}/{s.n_expectations}" if s.status != "skipped"
         else "-", s.note)
        for s in gate.suites)
    return Table(("Suite", "Status", "Rows", "Expectations met", "Note"), rows,
                 caption="Suites of the gate")


def _check_table(gate: GateResult) -> Table:
    rows = []
    for s in gate.suites:
        for c in s.checks:
            verdict = "pass" if c.success and not c.borderline else \
                "borderline" if c.success else "FAIL"
            shown = c.observed if (not c.success or c.borderline) else ""
            rows.append((s.suite, c.check, c.expectation + (f" ({c.column})" if c.column
                                                             else ""),
                         verdict, shown, c.bounds))
    return Table(("Suite", "Check", "Expectation", "Result", "Observed", "Allowed"),
                 tuple(rows), caption="Every expectation evaluated (observed values of the "
                 "failing and borderline ones)")


def quality_section(gate: GateResult | None, *, root: Path) -> Section:
    """The card section for ``gate``'s result on the release at ``root``."""
    if gate is None:
        return Section("Quality gate", (Paragraph(
            "This release was built without the quality gate (no Great Expectations suites "
            "ran on it)."),))
    failing = [c for s in gate.suites for c in s.checks if not c.success]
    borderline = [c for s in gate.suites for c in s.checks if c.success and c.borderline]
    verdict = "passed" if gate.passed else f"FAILED ({len(gate.failures)} expectations)"
    blocks: list[Block] = [Paragraph(
        f"The Great Expectations gate {verdict}: "
        f"{sum(s.n_expectations for s in gate.suites)} expectation(s) evaluated in "
        f"{sum(1 for s in gate.suites if s.status != 'skipped')} suite(s), "
        f"{len(failing)} failing, {len(borderline)} borderline (a passing value within 5 % "
        "of its bound).")]
    if failing or borderline:
        blocks.append(Bullets(tuple(
            f"{'FAIL' if not c.success else 'borderline'} {c.check}: observed {c.observed}"
            + (f", allowed {c.bounds}" if c.bounds else "") for c in (*failing, *borderline))))
    blocks += [_suite_table(gate), _check_table(gate), _offline_note(root)]
    if (root / REPORT_INDEX).is_file():
        blocks.append(Link("Open the Data Docs report", REPORT_INDEX))
    return Section("Quality gate", tuple(blocks))


def failures_section(failures: Sequence[StageFailure]) -> Section | None:
    """The sources this build's refresh could not use (refused or failed), or None."""
    if not failures:
        return None
    rows = tuple((f.stage, f.item, f.reason, f.detail) for f in failures)
    return Section("Sources that failed", (
        Paragraph(f"{len(failures)} source(s) of this refresh were refused or failed; the "
                  "release holds what succeeded. Fix or remove them in the manifest."),
        Table(("Stage", "Source", "Reason", "Detail"), rows)))
