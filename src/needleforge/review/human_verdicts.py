"""Human verdicts into the store, from Label Studio or a YAML verdict file, and what they say.

:func:`needleforge.stages.review.record_round` stores a batch of
:class:`~needleforge.records.human.HumanVerdict` (new or changed rows only: a second pull of the
same annotations writes nothing) and :func:`sum_up_round` sums up, over every stored verdict:
which verdicts are on questions that no longer exist (kept, reported), which questions a human
gave a new answer (and where judges' corrections conflict), and the judges' agreement
(:mod:`~needleforge.review.agreement`).

:func:`yaml_verdicts` turns the judged entries of a version-1 YAML verdict file
(:mod:`~needleforge.review.verdicts`) into the same records, so earlier hand-written verdicts
move over.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path

from needleforge.records.human import HumanVerdict, Recorded, corrected_answer
from needleforge.review.agreement import Agreement, judges_agreement
from needleforge.review.items import ReviewItem
from needleforge.review.verdicts import load_verdicts, question_key


@dataclasses.dataclass(frozen=True, slots=True)
class RoundOutcome:
    """What a round stored and found (question ids sorted)."""

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


def current_keys(items: Sequence[ReviewItem]) -> dict[str, str]:
    """Question key → question id of every question of ``items``."""
    return {question_key(i.question, i.montage): i.question_id for i in items}


def sum_up_round(verdicts: Sequence[HumanVerdict], *, recorded: Recorded,
                 keys: Mapping[str, str], stored: Sequence[HumanVerdict],
                 scope: str | None = None) -> RoundOutcome:
    """What storing ``verdicts`` (``recorded``) did, over every ``stored`` verdict afterwards;
    ``keys`` are the store's questions (:func:`current_keys`).

    ``scope``: the ``source_ref`` prefix of everything the source holds (a Label Studio
    project's annotation URLs); stored verdicts under it that ``verdicts`` lacks were deleted
    upstream and are reported (never deleted here).
    """
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
