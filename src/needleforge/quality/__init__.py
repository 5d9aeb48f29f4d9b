"""The quality gate: Great Expectations suites over every table and the release (stage 8).

Public API (cheap to import; Great Expectations loads only when a gate runs):

- :func:`run_gate` runs every suite, builds the Data Docs quality report into
  ``out_dir/quality/`` and returns a :class:`GateResult` naming each :class:`Failure`;
- :mod:`needleforge.quality.suites` defines the suites in code, one function per table;
- :mod:`needleforge.quality.context` renders the GX file context config (``expectations/``).
"""

from needleforge.quality.gate import (
    ReleaseInputs,
    read_questions_jsonl,
    read_release,
    run_gate,
)
from needleforge.quality.results import (
    CheckOutcome,
    Failure,
    GateResult,
    QualityError,
    SuiteOutcome,
)

__all__ = [
    "CheckOutcome",
    "Failure",
    "GateResult",
    "QualityError",
    "ReleaseInputs",
    "SuiteOutcome",
    "read_questions_jsonl",
    "read_release",
    "run_gate",
]
