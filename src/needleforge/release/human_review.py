"""Human verdicts in a release: which questions must have one, which ship, their answers, and
the card's figures.

A human verdict applies to a question while its content key
(:func:`~needleforge.review.verdicts.question_key`) is the one judged. A question's human
decision is the majority of its judged verdicts (a tie decides nothing). Then:

* a question humans decided is invalid never ships;
* ``release.require_human_review`` says which questions must have a decision to ship:
  ``none``, ``all``, or a fraction — a question is in the sample when the first 8 bytes of
  ``sha256("<seed>:<question id>")`` read as a fraction of 2^64 fall below it, so the sample
  is the same for the same seed and a question keeps its place as others come and go;
* a question whose judges agree on a corrected answer
  (:func:`~needleforge.records.human.corrected_answer`) ships with it, its record naming who
  changed it (``answer_changed_by``).

The card's section gives human validity with a 95 % Wilson interval (SciPy's
``binomtest(...).proportion_ci``) per bucket and per evidence kind (the needle type: object or
scene), over every question humans decided, shipped or not, and the automatic verifier's
agreement with the humans (same outcome, Cohen's kappa).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from needleforge.records import Montage, Question, Verification
from needleforge.records.human import HumanVerdict, corrected_answer
from needleforge.release.markup import Paragraph, Section, Table

Spans = tuple[tuple[float, float], ...]


def in_sample(question_id: str, fraction: float, seed: int) -> bool:
    """Whether ``question_id`` is in the seeded sample of ``fraction`` (module docstring)."""
    digest = hashlib.sha256(f"{seed}:{question_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


def decision(verdicts: Iterable[HumanVerdict]) -> bool | None:
    """The majority of the judged verdicts' ``valid`` (None: none judged, or a tie)."""
    votes = [v.valid for v in verdicts if v.valid is not None]
    valid = sum(votes)
    if not votes or 2 * valid == len(votes):
        return None
    return 2 * valid > len(votes)


@dataclasses.dataclass(frozen=True, slots=True)
class HumanReview:
    """The human side of a release (ids sorted): verdicts by question id (current key only),
    decisions, corrected answers, and what was left out for want of a valid decision."""

    verdicts: Mapping[str, tuple[HumanVerdict, ...]]
    decided: Mapping[str, bool]
    answers: Mapping[str, Spans]
    judged_invalid: tuple[str, ...]
    unreviewed: tuple[str, ...]

    @property
    def left_out(self) -> frozenset[str]:
        return frozenset(self.judged_invalid) | frozenset(self.unreviewed)

    def changed_by(self, question_id: str) -> list[str]:
        """Who set the question's corrected answer (empty when it is the generated one)."""
        if question_id not in self.answers:
            return []
        return sorted({v.annotator for v in self.verdicts[question_id]
                       if v.answer_spans == self.answers[question_id]})


def review_questions(
    questions: Sequence[Question], candidates: Iterable[str], *, keys: Mapping[str, str],
    verdicts: Iterable[HumanVerdict], rule: str | float, seed: int,
) -> HumanReview:
    """:class:`HumanReview` of ``questions`` (``keys``: question id → current content key);
    ``candidates`` are the ids that would ship without humans, ``rule`` is
    ``release.require_human_review``."""
    by_key: dict[str, list[HumanVerdict]] = defaultdict(list)
    for v in verdicts:
        by_key[v.question_key].append(v)
    mine = {q.question_id: tuple(by_key.get(keys[q.question_id], ())) for q in questions
            if q.question_id in keys}
    decided = {qid: d for qid, vs in mine.items() if (d := decision(vs)) is not None}
    answers = {qid: spans for qid, vs in mine.items() if decided.get(qid)
               and (spans := corrected_answer(vs)) is not None}
    invalid, unreviewed = [], []
    for qid in sorted(candidates):
        if decided.get(qid) is False:
            invalid.append(qid)
        elif qid not in decided and (rule == "all" or (
                isinstance(rule, float) and in_sample(qid, rule, seed))):
            unreviewed.append(qid)
    return HumanReview({q: v for q, v in mine.items() if v}, decided, answers, tuple(invalid),
                       tuple(unreviewed))


