"""Publishing a release with DVC + git, and fetching or loading one by tag.

The flow a release follows::

    publish(releases/<name>, repo=R, tag=T, remote=None)
      1. track:  a pipeline output (an ``outs`` entry of ``dvc.yaml``) is recorded with
                 ``dvc commit --force <path>`` (updates ``dvc.lock``); any other folder with
                 ``dvc add <path>`` (writes ``<path>.dvc`` and a ``.gitignore`` entry)
      2. commit: ``git add`` of those metadata files, ``git commit -m "release T"``
      3. tag:    ``git tag -a T`` on that commit (the tag pins the release)
      4. push:   ``dvc push [-r remote] <path>`` sends the files to the DVC remote

Consumers never need the producer's workspace: :func:`pull` copies the files of a path at a
tag into a folder (like ``dvc get``) and :func:`load_release` reads the questions and the
manifest through :func:`dvc.api.open`; both take a git URL or a local clone as ``repo``.
Git identity is the repository's own (``user.name`` / ``user.email``); DVC runs as
``python -m dvc`` from the interpreter running needleforge, so the venv's DVC is the one used.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

import yaml
from dvc.api import DVCFileSystem
from dvc.api import open as dvc_open
from dvc.exceptions import DvcException
from dvc_data.index.index import DataIndexError
from scmrepo.exceptions import SCMError

from needleforge.errors import EvaluationError, ReleaseError
from needleforge.evaluate import load_questions
from needleforge.evaluate.records import Question

DEFAULT_PATH = "releases/sample"
# What DVC raises for an unknown rev, a missing path, or data absent from cache and remote.
_FETCH_ERRORS = (DvcException, DataIndexError, SCMError, FileNotFoundError)


@dataclasses.dataclass(frozen=True, slots=True)
class PublishResult:
    """What :func:`publish` did: the tag, its commit, and the files that track the release."""

    tag: str
    commit: str
    tracked_by: tuple[str, ...]
    pushed: bool


@dataclasses.dataclass(frozen=True, slots=True)
class LoadedRelease:
    """A release read at a pinned revision: its questions (scorer records) and manifest."""

    rev: str
    repo: str
    path: str
    questions: tuple[Question, ...]
    manifest: dict[str, Any]

    @property
    def name(self) -> str:
        """The release name recorded in the manifest (the folder name when absent)."""
        return str(self.manifest.get("name", PurePosixPath(self.path).name))


def _run(cmd: list[str], *, cwd: Path, what: str) -> str:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip()
        raise ReleaseError(f"{what} failed in {cwd} ({' '.join(cmd[:4])} …): {detail}")
    return proc.stdout.strip()


def _dvc(*args: str, cwd: Path, what: str) -> str:
    return _run([sys.executable, "-m", "dvc", *args], cwd=cwd, what=what)


def _git(*args: str, cwd: Path, what: str) -> str:
    return _run(["git", *args], cwd=cwd, what=what)


def _pipeline_outs(repo: Path) -> set[str]:
    """Every ``outs`` path declared in ``repo/dvc.yaml`` (empty when there is none)."""
    dvc_yaml = repo / "dvc.yaml"
    if not dvc_yaml.is_file():
        return set()
    stages = (yaml.safe_load(dvc_yaml.read_text()) or {}).get("stages", {})
    outs: set[str] = set()
    for stage in stages.values():
        for out in stage.get("outs", []):
            outs.add(next(iter(out)) if isinstance(out, dict) else str(out))
    return outs


def publish(release_dir: Path, *, repo: Path, tag: str, remote: str | None) -> PublishResult:
    """Track ``release_dir`` with DVC, commit the metadata, tag it and push the data.

    ``release_dir`` must lie inside the git + DVC repository ``repo``. ``remote`` names the
    DVC remote to push to (None: the default remote; the push is skipped when the repo has
    no remote at all, and ``pushed`` says so). See the module docstring for the exact steps.

    Raises:
        ReleaseError: the folder is missing or outside ``repo``, the tag already exists, or
            a dvc/git command fails (the message names the command and its error).
    """
    repo, release_dir = repo.resolve(), release_dir.resolve()
    if not release_dir.is_dir():
        raise ReleaseError(f"cannot publish {release_dir}: no such release folder")
    try:
        rel = release_dir.relative_to(repo).as_posix()
    except ValueError:
        raise ReleaseError(f"cannot publish {release_dir}: not inside repo {repo}") from None
    if _git("tag", "--list", tag, cwd=repo, what="git tag --list"):
        raise ReleaseError(f"cannot publish {rel} as {tag!r}: tag already exists in {repo}")
    if rel in _pipeline_outs(repo):
        _dvc("commit", "--force", rel, cwd=repo, what=f"dvc commit of {rel}")
        tracked = ("dvc.yaml", "dvc.lock")
    else:
        _dvc("add", rel, cwd=repo, what=f"dvc add of {rel}")
        parent = PurePosixPath(rel).parent
        tracked = (f"{rel}.dvc", (parent / ".gitignore").as_posix())
    _git("add", "--", *tracked, cwd=repo, what="git add")
    _git("commit", "--allow-empty", "-m", f"release {tag}: {rel}", cwd=repo, what="git commit")
    _git("tag", "-a", tag, "-m", f"needleforge release {rel}", cwd=repo, what="git tag")
    commit = _git("rev-parse", "HEAD", cwd=repo, what="git rev-parse")
    remotes = _dvc("remote", "list", cwd=repo, what="dvc remote list")
    pushed = bool(remote or remotes)
    if pushed:
        _dvc("push", *(["-r", remote] if remote else []), rel, cwd=repo,
             what=f"dvc push of {rel}")
    return PublishResult(tag=tag, commit=commit, tracked_by=tracked, pushed=pushed)


def _where(rev: str, repo: str | Path, path: str) -> str:
    return f"{path!r} at rev {rev!r} of repo {str(repo)!r}"


def pull(*, rev: str, repo: str | Path, out: Path, path: str = DEFAULT_PATH) -> Path:
    """Copy the files of ``path`` at ``rev`` of ``repo`` into ``out``; return ``out``.

    Like ``dvc get --rev REV REPO PATH -o OUT``: ``repo`` is a git URL or a local clone;
    DVC-tracked files come from the DVC cache or the repo's remote. ``out`` must not hold a
    different release already (it is created when missing).

    Raises:
        ReleaseError: naming the rev, repo and path, when the rev, the path or its data (not
            pushed to the remote) cannot be found, or ``out`` is a non-empty folder.
    """
    if out.exists() and any(out.iterdir()):
        raise ReleaseError(f"cannot pull {_where(rev, repo, path)} into {out}: not empty")
    try:
        fs = DVCFileSystem(str(repo), rev=rev)
        if not fs.isdir(path):
            raise ReleaseError(f"no release folder {_where(rev, repo, path)}")
        out.parent.mkdir(parents=True, exist_ok=True)
        fs.get(path, str(out), recursive=True)
    except _FETCH_ERRORS as exc:
        raise ReleaseError(f"cannot pull {_where(rev, repo, path)}: {exc}") from exc
    return out


def _read_text(rev: str, repo: str | Path, path: str, name: str) -> str:
    file = (PurePosixPath(path) / name).as_posix()
    try:
        with dvc_open(file, repo=str(repo), rev=rev, encoding="utf-8") as handle:
            text: str = handle.read()
    except _FETCH_ERRORS as exc:
        raise ReleaseError(f"cannot read {name} of {_where(rev, repo, path)}: {exc}") from exc
    return text


def load_release(*, rev: str, repo: str | Path = ".", path: str = DEFAULT_PATH) -> LoadedRelease:
    """Read the questions and manifest of the release ``path`` at ``rev`` of ``repo``.

    Questions are parsed exactly as :func:`needleforge.evaluate.load_questions` parses a
    release file on disk, so they can go straight to the scorer.

    Raises:
        ReleaseError: naming the rev, repo and path, when ``questions.jsonl`` or
            ``manifest.json`` is missing there or malformed.
    """
    text = _read_text(rev, repo, path, "questions.jsonl")
    manifest_text = _read_text(rev, repo, path, "manifest.json")
    with tempfile.TemporaryDirectory(prefix="needleforge-load-") as tmp:
        local = Path(tmp) / "questions.jsonl"
        local.write_text(text, encoding="utf-8")
        try:
            questions = load_questions(local)
        except EvaluationError as exc:
            raise ReleaseError(f"bad questions.jsonl in {_where(rev, repo, path)}: {exc}") \
                from exc
    try:
        manifest = json.loads(manifest_text)
    except json.JSONDecodeError as exc:
        raise ReleaseError(f"bad manifest.json in {_where(rev, repo, path)}: {exc}") from exc
    if not isinstance(manifest, dict):
        raise ReleaseError(f"manifest.json in {_where(rev, repo, path)} is not an object")
    return LoadedRelease(rev=rev, repo=str(repo), path=path, questions=tuple(questions),
                         manifest=manifest)
