"""``needleforge review --to label-studio``: one Label Studio task per question.

Re-runnable: every task carries its question's content key
(:func:`~needleforge.review.verdicts.question_key`, ``data.nf_key``). A push adds a task for
each chosen question whose key no task has, leaves tasks whose key is current alone, and for
tasks whose key no current question has any more (the question changed or vanished) deletes
those nobody has annotated yet and keeps the others: an annotator's work is never deleted or
overwritten. The montage videos are rendered first (the render stage's cache and
``<videos>/<montage_id>.mp4`` files; current ones are skipped). The push's steps, in order,
are :func:`needleforge.stages.review.push_to_label_studio`'s: :func:`served_root` and
:func:`check_server` before any work, then the store read and the renders, then
:func:`update_tasks`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from needleforge.review.items import ReviewItem
from needleforge.review.labelstudio_project import (
    ProjectTarget,
    check_served,
    ensure_local_storage,
    ensure_project,
    find_project,
    video_url,
)
from needleforge.review.ls_client import LabelStudio, LabelStudioError
from needleforge.review.ls_config import task_payload
from needleforge.review.verdicts import question_key


@dataclasses.dataclass(frozen=True, slots=True)
class PushOutcome:
    """What a push did to the project ``project_id`` at ``url``."""

    url: str
    project_id: int
    created: bool
    added: int
    current: int
    removed_stale: int
    kept_stale: int
    rendered: int

    def to_text(self) -> str:
        made = "created" if self.created else "updated"
        text = (f"Label Studio project {self.project_id} {made} at {self.url}/projects/"
                f"{self.project_id}: {self.added} task(s) added, {self.current} already "
                f"current; {self.rendered} montage video(s) rendered")
        if self.removed_stale or self.kept_stale:
            text += (f"\n  stale tasks (question changed or gone): {self.removed_stale} "
                     f"removed (never annotated), {self.kept_stale} kept (annotated)")
        return text


@dataclasses.dataclass(frozen=True, slots=True)
class Chosen:
    """The questions a push sends (their montages rendered) and what else the store holds."""

    chosen: Sequence[ReviewItem]
    all_keys: frozenset[str]  # of every question of the store, chosen or not
    rendered: int  # montage videos rendered now (current ones are skipped)


def served_root(target: ProjectTarget, videos: Path) -> Path:
    """The server's local-files root, checked to hold ``videos`` (before any work).

    Raises:
        LabelStudioError: the root is not known, or ``videos`` is not under it.
    """
    if target.media_root is None:
        raise LabelStudioError(
            f"Label Studio at {target.url}: the server's local-files root is not known; pass "
            "--media-root (the LOCAL_FILES_DOCUMENT_ROOT the server was started with)")
    check_served(videos, target.media_root)
    return target.media_root


def check_server(ls: LabelStudio, target: ProjectTarget, *, restore_config: bool) -> None:
    """The server and token, and unless ``restore_config`` the project's config (it must be
    ours), checked before any video is rendered.

    Raises:
        LabelStudioError: the server cannot be reached or refuses the token (naming its URL),
            or the project's config was changed by hand.
    """
    if not restore_config:
        find_project(ls, target.title)
    else:
        ls.projects()


def update_tasks(ls: LabelStudio, target: ProjectTarget, chosen: Chosen, *, videos: Path,
                 media_root: Path, fps: float, restore_config: bool) -> PushOutcome:
    """Create or update ``target``'s project with a task per chosen question (videos under
    ``videos``, served from ``media_root``); ``restore_config`` replaces a project config that
    differs from ours.

    Raises:
        LabelStudioError: the project's config was changed by hand, or the server refused a
            request.
    """
    project, created = ensure_project(ls, target, restore_config=restore_config)
    pid = int(project["id"])
    ensure_local_storage(ls, pid, videos)
    # tasks added by hand (no nf_key) are not ours: never touched
    existing = {str(t["data"]["nf_key"]): t for t in ls.tasks(pid)
                if isinstance(t.get("data"), dict) and t["data"].get("nf_key")}
    new = []
    for item in chosen.chosen:
        key = question_key(item.question, item.montage)
        if key not in existing:
            url = video_url(videos / f"{item.montage.montage_id}.mp4", media_root)
            new.append(task_payload(item, key=key, video_url=url, fps=fps))
    ls.import_tasks(pid, new)
    removed = kept = 0
    for key, task in existing.items():
        if key in chosen.all_keys:
            continue
        if (task.get("annotations") or task.get("total_annotations")
                or task.get("drafts") or task.get("cancelled_annotations")):
            kept += 1
        else:
            ls.delete_task(int(task["id"]))
            removed += 1
    current = sum(1 for i in chosen.chosen
                  if question_key(i.question, i.montage) in existing)
    return PushOutcome(ls.url, pid, created, len(new), current, removed, kept,
                       chosen.rendered)

