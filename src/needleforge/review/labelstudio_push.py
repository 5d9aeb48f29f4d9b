"""``needleforge review --to label-studio``: one Label Studio task per question.

Re-runnable: every task carries its question's content key
(:func:`~needleforge.review.verdicts.question_key`, ``data.nf_key``). A push adds a task for
each chosen question whose key no task has, leaves tasks whose key is current alone, and for
tasks whose key no current question has any more (the question changed or vanished) deletes
those nobody has annotated yet and keeps the others: an annotator's work is never deleted or
overwritten. The montage videos are rendered first (the render stage's cache and
``<videos>/<montage_id>.mp4`` files; current ones are skipped).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from needleforge.params import RenderParams
from needleforge.review.items import ReviewItem, build_items, choose_items
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
from needleforge.stages.render import render_montages
from needleforge.store import Store


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
class _Rendered:
    chosen: list[ReviewItem]
    all_keys: set[str]  # of every question of the store, chosen or not
    rendered: int


def _choose_and_render(db: Path, *, all_buckets: bool, limit: int | None, videos: Path,
                       cache: Path, render: RenderParams) -> _Rendered:
    with Store(db, read_only=True) as store:
        items = build_items(store.questions(), store.montages(), objects=store.objects(),
                            verifications=store.verifications())
        chosen = choose_items(items, all_buckets=all_buckets, limit=limit)
        montages = list({i.montage.montage_id: i.montage for i in chosen}.values())
        report = render_montages(
            montages, scenes_by_id={s.scene_id: s for s in store.scenes()},
            videos_by_id={v.video_id: v for v in store.videos()}, out_dir=videos,
            cache_dir=cache, params=render)
    return _Rendered(chosen, {question_key(i.question, i.montage) for i in items},
                     sum(1 for m in report.montages if not m.skipped))


def push_to_label_studio(
    db: Path,
    target: ProjectTarget,
    *,
    videos: Path,
    render: RenderParams,
    cache: Path | None = None,
    all_buckets: bool = False,
    limit: int | None = None,
    restore_config: bool = False,
    on_step: Callable[[str], None] | None = None,
) -> PushOutcome:
    """Create or update the review project of ``target`` with the questions of ``db``;
    ``restore_config`` replaces a project config that differs from ours.

    The server and token are checked first, then the project (its config must be ours),
    before any video is rendered.

    Raises:
        LabelStudioError: the server cannot be reached or refuses the token (naming its URL),
            the project's config was changed by hand, ``videos`` is not under the server's
            document root, or the server refused a request.
        StoreError: ``db`` is missing or not a needleforge store.
        MediaError: a montage cannot be rendered.
    """
    if target.media_root is None:
        raise LabelStudioError(
            f"Label Studio at {target.url}: the server's local-files root is not known; pass "
            "--media-root (the LOCAL_FILES_DOCUMENT_ROOT the server was started with)")
    check_served(videos, target.media_root)  # before any work
    say = on_step or (lambda _msg: None)
    with LabelStudio(target.url, target.token) as ls:
        if not restore_config:
            find_project(ls, target.title)  # server, token and config, before any work
        else:
            ls.projects()  # server and token, before any work
        say(f"rendering the chosen questions' montages into {videos}")
        chosen = _choose_and_render(db, all_buckets=all_buckets, limit=limit, videos=videos,
                                    cache=cache or videos / ".cache", render=render)
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
                url = video_url(videos / f"{item.montage.montage_id}.mp4", target.media_root)
                new.append(task_payload(item, key=key, video_url=url, fps=render.fps))
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

