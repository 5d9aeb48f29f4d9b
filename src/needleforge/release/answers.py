"""Which questions a release ships, their answers, and their release records.

A question ships when its verdicts passed (see :class:`~needleforge.params.ReleaseParams`);
its answer is derived from its montage plan, never stored: the target segments that belong to
it (:func:`answer_spans`). Records are release question rows
(:mod:`needleforge.records.questions`, the format the scorer reads) carrying the plan ids as
extra columns; a row checks itself when it is built, so a record that would not load in the
scorer is never written.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from needleforge.errors import ReleaseError
from needleforge.records import Montage, Question, Verification, Video, verdicts_pass
from needleforge.records.questions import GroundingQuestion, QuestionRecordError

#: Times in release files are rounded to the microsecond: plans add floats, and ``9.5`` reads
#: better than ``9.499999999999998``. Rounding is monotonic, so spans stay inside the montage.
TIME_DECIMALS = 6


def seconds(value: float) -> float:
    """A time as release files write it (rounded to :data:`TIME_DECIMALS`)."""
    return round(float(value), TIME_DECIMALS)


def video_path(montage_id: str) -> str:
    """Where a montage's rendered video lives, relative to the release root."""
    return f"videos/{montage_id}.mp4"


def answer_spans(question: Question, montage: Montage) -> list[tuple[float, float]]:
    """The ground-truth spans of ``question`` in ``montage``, in needle order.

    Why the rule: a montage may carry the needles of several questions, and then its target
    segments name their target (``target_id``: the object id of an object needle, the scene id
    of a scene needle); a montage of one target leaves ``target_id`` unset and all of its target
    segments answer the question.

    Raises:
        ReleaseError: the question belongs to another montage, or the plan holds no target
            segment for it.
    """
    if question.montage_id != montage.montage_id:
        raise ReleaseError(f"question {question.question_id} belongs to montage "
                           f"{question.montage_id}, not {montage.montage_id}")
    named = any(s.role == "target" and s.target_id is not None for s in montage.segments)
    target_id = question.target_object_id or question.target_scene_id
    spans = montage.target_spans(target_id if named else None)
    if not spans:
        raise ReleaseError(f"question {question.question_id}: montage {montage.montage_id} has "
                           f"no target segment for {target_id}")
    return spans


@dataclasses.dataclass(frozen=True, slots=True)
class Selection:
    """The outcome of filtering questions by their verdicts.

    ``released`` pairs each shipped question with the verdicts that passed it (empty for an
    unverified question let in by ``include_unverified``); ``failed`` and ``unverified`` hold
    the ids left out, sorted.
    """

    released: tuple[tuple[Question, tuple[Verification, ...]], ...]
    failed: tuple[str, ...]
    unverified: tuple[str, ...]


def select_questions(
    questions: Iterable[Question],
    verifications: Iterable[Verification],
    *,
    include_unverified: bool = False,
    require_all_verdicts: bool = True,
) -> Selection:
    """Keep the questions whose verdicts passed, sorted by id.

    A question judged by several verifiers passes when all of them passed it
    (``require_all_verdicts``) or when any did. A question without a verdict is left out
    unless ``include_unverified``.
    """
    verdicts: dict[str, list[Verification]] = defaultdict(list)
    for v in verifications:
        verdicts[v.question_id].append(v)
    released: list[tuple[Question, tuple[Verification, ...]]] = []
    failed: list[str] = []
    unverified: list[str] = []
    for q in sorted(questions, key=lambda q: q.question_id):
        mine = sorted(verdicts.get(q.question_id, []), key=lambda v: (v.verifier, v.model_version))
        if not mine:
            if include_unverified:
                released.append((q, ()))
            else:
                unverified.append(q.question_id)
        elif verdicts_pass(mine, require_all=require_all_verdicts):
            released.append((q, tuple(v for v in mine if v.passed)))
        else:
            failed.append(q.question_id)
    return Selection(tuple(released), tuple(failed), tuple(unverified))


def question_record(
    question: Question, montage: Montage, verdicts: Sequence[Verification], *,
    answer: Sequence[tuple[float, float]] | None = None, answer_changed_by: Sequence[str] = (),
) -> dict[str, Any]:
    """The release record of one NeMo question (key order is the file's column order).

    ``answer``: spans humans set instead of the plan's (``answer_changed_by`` names them;
    the record then carries that column).

    Raises:
        ReleaseError: no answer can be derived, or the scorer would refuse the record (the
            message carries the scorer's reason).
    """
    spans = list(answer) if answer is not None else answer_spans(question, montage)
    human = {"answer_changed_by": list(answer_changed_by)} if answer is not None else {}
    try:
        row = GroundingQuestion(
            question_id=question.question_id, family="nemo",
            task=f"{question.needle_type}_grounding", bucket=montage.bucket,
            needle_type=question.needle_type, n_needles=len(spans), question=question.text,
            video=video_path(montage.montage_id), duration_s=seconds(montage.duration_s),
            answer_spans=tuple((seconds(s), seconds(e)) for s, e in spans),
            extra={
                "montage_id": montage.montage_id,
                "target_scene_id": question.target_scene_id,
                "target_object_id": question.target_object_id,
                "description": question.description,
                "template_id": question.template_id,
                "backend": question.backend,
                "model_version": question.model_version,
                "verified_by": [f"{v.verifier}/{v.model_version}" for v in verdicts],
                **human,
            })
        return row.to_dict()
    except QuestionRecordError as exc:
        raise ReleaseError(f"question {question.question_id} would not load in the scorer: "
                           f"{exc}") from exc


def montage_record(
    montage: Montage, *, question_ids: Sequence[str], videos: Mapping[str, Video]
) -> dict[str, Any]:
    """The release record of one montage plan: segments, roles, needles and their sources.

    Raises:
        ReleaseError: a segment comes from a video the store does not know.
    """
    missing = sorted({s.video_id for s in montage.segments} - set(videos))
    if missing:
        raise ReleaseError(f"montage {montage.montage_id}: source videos {missing} are not in "
                           "the store")
    sources = sorted({s.video_id for s in montage.segments})
    return {
        "montage_id": montage.montage_id,
        "bucket": montage.bucket,
        "duration_s": seconds(montage.duration_s),
        "seed": montage.seed,
        "video": video_path(montage.montage_id),
        "question_ids": sorted(question_ids),
        "sources": [{"video_id": v, "sha256": videos[v].sha256, "program": videos[v].program}
                    for v in sources],
        "segments": [
            {"position": s.position, "role": s.role, "needle_index": s.needle_index,
             "target_id": s.target_id, "video_id": s.video_id, "scene_id": s.scene_id,
             "src_start_s": seconds(s.src_start_s), "src_end_s": seconds(s.src_end_s),
             "montage_start_s": seconds(s.montage_start_s),
             "montage_end_s": seconds(s.montage_end_s)}
            for s in montage.segments
        ],
    }
