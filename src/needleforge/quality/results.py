"""What the quality gate returns: every failing expectation, named, and a per-suite summary.

These types import nothing heavy (no GX, no pandas), so callers such as the CLI can import
them, and :func:`needleforge.quality.run_gate`, without paying for Great Expectations until a
gate actually runs.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Literal, TypeAlias

from needleforge.errors import NeedleforgeError

SuiteStatus: TypeAlias = Literal["passed", "failed", "skipped"]


class QualityError(NeedleforgeError):
    """The gate itself could not run (GX rejected its context, the report folder is unusable).

    Data problems never raise: they are :class:`Failure` entries of a failed
    :class:`GateResult`.
    """


@dataclasses.dataclass(frozen=True, slots=True)
class Failure:
    """One failing expectation.

    ``suite`` and ``check`` are our names (stable; see :mod:`needleforge.quality.suites`),
    ``expectation`` is the GX expectation type as Data Docs show it, ``column`` the column it
    checks (None for table-level checks), ``observed`` what GX measured (a value, or how many
    rows failed), and ``details`` why the rule exists plus the first offending rows by id.
    """

    suite: str
    expectation: str
    column: str | None
    observed: str
    details: str
    check: str = ""

    @property
    def name(self) -> str:
        """``suite.check``: how the failure is named in reports and tests."""
        return f"{self.suite}.{self.check or self.expectation}"

    def to_text(self) -> str:
        """One line (two when there are details) for a terminal."""
        column = f"({self.column})" if self.column else ""
        head = f"FAIL {self.name}: {self.expectation}{column}, observed {self.observed}"
        return f"{head}\n     {self.details}" if self.details else head


@dataclasses.dataclass(frozen=True, slots=True)
class CheckOutcome:
    """One expectation as it was evaluated, passing or not (what a report lists per suite).

    ``observed`` is what GX measured (a value for aggregate checks such as a row count or a
    mean, else how many rows were unexpected); ``bounds`` the allowed range as text;
    ``borderline`` marks a passing aggregate value within 5 % of a bound (a release that
    barely passed says so on its card before it fails next time).
    """

    check: str
    expectation: str
    column: str | None
    success: bool
    observed: str
    bounds: str = ""
    borderline: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class SuiteOutcome:
    """How one suite went: ``n_rows`` validated, ``n_failed`` of ``n_expectations`` failed.

    ``note`` says why a suite was skipped (an empty table, no release given); ``checks``
    lists every expectation evaluated, in suite order (empty for a skipped suite).
    """

    suite: str
    status: SuiteStatus
    n_rows: int
    n_expectations: int = 0
    n_failed: int = 0
    note: str = ""
    checks: tuple[CheckOutcome, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class GateResult:
    """The gate's verdict: ``passed`` when no expectation of any suite that ran failed.

    ``docs_index`` is the Data Docs ``index.html`` (the release's quality report) and
    ``summary_path`` the machine-readable ``summary.json`` next to it.
    """

    passed: bool
    failures: list[Failure]
    suites: list[SuiteOutcome] = dataclasses.field(default_factory=list)
    docs_index: Path | None = None
    summary_path: Path | None = None

    @property
    def failed_checks(self) -> set[str]:
        """The names (``suite.check``) of every failure."""
        return {f.name for f in self.failures}

    def to_text(self) -> str:
        """A terminal summary: the verdict, one line per suite, then every failure."""
        verdict = "PASSED" if self.passed else f"FAILED ({len(self.failures)} expectations)"
        lines = [f"quality gate {verdict}"]
        for s in self.suites:
            if s.status == "skipped":
                lines.append(f"  {s.suite:<17} skipped: {s.note}")
            else:
                lines.append(f"  {s.suite:<17} {s.status}: {s.n_rows} rows, "
                             f"{s.n_expectations - s.n_failed}/{s.n_expectations} expectations met")
        lines.extend(f.to_text() for f in self.failures)
        if self.docs_index is not None:
            lines.append(f"report: {self.docs_index}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (what ``summary.json`` holds)."""
        return {
            "passed": self.passed,
            "suites": [dataclasses.asdict(s) for s in self.suites],
            "failures": [dataclasses.asdict(f) for f in self.failures],
        }

    def write_summary(self, path: Path) -> None:
        """Write :meth:`to_dict` as indented JSON.

        Raises:
            OSError: the file cannot be written.
        """
        path.write_text(json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n",
                        encoding="utf-8")
