"""What the human verdicts say about a set of questions, and about the automatic verifier.

Counting rules: a question is judged when the verdict file holds an entry with its current
:func:`~needleforge.review.verdicts.question_key` and ``valid`` set; everything else is
unjudged and is never counted as valid (the lower bound ``valid / questions`` is reported
beside the share among judged ones). Verdict entries whose key no current question has are
*stale*: the question changed after it was judged and needs judging again.

The verifier is compared on the judged questions it gave a verdict on: its **precision**
(of the questions it passed, the share judged valid) and its **refusal rate** (of the
questions judged invalid, the share it failed).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping

from needleforge.review.verdicts import FileVerdict


def share(part: int, whole: int) -> float | None:
    """``part / whole``, or None when there is nothing to divide."""
    return part / whole if whole else None


@dataclasses.dataclass(frozen=True, slots=True)
class Report:
    """Counts behind the judged shares (see the module docstring); shares are properties."""

    questions: int
    valid: int
    invalid: int
    unjudged: int
    stale: int
    spans_right: int
    spans_judged: int
    negatives_clean: int
    negatives_judged: int
    verifier_passed: int
    verifier_passed_valid: int
    invalid_verified: int
    invalid_refused: int

    @property
    def valid_share(self) -> float | None:
        """Valid among judged questions."""
        return share(self.valid, self.valid + self.invalid)

    @property
    def valid_lower_bound(self) -> float | None:
        """Valid among all questions (unjudged counted as not valid)."""
        return share(self.valid, self.questions)

    @property
    def spans_right_share(self) -> float | None:
        return share(self.spans_right, self.spans_judged)

    @property
    def negatives_clean_share(self) -> float | None:
        return share(self.negatives_clean, self.negatives_judged)

    @property
    def verifier_precision(self) -> float | None:
        """Of the judged questions the verifier passed, the share judged valid."""
        return share(self.verifier_passed_valid, self.verifier_passed)

    @property
    def verifier_refusal(self) -> float | None:
        """Of the questions judged invalid (and verified), the share the verifier failed."""
        return share(self.invalid_refused, self.invalid_verified)

    def to_text(self) -> str:
        """A few lines for the terminal (the verifier's line only when verdicts of the
        verifier were given)."""
        lines = [
            f"human verdicts on {self.questions} question(s): {self.valid} valid, "
            f"{self.invalid} invalid, {self.unjudged} unjudged "
            f"(valid {_pct(self.valid_share)} of judged, at least "
            f"{_pct(self.valid_lower_bound)} of all)",
            f"  answer spans right: {_frac(self.spans_right, self.spans_judged)}; negatives "
            f"clean: {_frac(self.negatives_clean, self.negatives_judged)}",
        ]
        if self.verifier_passed or self.invalid_verified:
            lines.append(f"  verifier vs judges: of {self.verifier_passed} it passed, "
                         f"{_pct(self.verifier_precision)} valid; of {self.invalid_verified} "
                         f"invalid, {_pct(self.verifier_refusal)} refused")
        lines.append(f"  stale verdicts (question changed since judged): {self.stale}")
        return "\n".join(lines)


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f} %"


def _frac(part: int, whole: int) -> str:
    return f"{part}/{whole} ({_pct(share(part, whole))})"


def judge_report(
    question_keys: Mapping[str, str],
    verdicts: Mapping[str, FileVerdict],
    *,
    verifier_passed: Mapping[str, bool | None] | None = None,
    known_keys: Collection[str] | None = None,
) -> Report:
    """Count the verdicts of ``verdicts`` (by key) on the questions of ``question_keys``
    (``question_id -> question_key``); ``verifier_passed`` gives the automatic verifier's
    outcome per question id (missing or None: not verified, left out of the comparison).

    ``known_keys`` are the keys of every question there is (default: those of
    ``question_keys``): a judged verdict whose key is not among them is stale. Pass them when
    ``question_keys`` is a subset (one bucket), so that verdicts on the others are not.
    """
    passed = verifier_passed or {}
    known = set(question_keys.values()) if known_keys is None else set(known_keys)
    judged = [(qid, verdicts[key]) for qid, key in question_keys.items()
              if key in verdicts and verdicts[key].judged]
    valid = [qid for qid, v in judged if v.valid]
    invalid = [qid for qid, v in judged if not v.valid]
    auto_pass = [qid for qid, _ in judged if passed.get(qid) is True]
    invalid_verified = [qid for qid in invalid if passed.get(qid) is not None]
    valid_ids = set(valid)
    return Report(
        questions=len(question_keys), valid=len(valid), invalid=len(invalid),
        unjudged=len(question_keys) - len(judged),
        stale=sum(1 for key, v in verdicts.items() if v.judged and key not in known),
        spans_right=sum(1 for _, v in judged if v.spans_right),
        spans_judged=sum(1 for _, v in judged if v.spans_right is not None),
        negatives_clean=sum(1 for _, v in judged if v.negatives_clean),
        negatives_judged=sum(1 for _, v in judged if v.negatives_clean is not None),
        verifier_passed=len(auto_pass),
        verifier_passed_valid=sum(1 for qid in auto_pass if qid in valid_ids),
        invalid_verified=len(invalid_verified),
        invalid_refused=sum(1 for qid in invalid_verified if passed[qid] is False),
    )
