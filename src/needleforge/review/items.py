"""What a judge looks at for one question: its montage's target and negative segments.

A :class:`ReviewItem` gathers, for one stored question, everything a contact sheet shows and
a verdict key hashes: the question, its montage, the target segments that answer it (in
needle order), the other segments (in montage order: the negatives, and in a montage that
carries several questions' needles, the other needles too), the tracked target object of an
object question, and the automatic verifier's verdicts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence

from needleforge.errors import StoreError
from needleforge.records import Bucket, Montage, ObjectTrack, Question, Segment, Verification
from needleforge.records.questions import BUCKETS

_BUCKET_ORDER: dict[Bucket, int] = {b: i for i, b in enumerate(BUCKETS)}


def target_segments(question: Question, montage: Montage) -> tuple[Segment, ...]:
    """The target segments of ``montage`` that answer ``question``, in needle order.

    Same rule as :func:`needleforge.release.answer_spans`: when the montage's target segments
    name their target (``target_id``), only those of the question's target (object id, else
    scene id) answer it; a montage whose targets are unnamed answers with all of them.
    """
    targets = [s for s in montage.segments if s.role == "target"]
    if any(s.target_id is not None for s in targets):
        wanted = question.target_object_id or question.target_scene_id
        targets = [s for s in targets if s.target_id == wanted]
    return tuple(sorted(targets, key=lambda s: (s.needle_index or 0, s.position)))


def other_segments(question: Question, montage: Montage) -> tuple[Segment, ...]:
    """Every segment of ``montage`` that does not answer ``question``, in montage order: its
    negatives and, in a montage shared by several questions, the other questions' needles
    (the description must fit none of them either)."""
    answers = {s.position for s in target_segments(question, montage)}
    return tuple(s for s in montage.segments if s.position not in answers)


def verifier_passed(verifications: Sequence[Verification]) -> bool | None:
    """Whether the automatic verification passed the question: every verdict passed.

    None when the question was never verified (it is then left out of any comparison with
    the human verdicts). "Every verdict" is the release's default rule
    (``release.require_all_verdicts``).
    """
    if not verifications:
        return None
    return all(v.passed for v in verifications)


@dataclasses.dataclass(frozen=True, slots=True)
class ReviewItem:
    """One question as a judge sees it (see the module docstring); ``negatives`` are
    :func:`other_segments`: the negatives and any other question's needles."""

    question: Question
    montage: Montage
    targets: tuple[Segment, ...]
    negatives: tuple[Segment, ...]
    target_object: ObjectTrack | None
    verifications: tuple[Verification, ...]

    @property
    def question_id(self) -> str:
        return self.question.question_id

    @property
    def needles(self) -> int:
        """How many answer spans the question has (1 = single-needle)."""
        return len(self.targets)

    @property
    def verifier_passed(self) -> bool | None:
        """:func:`verifier_passed` of this question's verdicts."""
        return verifier_passed(self.verifications)


def build_items(
    questions: Iterable[Question],
    montages: Iterable[Montage],
    *,
    objects: Iterable[ObjectTrack] = (),
    verifications: Iterable[Verification] = (),
) -> list[ReviewItem]:
    """A :class:`ReviewItem` per question, ordered by bucket (short first), then question id.

    Raises:
        StoreError: a question names a montage or target object the inputs do not hold, or
            its montage has no target segment for it (an inconsistent store).
    """
    by_montage = {m.montage_id: m for m in montages}
    by_object = {o.object_id: o for o in objects}
    verdicts: dict[str, list[Verification]] = {}
    for v in verifications:
        verdicts.setdefault(v.question_id, []).append(v)
    items = [_item(q, by_montage, by_object, verdicts) for q in questions]
    return sorted(items, key=lambda i: (_BUCKET_ORDER[i.montage.bucket], i.question_id))


def _item(question: Question, montages: Mapping[str, Montage],
          objects: Mapping[str, ObjectTrack],
          verdicts: Mapping[str, list[Verification]]) -> ReviewItem:
    qid = question.question_id
    montage = montages.get(question.montage_id)
    if montage is None:
        raise StoreError(f"question {qid}: its montage {question.montage_id} is not stored")
    track = None
    if question.target_object_id is not None:
        track = objects.get(question.target_object_id)
        if track is None:
            raise StoreError(f"question {qid}: its target object {question.target_object_id} "
                             "is not stored")
    targets = target_segments(question, montage)
    if not targets:
        raise StoreError(f"question {qid}: montage {montage.montage_id} has no target segment "
                         "for it")
    return ReviewItem(question, montage, targets, other_segments(question, montage), track,
                      tuple(sorted(verdicts.get(qid, []), key=lambda v: v.verifier)))


def choose_items(items: Sequence[ReviewItem], *, all_buckets: bool = False,
                 limit: int | None = None) -> list[ReviewItem]:
    """The questions to review: by default single-needle questions of short montages (the
    stage-2 questions every longer one is grown from); with ``all_buckets``, every question.
    ``limit`` keeps the first ``limit`` of them (order of :func:`build_items`).

    Raises:
        ValueError: ``limit`` below 1.
    """
    if limit is not None and limit < 1:
        raise ValueError(f"limit = {limit} must be >= 1 (or None for all)")
    chosen = [i for i in items
              if all_buckets or (i.montage.bucket == "short" and i.needles == 1)]
    return chosen if limit is None else chosen[:limit]
