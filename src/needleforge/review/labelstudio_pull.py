"""``needleforge review --from label-studio``: annotations back as human verdicts.

Every submitted annotation of a needleforge task (one with ``data.nf_key``) becomes one
:class:`~needleforge.records.human.HumanVerdict`: its verdict choice, its note, and — when the
``answer`` regions it left differ from the pre-filled ones — the spans the judge set, the
record that a human changed the answer. Cancelled (skipped) annotations and drafts are not
verdicts. The verdicts go into the store by :func:`~needleforge.review.human_verdicts
.record_round`, keyed by the annotation, so pulling again changes nothing, and into the
verdict file (:mod:`~needleforge.review.verdict_file`), their durable copy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from needleforge.records.human import HumanVerdict, verdict_from_choice
from needleforge.review.human_verdicts import RoundOutcome
from needleforge.review.labelstudio_project import ProjectTarget, find_project
from needleforge.review.ls_client import LabelStudio, LabelStudioError
from needleforge.review.ls_config import CHOICES, answer_ranges, chosen, note, to_frames, to_seconds
from needleforge.review.verdict_file import Kept, record_and_keep


def annotation_ref(url: str, project_id: int, annotation_id: object) -> str:
    """Where a verdict came from: ``<server>/projects/<id>/annotations/<id>``."""
    return f"{url}/projects/{project_id}/annotations/{annotation_id}"


def _predicted(data: Mapping[str, Any], fps: float) -> list[tuple[float, float]]:
    # through frames and back, as the annotation's spans are, so equal spans compare equal
    return sorted(to_seconds(to_frames((float(s), float(e)), fps), fps)
                  for s, e in data.get("nf_answer_spans", []))


def _annotator(annotation: Mapping[str, Any], users: Mapping[int, str]) -> str:
    who = annotation.get("completed_by")
    if isinstance(who, dict):
        return str(who.get("email") or who.get("id"))
    return users.get(int(who), f"user {who}") if who is not None else "unknown"


def annotation_verdict(task: Mapping[str, Any], annotation: Mapping[str, Any], *,
                       users: Mapping[int, str], ref: str) -> HumanVerdict | None:
    """The verdict of one annotation of a needleforge task; None for a skipped one or one
    without a choice.

    Raises:
        LabelStudioError: the annotation's choice is not one of ours (naming ``ref``).
    """
    if annotation.get("was_cancelled"):
        return None
    result: Sequence[Mapping[str, Any]] = annotation.get("result") or []
    choice = chosen(result)
    if choice is None:
        return None
    if choice not in CHOICES:
        raise LabelStudioError(f"{ref}: verdict {choice!r} is not one of {CHOICES}")
    data = task["data"]
    fps = float(data["fps"])
    spans = answer_ranges(result, fps)
    changed = bool(spans) and spans != _predicted(data, fps)
    valid, spans_right, clean = verdict_from_choice(choice, answer_changed=changed)
    return HumanVerdict(
        question_key=str(data["nf_key"]), question_id=str(data["nf_question_id"]),
        annotator=_annotator(annotation, users), source="label-studio", source_ref=ref,
        choice=choice, valid=valid, spans_right=spans_right, negatives_clean=clean,
        note=note(result), answer_spans=tuple(spans) if changed else None,
        updated_at=str(annotation.get("updated_at") or ""))


def pull_verdicts(ls: LabelStudio, title: str) -> tuple[int, list[HumanVerdict]]:
    """(project id, the verdicts of every annotation of the project titled ``title``).

    Raises:
        LabelStudioError: no such project, its config was changed by hand, or the server
            refused a request.
    """
    project = find_project(ls, title)
    if project is None:
        raise LabelStudioError(f"Label Studio at {ls.url}: no project titled {title!r} (push "
                               "with `needleforge review --to label-studio` first)")
    pid = int(project["id"])
    users = ls.users()
    verdicts = []
    for task in ls.tasks(pid):
        if not isinstance(task.get("data"), dict) or not task["data"].get("nf_key"):
            continue  # a task added by hand
        for annotation in task.get("annotations") or []:
            ref = annotation_ref(ls.url, pid, annotation["id"])
            verdict = annotation_verdict(task, annotation, users=users, ref=ref)
            if verdict is not None:
                verdicts.append(verdict)
    return pid, verdicts


def pull_from_label_studio(db: Path, target: ProjectTarget, *, verdict_file: Path
                           ) -> tuple[int, RoundOutcome, Kept]:
    """Pull the annotations of ``target``'s project into the store ``db`` and the verdict
    file; (project id, what was stored and found, what the file got).

    Raises:
        LabelStudioError: as :func:`pull_verdicts` (the store is not touched).
        VerdictError, StoreError, OutputError: as :func:`~needleforge.review.verdict_file
            .record_and_keep`.
    """
    with LabelStudio(target.url, target.token) as ls:
        pid, verdicts = pull_verdicts(ls, target.title)
        scope = annotation_ref(ls.url, pid, "")
    return pid, *record_and_keep(db, verdicts, path=verdict_file, scope=scope)
