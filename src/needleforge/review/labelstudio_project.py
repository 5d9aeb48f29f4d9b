"""Where a review round lives in Label Studio: the server, the project, the served videos.

The project is found by its title (``review.project`` in params.yaml, or the CLI). A project
whose labeling config differs from ours (:data:`~needleforge.review.ls_config.LABEL_CONFIG`)
is refused on push and on pull, naming every element that differs: a renamed choice would
otherwise turn annotators' verdicts into something else.

Videos are served by the server itself from its local-files root (``label-studio start`` with
``LOCAL_FILES_SERVING_ENABLED=true`` and ``LOCAL_FILES_DOCUMENT_ROOT=<root>``): the montage
folder must lie under that root, and the project gets a local-files source on the folder
(the server serves a file only to projects with such a source).
"""

from __future__ import annotations

import dataclasses
import os
import urllib.parse
from pathlib import Path
from typing import Any

from needleforge.params import ReviewParams
from needleforge.review.ls_client import LabelStudio, LabelStudioError
from needleforge.review.ls_config import LABEL_CONFIG, config_differences

URL_ENV = "LABEL_STUDIO_URL"
TOKEN_ENV = "LABEL_STUDIO_API_KEY"
ROOT_ENV = "LOCAL_FILES_DOCUMENT_ROOT"
DEFAULT_TITLE = ReviewParams().project


@dataclasses.dataclass(frozen=True, slots=True)
class ProjectTarget:
    """A review round's server and project. ``media_root``: the server's
    ``LOCAL_FILES_DOCUMENT_ROOT``; ``annotators``: how many judges each task asks for."""

    url: str
    token: str
    title: str = DEFAULT_TITLE
    media_root: Path | None = None
    annotators: int = 1

    def __post_init__(self) -> None:
        if self.annotators < 1:
            raise LabelStudioError(f"annotators = {self.annotators} must be >= 1")
        if len(self.title.strip()) < 3:
            raise LabelStudioError(f"project title {self.title!r} must have at least 3 characters "
                             "(Label Studio's rule)")

    @classmethod
    def from_env(cls, *, url: str | None = None, token: str | None = None,
                 title: str | None = None, media_root: Path | None = None,
                 annotators: int | None = None, params: ReviewParams | None = None,
                 ) -> ProjectTarget:
        """Arguments given win; else ``LABEL_STUDIO_URL``, ``LABEL_STUDIO_API_KEY`` and
        ``LOCAL_FILES_DOCUMENT_ROOT`` (the names the server and its SDK read); else
        ``params`` (``review:`` of params.yaml, never the token)."""
        params = params or ReviewParams()
        root = media_root or (Path(os.environ[ROOT_ENV]) if os.environ.get(ROOT_ENV) else None)
        return cls(url=url or os.environ.get(URL_ENV) or params.label_studio_url,
                   token=token or os.environ.get(TOKEN_ENV, ""),
                   title=title or params.project, media_root=root,
                   annotators=annotators or params.annotators)


def find_project(ls: LabelStudio, title: str, *, restore_config: bool = False,
                 ) -> dict[str, Any] | None:
    """The project titled ``title`` (None when there is none), its config checked; with
    ``restore_config`` a config that differs is replaced by ours (the server refuses that
    when its existing annotations would not fit the new config).

    Raises:
        LabelStudioError: two projects share the title, or the project's labeling config
            differs from ours (the message lists each difference), or the server refused
            to restore it.
    """
    found = [p for p in ls.projects() if p.get("title") == title]
    if len(found) > 1:
        ids = ", ".join(str(p["id"]) for p in found)
        raise LabelStudioError(f"Label Studio at {ls.url}: {len(found)} projects are titled "
                               f"{title!r} (ids {ids}); rename all but one")
    if not found:
        return None
    project = found[0]
    differences = config_differences(str(project.get("label_config", "")))
    if differences and restore_config:
        return ls.update_project(int(project["id"]), {"label_config": LABEL_CONFIG})
    if differences:
        lines = "\n  ".join(differences[:12])
        raise LabelStudioError(
            f"Label Studio at {ls.url}: project {title!r} (id {project['id']}) has a labeling "
            f"config that was changed by hand; needleforge refuses to use it. What differs:\n"
            f"  {lines}\nPush with --restore-config to put needleforge's config back (the "
            "server refuses if existing annotations would not fit it), or use another "
            "project title.")
    return project


def ensure_project(ls: LabelStudio, target: ProjectTarget, *, restore_config: bool = False,
                   ) -> tuple[dict[str, Any], bool]:
    """The project of ``target``, created when missing; (project, created).

    Raises:
        LabelStudioError: as :func:`find_project`, or the server refused the project.
    """
    fields = {"title": target.title, "label_config": LABEL_CONFIG,
              "maximum_annotations": target.annotators, "show_collab_predictions": True,
              "description": "needleforge question review: one task per question; correct "
                             "the answer spans, pick a verdict."}
    project = find_project(ls, target.title, restore_config=restore_config)
    if project is None:
        return ls.create_project(fields), True
    if project.get("maximum_annotations") != target.annotators:
        project = ls.update_project(int(project["id"]),
                                    {"maximum_annotations": target.annotators})
    return project, False


def check_served(path: Path, media_root: Path, *, what: str = "montage folder") -> None:
    """Refuse ``path`` unless it lies under ``media_root`` (the server serves nothing else).

    Raises:
        LabelStudioError: naming both folders.
    """
    if not path.resolve().is_relative_to(media_root.resolve()):
        raise LabelStudioError(f"{what} {path.resolve()} is not under the Label Studio "
                               f"server's {ROOT_ENV} {media_root.resolve()}; render into a "
                               "folder under it (--videos) or start the server with a root "
                               "above it")


def video_url(video: Path, media_root: Path) -> str:
    """The ``/data/local-files/`` URL of ``video`` on a server whose document root is
    ``media_root``.

    Raises:
        LabelStudioError: ``video`` does not lie under ``media_root``.
    """
    check_served(video, media_root, what="montage video")
    relative = video.resolve().relative_to(media_root.resolve())
    return "/data/local-files/?d=" + urllib.parse.quote(relative.as_posix())


def ensure_local_storage(ls: LabelStudio, project_id: int, folder: Path) -> None:
    """Give the project a local-files source on ``folder`` unless it has one on it or above.

    Raises:
        LabelStudioError: the server refused it (e.g. the folder is outside its root, or
            local files are not enabled); the message carries the server's reason.
    """
    folder = folder.resolve()
    for storage in ls.local_storages(project_id):
        if folder.is_relative_to(Path(str(storage.get("path", "/nonexistent")))):
            return
    ls.add_local_storage(project_id, str(folder), title="needleforge montages")
