"""What a release ships: verified NeMo questions and VNBench tries whose sources may ship.

Order of decisions: verification (:func:`select_questions`), then the sources of every
candidate question (a NeMo question's montage segments, a VNBench sample's haystack) go
through :func:`needleforge.release.sources.assess`; a question with any excluded source is
dropped, and the drop is recorded per source so the manifest, card and changelog can list it.
Human verdicts come next (:mod:`needleforge.release.human_review`): a question humans judged
invalid, or one that ``release.require_human_review`` asks a human decision of and has none,
is left out, and a human-corrected answer replaces the plan's. Last, a NeMo question with an
answer window shorter than ``min_window_s``
(``quality.min_answer_window_s``) is left out: tIoU cannot judge so short a window (see
``docs/metrics.md``); the gate checks the shipped windows again.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from needleforge.errors import ReleaseError
from needleforge.params import ReleaseParams
from needleforge.records import Montage, Question, Verification, Video
from needleforge.records.human import HumanVerdict
from needleforge.release import sources as src
from needleforge.release.answers import (
    Selection,
    montage_record,
    question_record,
    select_questions,
)
from needleforge.release.human_review import HumanReview, review_questions
from needleforge.release.vnbench_input import VNBenchInput

#: Answer windows are rounded to 1e-6 s in records; a 3 s window stays a 3 s window.
_WINDOW_TOLERANCE_S = 1e-6


@dataclasses.dataclass(frozen=True, slots=True)
class Content:
    """The shipped records (NeMo by id, then VNBench by id and try), plans and sources.

    ``source_rows``/``excluded_rows`` are the manifest's ``sources`` and ``excluded_sources``.
    """

    selection: Selection
    records: list[dict[str, Any]]
    montages: list[Montage]
    montage_records: list[dict[str, Any]]
    sources: list[Video]
    policy: src.SourcePolicy
    source_rows: list[dict[str, Any]]
    excluded_rows: list[dict[str, Any]]
    vnbench: VNBenchInput | None
    short_windows: tuple[str, ...] = ()
    human: HumanReview | None = None

    @property
    def released_questions(self) -> list[Question]:
        """The NeMo store questions that ship (for the Table 2 statistics)."""
        kept = {r["question_id"] for r in self.records if r["family"] == "nemo"}
        return [q for q, _ in self.selection.released if q.question_id in kept]


def _montage_sources(montage: Montage) -> list[str]:
    return sorted({s.video_id for s in montage.segments})


def gather(
    *, questions: Sequence[Question], verifications: Sequence[Verification],
    montages: Sequence[Montage], videos: Sequence[Video], params: ReleaseParams,
    vnbench: VNBenchInput | None, earlier: Sequence[src.EarlierRelease],
    min_window_s: float = 0.0, human: Sequence[HumanVerdict] = (),
    keys: Mapping[str, str] | None = None,
) -> Content:
    """Decide what ships (see the module docstring); ``min_window_s`` is the shortest answer
    window a NeMo question may have. ``human`` are the stored human verdicts and ``keys`` the
    questions' content keys (:mod:`~needleforge.release.human_review` decides with them
    after the verifier: ``params.require_human_review``).

    Raises:
        ReleaseError: a question's montage or a montage's source video is not in the store;
            a source is unauthorized and ``params.unauthorized`` is ``error``; nothing is
            left to release.
    """
    selection = select_questions(questions, verifications,
                                 include_unverified=params.include_unverified,
                                 require_all_verdicts=params.require_all_verdicts)
    review = review_questions(questions, (q.question_id for q, _ in selection.released),
                              keys=keys or {}, verdicts=human,
                              rule=params.require_human_review, seed=params.human_review_seed)
    if review.left_out:
        selection = dataclasses.replace(selection, released=tuple(
            (q, v) for q, v in selection.released if q.question_id not in review.left_out))
    by_id = {m.montage_id: m for m in montages}
    video_by_id = {v.video_id: v for v in videos}
    candidates: set[str] = set(vnbench.source_of.values()) if vnbench else set()
    for question, _ in selection.released:
        if question.montage_id not in by_id:
            raise ReleaseError(f"question {question.question_id}: montage "
                               f"{question.montage_id} is not in the store")
        candidates.update(_montage_sources(by_id[question.montage_id]))
    unknown = sorted(candidates - set(video_by_id))
    if unknown:
        raise ReleaseError(f"source videos {unknown} of released questions are not in the store")
    policy = src.assess([video_by_id[v] for v in candidates], day=params.check_day(),
                        required_scopes=params.required_scopes, earlier=earlier,
                        exclude_contaminated=params.exclude_contaminated)
    if policy.unauthorized and params.unauthorized == "error":
        listed = "; ".join(f"{v}: {why}" for v, why in policy.unauthorized.items())
        raise ReleaseError(f"{len(policy.unauthorized)} source(s) may not be released: {listed}")
    dropped: list[tuple[str, str]] = []
    records: list[dict[str, Any]] = []
    by_montage: dict[str, list[str]] = defaultdict(list)
    families: dict[str, set[str]] = defaultdict(set)
    short: list[str] = []
    for question, verdicts in selection.released:
        montage = by_id[question.montage_id]
        used = _montage_sources(montage)
        bad = [v for v in used if v in policy.excluded]
        if bad:
            dropped.extend((v, question.question_id) for v in bad)
            continue
        record = question_record(question, montage, verdicts,
                                 answer=review.answers.get(question.question_id),
                                 answer_changed_by=review.changed_by(question.question_id))
        if min(e - s for s, e in record["answer_spans"]) < min_window_s - _WINDOW_TOLERANCE_S:
            short.append(question.question_id)
            continue
        record["source_video_ids"] = used
        records.append(record)
        by_montage[montage.montage_id].append(question.question_id)
        for v in used:
            families[v].add("nemo")
    for record in vnbench.records if vnbench else ():
        vid = record["source_video_ids"][0]
        if vid in policy.excluded:
            dropped.append((vid, f"{record['question_id']} (try {record['try']})"))
            continue
        records.append(record)
        families[vid].add("vnbench")
    if not records:
        raise ReleaseError(
            f"nothing to release: of {len(questions)} NeMo questions, "
            f"{len(selection.failed)} failed verification, {len(selection.unverified)} were "
            f"never verified, {len(review.left_out)} lacked a valid human decision, "
            f"{len(short)} had an answer window shorter than "
            f"{min_window_s:g} s, and {len(dropped)} question(s) or tries were dropped with "
            f"their {len(policy.excluded)} excluded source(s)")
    used_montages = [by_id[m] for m in sorted(by_montage)]
    plans = [montage_record(m, question_ids=by_montage[m.montage_id], videos=video_by_id)
             for m in used_montages]
    shipped = [video_by_id[v] for v in sorted(families)]
    return Content(
        selection=selection, records=records, montages=used_montages, montage_records=plans,
        sources=shipped, policy=policy,
        source_rows=src.source_entries(shipped, families=families,
                                       contaminated=policy.contaminated),
        excluded_rows=src.excluded_entries(policy, videos=video_by_id,
                                           dropped=src.group_dropped(dropped)),
        vnbench=vnbench, short_windows=tuple(short), human=review)
