"""How far human judges agree on the questions several of them judged, and how far the
automatic verifier agrees with them.

Judges' agreement is Cohen's kappa (scikit-learn's :func:`~sklearn.metrics.cohen_kappa_score`)
on the verdict choice, for every pair of judges over the questions both judged; with more
than two judges the figure reported is the mean over pairs (Light's kappa). Why not Fleiss'
kappa: it needs the same number of judges on every question, which a labeling team's overlap
rarely gives, and its library (statsmodels) is not a dependency. A pair with fewer than two
shared questions gives no kappa (it is undefined on one item); one whose judges each used a
single, identical choice has kappa undefined too (no variance) and is counted only in the raw
agreement.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import warnings
from collections import defaultdict
from collections.abc import Iterable

from needleforge.records.human import HumanVerdict


@dataclasses.dataclass(frozen=True, slots=True)
class PairAgreement:
    first: str
    second: str
    questions: int
    agreed: int
    kappa: float | None


@dataclasses.dataclass(frozen=True, slots=True)
class Agreement:
    """Agreement over the questions judged by two or more judges (``multi_judged``)."""

    multi_judged: int
    pairs: tuple[PairAgreement, ...]

    @property
    def kappa(self) -> float | None:
        """Mean Cohen's kappa over the pairs that have one (None when none has)."""
        values = [p.kappa for p in self.pairs if p.kappa is not None]
        return sum(values) / len(values) if values else None

    @property
    def raw(self) -> float | None:
        """Share of (pair, question) comparisons where both judges picked the same choice."""
        total = sum(p.questions for p in self.pairs)
        return sum(p.agreed for p in self.pairs) / total if total else None

    def to_text(self) -> str:
        if not self.pairs:
            return (f"agreement: {self.multi_judged} question(s) judged by two or more "
                    "judges; no pair of judges shares a question")
        kappa = "n/a" if self.kappa is None else f"{self.kappa:.3f}"
        raw = "n/a" if self.raw is None else f"{100 * self.raw:.1f} %"
        return (f"agreement on {self.multi_judged} question(s) judged by two or more judges: "
                f"Cohen's kappa {kappa} (mean of {len(self.pairs)} pair(s)), same choice "
                f"{raw}")


def judges_agreement(verdicts: Iterable[HumanVerdict]) -> Agreement:
    """:class:`Agreement` of the judges of ``verdicts`` (one verdict per judge and question
    key is used: the last given)."""
    by_question: dict[str, dict[str, str]] = defaultdict(dict)
    for v in verdicts:
        by_question[v.question_key][v.annotator] = v.choice
    multi = {key: judges for key, judges in by_question.items() if len(judges) >= 2}
    judges = sorted({j for choices in multi.values() for j in choices})
    pairs = []
    for first, second in itertools.combinations(judges, 2):
        shared = sorted(k for k, c in multi.items() if first in c and second in c)
        if not shared:
            continue
        a = [multi[k][first] for k in shared]
        b = [multi[k][second] for k in shared]
        pairs.append(PairAgreement(first, second, len(shared),
                                   sum(x == y for x, y in zip(a, b, strict=True)),
                                   cohen_kappa(a, b)))
    return Agreement(len(multi), tuple(pairs))


def cohen_kappa(a: list[str], b: list[str]) -> float | None:
    """Cohen's kappa of two judges' labels on the same items (None: fewer than two items,
    or undefined for want of variance)."""
    if len(a) < 2:
        return None
    from sklearn.metrics import cohen_kappa_score  # heavy import, only when needed

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # 0/0 when there is no variance
        value = float(cohen_kappa_score(a, b))
    return None if math.isnan(value) else value