def wilson(valid: int, n: int) -> tuple[float, float]:
    """The 95 % Wilson score interval of ``valid`` out of ``n`` (n >= 1)."""
    from scipy.stats import binomtest  # heavy import, only for the card

    ci = binomtest(valid, n).proportion_ci(confidence_level=0.95, method="wilson")
    return float(ci.low), float(ci.high)


def _validity_rows(groups: Mapping[str, list[bool]]) -> tuple[tuple[str, ...], ...]:
    rows = []
    for name, votes in sorted(groups.items()):
        low, high = wilson(sum(votes), len(votes))
        rows.append((name, str(len(votes)), str(sum(votes)),
                     f"{100 * sum(votes) / len(votes):.1f} %",
                     f"{100 * low:.1f} – {100 * high:.1f} %"))
    return tuple(rows)


def _verifier_line(review: HumanReview, verifications: Sequence[Verification]) -> str:
    outcomes: dict[str, list[bool]] = defaultdict(list)
    for v in verifications:
        outcomes[v.question_id].append(v.passed)
    pairs = [(all(outcomes[q]), human) for q, human in review.decided.items() if q in outcomes]
    if not pairs:
        return "No question humans decided was verified automatically: no comparison."
    same = sum(a == b for a, b in pairs)
    from needleforge.review.agreement import cohen_kappa

    kappa = cohen_kappa([str(a) for a, _ in pairs], [str(b) for _, b in pairs])
    shown = "n/a (one outcome only)" if kappa is None else f"{kappa:.3f}"
    passed = [h for a, h in pairs if a]
    precision = (f"; of the {len(passed)} it passed, humans found {sum(passed)} valid"
                 if passed else "")
    return (f"Verifier vs humans on {len(pairs)} question(s): same outcome on {same} "
            f"({100 * same / len(pairs):.1f} %), Cohen's kappa {shown}{precision}.")


def _judges_line(review: HumanReview) -> str:
    from needleforge.review.agreement import judges_agreement

    agreement = judges_agreement(v for vs in review.verdicts.values() for v in vs
                                 if v.judged)
    return "Judges: " + agreement.to_text() + "."


def human_section(review: HumanReview, *, questions: Sequence[Question],
                  montages: Mapping[str, Montage], verifications: Sequence[Verification],
                  rule: str | float) -> Section:
    """The card's "Human review" section (see the module docstring)."""
    by_id = {q.question_id: q for q in questions}
    buckets: dict[str, list[bool]] = defaultdict(list)
    kinds: dict[str, list[bool]] = defaultdict(list)
    for qid, valid in review.decided.items():
        buckets[montages[by_id[qid].montage_id].bucket].append(valid)
        kinds[by_id[qid].needle_type].append(valid)
    need = rule if isinstance(rule, str) else f"a seeded {rule:.0%} sample"
    blocks: list[Paragraph | Table] = [Paragraph(
        f"{len(review.decided)} question(s) have a human decision ({sum(review.decided.values())}"
        f" valid); human review required: {need}. Left out: {len(review.judged_invalid)} "
        f"judged invalid, {len(review.unreviewed)} required but not reviewed; "
        f"{len(review.answers)} answer(s) corrected by humans.")]
    if review.decided:
        head = ("Group", "Decided", "Valid", "Valid share", "95 % interval (Wilson)")
        blocks += [Table(("Bucket", *head[1:]), _validity_rows(buckets),
                         caption="Human validity per bucket"),
                   Table(("Evidence kind", *head[1:]), _validity_rows(kinds),
                         caption="Human validity per evidence kind (needle type)"),
                   Paragraph(_verifier_line(review, verifications)),
                   Paragraph(_judges_line(review))]
    return Section("Human review", tuple(blocks))
