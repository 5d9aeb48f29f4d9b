"""The review command's store work: contact sheets of the store's questions, a Label Studio push
of them, and human verdicts (from Label Studio or a YAML verdict file) recorded into it.

The review itself (sheets, tasks, verdicts and what they say) is :mod:`needleforge.review`'s;
these functions read and write the store around it, and keep the verdict file
(:mod:`needleforge.review.verdict_file`) in step with the verdicts a pull stores.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from needleforge.errors import StoreError
from needleforge.params import RenderParams
from needleforge.records.human import HumanVerdict
from needleforge.review.human_verdicts import RoundOutcome, current_keys, sum_up_round
from needleforge.review.items import ReviewItem, build_items, choose_items
from needleforge.review.labelstudio_project import ProjectTarget
from needleforge.review.labelstudio_pull import annotation_ref, pull_verdicts
from needleforge.review.labelstudio_push import (
    Chosen,
    PushOutcome,
    check_server,
    served_root,
    update_tasks,
)
from needleforge.review.ls_client import LabelStudio
from needleforge.review.run import ReviewInputs, ReviewOutcome, write_review
from needleforge.review.verdict_file import (
    Kept,
    merge_verdicts,
    read_verdict_file,
    verdict_key,
    write_verdict_file,
)
from needleforge.review.verdicts import load_verdicts, question_key
from needleforge.stages.render import render_montages
from needleforge.store import Store
from needleforge.store.human import human_verdicts, record_human_verdicts


def _items(store: Store) -> list[ReviewItem]:
    return build_items(store.questions(), store.montages(), objects=store.objects(),
                       verifications=store.verifications())


def review_store(
    db: Path,
    out: Path,
    *,
    verdicts_path: Path | None = None,
    all_buckets: bool = False,
    limit: int | None = None,
    on_sheet: Callable[[int, int], None] | None = None,
) -> ReviewOutcome:
    """Write the review folder ``out`` for the questions of the store ``db``
    (:func:`needleforge.review.run.write_review`).

    ``on_sheet(done, total)`` is called after each sheet (a progress bar).

    Raises:
        VerdictError: the verdict file is missing or malformed (checked before any work).
        StoreError: ``db`` is missing, not a needleforge store, or inconsistent.
        OutputError: ``out`` cannot be created or written.
    """
    verdicts = {} if verdicts_path is None else load_verdicts(verdicts_path)
    with Store(db, read_only=True) as store:
        inputs = ReviewInputs(_items(store), {v.video_id: v for v in store.videos()},
                              {s.scene_id: s for s in store.scenes()}, db)
    return write_review(inputs, out, verdicts=verdicts, verdicts_path=verdicts_path,
                        all_buckets=all_buckets, limit=limit, on_sheet=on_sheet)


def _choose_and_render(db: Path, *, all_buckets: bool, limit: int | None, videos: Path,
                       cache: Path, render: RenderParams) -> Chosen:
    with Store(db, read_only=True) as store:
        items = _items(store)
        chosen = choose_items(items, all_buckets=all_buckets, limit=limit)
        montages = list({i.montage.montage_id: i.montage for i in chosen}.values())
        report = render_montages(
            montages, scenes_by_id={s.scene_id: s for s in store.scenes()},
            videos_by_id={v.video_id: v for v in store.videos()}, out_dir=videos,
            cache_dir=cache, params=render)
    return Chosen(chosen, frozenset(question_key(i.question, i.montage) for i in items),
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
    """Create or update the review project of ``target`` with the questions of ``db``
    (:mod:`needleforge.review.labelstudio_push`); ``restore_config`` replaces a project config
    that differs from ours.

    The server and token are checked first, then the project (its config must be ours),
    before any video is rendered.

    Raises:
        LabelStudioError: the server cannot be reached or refuses the token (naming its URL),
            the project's config was changed by hand, ``videos`` is not under the server's
            document root, or the server refused a request.
        StoreError: ``db`` is missing or not a needleforge store.
        MediaError: a montage cannot be rendered.
    """
    media_root = served_root(target, videos)
    with LabelStudio(target.url, target.token) as ls:
        check_server(ls, target, restore_config=restore_config)
        if on_step is not None:
            on_step(f"rendering the chosen questions' montages into {videos}")
        chosen = _choose_and_render(db, all_buckets=all_buckets, limit=limit, videos=videos,
                                    cache=cache or videos / ".cache", render=render)
        return update_tasks(ls, target, chosen, videos=videos, media_root=media_root,
                            fps=render.fps, restore_config=restore_config)


def pull_from_label_studio(db: Path, target: ProjectTarget, *, verdict_file: Path
                           ) -> tuple[int, RoundOutcome, Kept]:
    """Pull the annotations of ``target``'s project into the store ``db`` and the verdict
    file (:func:`record_and_keep`); (project id, what was stored and found, what the file got).

    Raises:
        LabelStudioError: as :func:`~needleforge.review.labelstudio_pull.pull_verdicts` (the
            store is not touched).
        VerdictError, StoreError, OutputError: as :func:`record_and_keep`.
    """
    with LabelStudio(target.url, target.token) as ls:
        pid, verdicts = pull_verdicts(ls, target.title)
        scope = annotation_ref(ls.url, pid, "")
    return pid, *record_and_keep(db, verdicts, path=verdict_file, scope=scope)


def record_round(db: Path, verdicts: Sequence[HumanVerdict], *,
                 scope: str | None = None) -> RoundOutcome:
    """Store ``verdicts`` in ``db`` (one transaction) and sum up the stored verdicts
    (:func:`~needleforge.review.human_verdicts.sum_up_round`, ``scope`` included).

    Raises:
        StoreError: ``db`` is missing, not a store, or the write failed (nothing written).
    """
    if not db.exists():
        raise StoreError(f"{db}: store not found")
    with Store(db) as store:
        recorded = record_human_verdicts(store, verdicts)
        keys = current_keys(_items(store))
        stored = human_verdicts(store)
    return sum_up_round(verdicts, recorded=recorded, keys=keys, stored=stored, scope=scope)


def record_and_keep(db: Path, verdicts: Sequence[HumanVerdict], *, path: Path,
                    scope: str | None = None) -> tuple[RoundOutcome, Kept]:
    """Record a pull's ``verdicts`` in the store ``db``
    (:func:`record_round`, ``scope`` as there), then merge
    them into the verdict file ``path``.

    The file is read first, so a corrupt one stops the pull before the store is touched.

    Raises:
        VerdictError: the verdict file is malformed (nothing written anywhere).
        StoreError: as ``record_round`` (the file is left as it was).
        OutputError: the file cannot be written (the store keeps the verdicts; pull again).
    """
    kept = {verdict_key(v): v for v in read_verdict_file(path)}
    outcome = record_round(db, verdicts, scope=scope)
    written = sum(1 for v in {verdict_key(v): v for v in verdicts}.values()
                  if kept.get(verdict_key(v)) != v)
    merged = merge_verdicts(kept.values(), verdicts)
    write_verdict_file(path, merged)
    return outcome, Kept(path, len(merged), written)


def record_verdict_file(db: Path, path: Path) -> RoundOutcome:
    """Record every verdict of the file ``path`` in the store ``db``, as a pull would (rows
    equal to the stored ones are not rewritten): how the release stage gets the human
    verdicts a rebuilt store lost. A missing file records nothing.

    Raises:
        VerdictError: the file is malformed (the store is not touched).
        StoreError: as :func:`record_round`.
    """
    return record_round(db, read_verdict_file(path))
