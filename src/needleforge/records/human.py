"""A human's verdict on one question, as the store keeps it (table ``human_verdicts``).

A verdict is about what the judge saw, so it is keyed by the question's content key
(:func:`needleforge.review.verdicts.question_key`), not only its id: when the question
changes, its old verdicts stay stored but no longer apply to it. ``source_ref`` names where
the verdict came from and is unique: a Label Studio annotation
(``<server>/projects/<id>/annotations/<id>``) or an entry of a YAML verdict file
(``<file>#<key>``).

``answer_spans`` are the montage spans the judge left as the answer when they differ from the
pre-filled ones (None: not changed); they are the record that a human changed the answer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Literal

HumanSource = Literal["label-studio", "yaml"]
HUMAN_SOURCES: tuple[HumanSource, ...] = ("label-studio", "yaml")
#: The verdict choices of the Label Studio labeling config, in the order it shows them (the
#: one definition: ``review.ls_config`` builds the config from it).
LABEL_STUDIO_CHOICES = ("valid", "wrong span", "wrong description",
                        "negative shows the target", "unsure")
#: Every choice a stored verdict may carry: Label Studio's, and "invalid" of a YAML verdict.
VERDICT_CHOICES = (*LABEL_STUDIO_CHOICES, "invalid")


@dataclasses.dataclass(frozen=True, slots=True)
class HumanVerdict:
    """One judge's verdict (see the module docstring). ``valid`` None: not decided
    (``unsure``), then the other flags are None too."""

    question_key: str
    question_id: str
    annotator: str
    source: HumanSource
    source_ref: str
    choice: str
    valid: bool | None
    spans_right: bool | None
    negatives_clean: bool | None
    note: str = ""
    answer_spans: tuple[tuple[float, float], ...] | None = None
    updated_at: str = ""

    def __post_init__(self) -> None:
        for name in ("question_key", "question_id", "annotator", "source_ref"):
            if not getattr(self, name):
                raise ValueError(f"HumanVerdict.{name} must be a non-empty string")
        if self.source not in HUMAN_SOURCES:
            raise ValueError(f"source = {self.source!r} must be one of {HUMAN_SOURCES}")
        if self.choice not in VERDICT_CHOICES:
            raise ValueError(f"choice = {self.choice!r} must be one of {VERDICT_CHOICES}")
        if self.valid is None and (self.spans_right is not None
                                   or self.negatives_clean is not None):
            raise ValueError("an undecided verdict (valid = None) carries no other flag")
        for start_s, end_s in self.answer_spans or ():
            if not 0 <= start_s < end_s:
                raise ValueError(f"answer span ({start_s}, {end_s}) must have "
                                 "0 <= start_s < end_s")

    @property
    def judged(self) -> bool:
        return self.valid is not None


@dataclasses.dataclass(frozen=True, slots=True)
class Recorded:
    """What storing a batch of verdicts did (:func:`needleforge.store.human
    .record_human_verdicts`): rows new, changed, and equal to the stored ones."""

    new: int
    changed: int
    unchanged: int


def verdict_from_choice(choice: str, *, answer_changed: bool
                        ) -> tuple[bool | None, bool | None, bool | None]:
    """``(valid, spans_right, negatives_clean)`` of a Label Studio choice.

    ``wrong span`` with a corrected answer makes the question valid (its answer is the
    judge's); without one it is invalid. ``valid`` with changed spans keeps the question valid
    but its spans were not right. ``unsure`` decides nothing.

    Raises:
        ValueError: ``choice`` is not one of the labeling config's choices.
    """
    if choice == "unsure":
        return None, None, None
    spans_right = not answer_changed
    if choice == "valid":
        return True, spans_right, True
    if choice == "wrong span":
        return answer_changed, False, True
    if choice == "wrong description":
        return False, spans_right, True
    if choice == "negative shows the target":
        return False, spans_right, False
    raise ValueError(f"choice = {choice!r} must be one of {LABEL_STUDIO_CHOICES}")


def corrected_answer(verdicts: Iterable[HumanVerdict]
                     ) -> tuple[tuple[float, float], ...] | None:
    """The answer the judges set for one question: the spans every judge who changed them
    agrees on, when the question was judged valid by them. None when nobody changed the
    answer or the judges who did disagree (a conflict to settle, reported by the pull)."""
    changed = {v.answer_spans for v in verdicts if v.answer_spans is not None and v.valid}
    return next(iter(changed)) if len(changed) == 1 else None
