"""Human verdicts into the store, from Label Studio or a YAML verdict file, and what they say.

:func:`record_round` stores a batch of :class:`~needleforge.records.human.HumanVerdict` (new
or changed rows only: a second pull of the same annotations writes nothing) and sums up, over
every stored verdict: which verdicts are on questions that no longer exist (kept, reported),
which questions a human gave a new answer (and where judges' corrections conflict), and the
judges' agreement (:mod:`~needleforge.review.agreement`).

:func:`yaml_verdicts` turns the judged entries of a version-1 YAML verdict file
(:mod:`~needleforge.review.verdicts`) into the same records, so earlier hand-written verdicts
move over.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from needleforge.errors import StoreError
from needleforge.records.human import HumanVerdict, corrected_answer
from needleforge.review.agreement import Agreement, judges_agreement
from needleforge.review.items import build_items
from needleforge.review.verdicts import load_verdicts, question_key
from needleforge.store import Store
from needleforge.store.human import Recorded, human_verdicts, record_human_verdicts


@dataclasses.dataclass(frozen=True, slots=True)
class RoundOutcome:
    """What :func:`record_round` stored and found (question ids sorted)."""

    given: int
    recorded: Recorded
    vanished: tuple[str, ...]  # "question_id (source_ref)" of verdicts on no current question
    corrected: tuple[str, ...]
    conflicts: tuple[str, ...]
    agreement: Agreement
    gone_upstream: tuple[str, ...] = ()  # stored verdicts whose source no longer has them

    def to_text(self) -> str:
        lines = [f"human verdicts: {self.given} read; {self.recorded.new} new, "
                 f"{self.recorded.changed} changed, {self.recorded.unchanged} unchanged in "
                 "the store",
                 f"  answers changed by a human: {len(self.corrected)} question(s)"
                 + (f" ({', '.join(self.corrected[:5])})" if self.corrected else ""),
                 "  " + self.agreement.to_text()]
        if self.conflicts:
            lines.append(f"  judges disagree on the corrected answer of "
                         f"{len(self.conflicts)} question(s), left as generated: "
                         f"{', '.join(self.conflicts[:5])}")
        if self.vanished:
            lines.append(f"  {len(self.vanished)} verdict(s) on questions that no longer "
                         "exist (kept in the store, not applied):")
            lines += [f"    {v}" for v in self.vanished[:10]]
        if self.gone_upstream:
            lines.append(f"  {len(self.gone_upstream)} stored verdict(s) whose annotation is "
                         "no longer on the server (kept, still applied; delete the rows by "
                         "hand if they were withdrawn):")
            lines += [f"    {v}" for v in self.gone_upstream[:10]]
        return "\n".join(lines)


def current_keys(store: Store) -> dict[str, str]:
    """Question key → question id of every question of ``store``."""
    items = build_items(store.questions(), store.montages(), objects=store.objects(),
                        verifications=store.verifications())
    return {question_key(i.question, i.montage): i.question_id for i in items}


def record_round(db: Path, verdicts: Sequence[HumanVerdict], *,
                 scope: str | None = None) -> RoundOutcome:
    """Store ``verdicts`` in ``db`` (one transaction) and sum up the stored verdicts.

    ``scope``: the ``source_ref`` prefix of everything the source holds (a Label Studio
    project's annotation URLs); stored verdicts under it that ``verdicts`` lacks were deleted
    upstream and are reported (never deleted here).

    Raises:
        StoreError: ``db`` is missing, not a store, or the write failed (nothing written).
    """
    if not db.exists():
        raise StoreError(f"{db}: store not found")
    with Store(db) as store:
        recorded = record_human_verdicts(store, verdicts)
        keys = current_keys(store)
        stored = human_verdicts(store)
    pulled = {(v.source, v.source_ref) for v in verdicts}
    vanished = sorted(f"{v.question_id} ({v.source_ref})" for v in stored
                      if v.question_key not in keys and (v.source, v.source_ref) in pulled)
    live = [v for v in stored if v.question_key in keys]
    by_key: dict[str, list[HumanVerdict]] = defaultdict(list)
    for v in live:
        by_key[v.question_key].append(v)
    corrected = sorted(keys[k] for k, vs in by_key.items() if corrected_answer(vs) is not None)
    conflicts = sorted(keys[k] for k, vs in by_key.items()
                       if len({v.answer_spans for v in vs if v.answer_spans and v.valid}) > 1)
    gone = sorted(f"{v.question_id} ({v.source_ref})" for v in stored
                  if scope and v.source_ref.startswith(scope)
                  and (v.source, v.source_ref) not in pulled)
    return RoundOutcome(len(verdicts), recorded, tuple(vanished), tuple(corrected),
                        tuple(conflicts), judges_agreement(v for v in live if v.judged),
                        tuple(gone))


def yaml_verdicts(path: Path) -> list[HumanVerdict]:
    """The judged entries of the YAML verdict file ``path`` as human verdicts (annotator: the
    file's name; reference ``<file name>#<key>``).

    Raises:
        VerdictError: the file is missing or malformed (naming it and the entry).
    """
    out = []
    for key, v in load_verdicts(path).items():
        if not v.judged:
            continue
        out.append(HumanVerdict(
            question_key=key, question_id=v.question_id, annotator=f"verdict file {path.name}",
            source="yaml", source_ref=f"{path.name}#{key}",
            choice="valid" if v.valid else "invalid", valid=v.valid,
            spans_right=v.spans_right, negatives_clean=v.negatives_clean, note=v.note))
    return out
