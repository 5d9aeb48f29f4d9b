"""Publish a release: track it with DVC, push and verify its data, then commit and tag it.

The order matters so that a failure never leaves a tag pointing at data nobody can fetch::

    publish(releases/<name>, repo=R, tag=T, remote=None)
      0. check:  every input before anything is written — the folder is a finished release
                 inside R, R is a git + DVC repository, T is free, a DVC remote exists (else
                 the refusal names the ``dvc remote add`` command), a local remote folder is
                 writable, and the metadata files to commit are not git-ignored
      1. track:  a pipeline output (an ``outs`` entry of ``dvc.yaml``) with
                 ``dvc commit --force <path>`` (updates ``dvc.lock``); any other folder with
                 ``dvc add <path>`` (writes ``<path>.dvc``)
      2. push:   ``dvc push -r <remote>`` of that target, then ``dvc status --cloud --json``
                 must report nothing missing on the remote
      3. record: ``releases/index.json`` gains (T, folder, name, manifest sha256); the
                 metadata files (and ``.dvc/config`` when it changed, so clones know the
                 remote) are committed — only those paths — and ``git tag -a T`` pins it

Each step is idempotent, so a publish that failed at any step is retried as a whole with
``needleforge publish RELEASE_DIR --tag T``; the tag is written last, so a tag always means
"pushed and verified". DVC runs as ``python -m dvc`` from this interpreter (the venv's DVC).
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import tempfile
from pathlib import Path, PurePosixPath
from urllib.parse import urlparse

import yaml

from needleforge.errors import ReleaseError
from needleforge.release.dvc import dvc_cmd, git_cmd
from needleforge.release.file_io import sha256_file
from needleforge.release.index import INDEX_PATH, IndexEntry, read_index, with_entry, write_index

ADD_REMOTE_HINT = ("dvc remote add -d storage /path/to/dvc-storage   (or s3://bucket/path, "
                   "gs://…, ssh://…); then git commit .dvc/config -m 'DVC remote'")


@dataclasses.dataclass(frozen=True, slots=True)
class PublishResult:
    """What :func:`publish` did: the tag, its commit, the files that track the release, the
    remote its data went to, and whether the push was verified (always, when it returns)."""

    tag: str
    commit: str
    tracked_by: tuple[str, ...]
    pushed: bool
    remote: str = ""
    path: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class _Plan:
    repo: Path
    release_dir: Path
    rel: str
    tag: str
    remote: str
    pipeline_out: bool

    @property
    def target(self) -> str:
        """What DVC commands name: the pipeline output, or the ``.dvc`` file."""
        return self.rel if self.pipeline_out else f"{self.rel}.dvc"


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


def remotes(repo: Path) -> tuple[dict[str, str], str | None]:
    """The DVC remotes of ``repo`` (name → URL, every config level merged) and the default.

    Raises:
        ReleaseError: ``repo`` is not a DVC repository (the message says ``dvc init``).
    """
    from dvc.exceptions import DvcException
    from dvc.repo import Repo

    try:
        with Repo(str(repo)) as dvc_repo:
            config = dvc_repo.config
            found = {name: str(section.get("url", "")) for name, section in
                     config.get("remote", {}).items()}
            default = config.get("core", {}).get("remote")
    except DvcException as err:
        raise ReleaseError(f"{repo} is not a DVC repository ({err}); run `dvc init` there "
                           "first") from None
    return found, str(default) if default else None


def _choose_remote(repo: Path, remote: str | None) -> str:
    found, default = remotes(repo)
    if not found:
        raise ReleaseError(f"cannot publish from {repo}: it has no DVC remote, so the data "
                           f"would reach nobody. Add one:\n  {ADD_REMOTE_HINT}")
    name = remote or default
    if name is None:
        raise ReleaseError(f"cannot publish from {repo}: no default DVC remote among "
                           f"{sorted(found)}; pass --remote NAME or run "
                           f"`dvc remote default {sorted(found)[0]}`")
    if name not in found:
        raise ReleaseError(f"cannot publish from {repo}: no DVC remote named {name!r}; "
                           f"known: {sorted(found)}")
    _check_local_remote(name, found[name], repo)
    return name


def _check_local_remote(name: str, url: str, repo: Path) -> None:
    """A remote that is a local folder must be one we can write (checked by writing a
    file, since permission bits do not bind every user)."""
    parsed = urlparse(url)
    if parsed.scheme not in ("", "file") or not url:
        return
    folder = Path(parsed.path if parsed.scheme else url)
    folder = folder if folder.is_absolute() else repo / ".dvc" / folder
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".needleforge-write-check"):
            pass
    except OSError as err:
        raise ReleaseError(f"DVC remote {name!r} at {folder} is not writable ({err}); fix it "
                           f"or point the remote elsewhere: dvc remote modify {name} url "
                           "NEW_PATH") from None


def check_publish(release_dir: Path, *, repo: Path, tag: str, remote: str | None,
                  built: bool = True) -> _Plan:
    """Every check of step 0 (see the module docstring); writes nothing.

    ``built=False`` checks everything but the folder itself, for a release not built yet
    (a refresh checks it can publish before doing any work).

    Raises:
        ReleaseError: naming the input and what to do about it.
    """
    repo, release_dir = repo.resolve(), release_dir.resolve()
    if built and not release_dir.is_dir():
        raise ReleaseError(f"cannot publish {release_dir}: no such release folder")
    if built and not (release_dir / "manifest.json").is_file():
        raise ReleaseError(f"cannot publish {release_dir}: not a finished release (no "
                           "manifest.json)")
    try:
        rel = release_dir.relative_to(repo).as_posix()
    except ValueError:
        raise ReleaseError(f"cannot publish {release_dir}: not inside repo {repo}") from None
    git_cmd("rev-parse", "--git-dir", cwd=repo, what=f"finding the git repository {repo}")
    git_cmd("check-ref-format", f"refs/tags/{tag}", cwd=repo, what=f"checking tag name {tag!r}")
    if git_cmd("tag", "--list", tag, cwd=repo, what="git tag --list"):
        raise ReleaseError(f"cannot publish {rel} as {tag!r}: tag already exists in {repo}")
    name = _choose_remote(repo, remote)
    plan = _Plan(repo, release_dir, rel, tag, name, rel in _pipeline_outs(repo))
    for meta in (*(() if plan.pipeline_out else (plan.target,)), INDEX_PATH):
        if _ignored(repo, meta):
            raise ReleaseError(f"cannot publish {rel}: {meta} would be git-ignored (see "
                               "`git check-ignore -v " + meta + "`); un-ignore it, e.g. "
                               f"add `!/{meta}` to .gitignore")
    return plan


def _ignored(repo: Path, path: str) -> bool:
    proc = subprocess.run(["git", "check-ignore", "-q", "--no-index", path], cwd=repo,
                          capture_output=True, check=False)
    return proc.returncode == 0


def _track(plan: _Plan) -> tuple[str, ...]:
    """Step 1; returns the metadata files that record the release in git."""
    if plan.pipeline_out:
        dvc_cmd("commit", "--force", plan.rel, cwd=plan.repo, what=f"dvc commit of {plan.rel}")
        return ("dvc.yaml", "dvc.lock")
    dvc_cmd("add", plan.rel, cwd=plan.repo, what=f"dvc add of {plan.rel}")
    ignore = (PurePosixPath(plan.rel).parent / ".gitignore").as_posix()
    return (plan.target, *((ignore,) if (plan.repo / ignore).is_file() else ()))


def _push(plan: _Plan) -> None:
    """Step 2: push, then ask the remote what it still lacks."""
    dvc_cmd("push", "-r", plan.remote, plan.target, cwd=plan.repo,
            what=f"dvc push of {plan.rel} to remote {plan.remote!r}")
    status = dvc_cmd("status", "--cloud", "-r", plan.remote, "--json", plan.target,
                     cwd=plan.repo, what=f"dvc status --cloud of {plan.rel}")
    missing = json.loads(status or "{}")
    if missing:
        shown = ", ".join(f"{k} ({v})" for k, v in sorted(missing.items())[:5])
        raise ReleaseError(f"push of {plan.rel} to remote {plan.remote!r} is incomplete: "
                           f"{len(missing)} item(s) not on the remote: {shown}; retry with "
                           f"`needleforge publish {plan.rel} --tag {plan.tag}`")


def _record(plan: _Plan, tracked: tuple[str, ...]) -> str:
    """Step 3: index, commit of exactly the metadata paths, annotated tag; returns the commit."""
    entry = IndexEntry(plan.tag, plan.rel, plan.release_dir.name,
                       sha256_file(plan.release_dir / "manifest.json"))
    write_index(plan.repo, with_entry(read_index(plan.repo), entry))
    paths = [*tracked, INDEX_PATH]
    if git_cmd("status", "--porcelain", "--", ".dvc/config", cwd=plan.repo, what="git status"):
        paths.append(".dvc/config")  # the remote a clone must fetch from
    git_cmd("add", "--", *paths, cwd=plan.repo, what="git add")
    git_cmd("commit", "--allow-empty", "-m", f"release {plan.tag}: {plan.rel}", "--",
            *paths, cwd=plan.repo, what="git commit")
    git_cmd("tag", "-a", plan.tag, "-m", f"needleforge release {plan.rel}", cwd=plan.repo,
            what="git tag")
    return git_cmd("rev-parse", "HEAD", cwd=plan.repo, what="git rev-parse")


def publish(release_dir: Path, *, repo: Path, tag: str, remote: str | None = None
            ) -> PublishResult:
    """Track ``release_dir`` with DVC, push and verify its data, commit and tag it ``tag``.

    ``release_dir`` must be a finished release inside the git + DVC repository ``repo``;
    ``remote`` names the DVC remote (None: the default one). Steps: module docstring.

    Raises:
        ReleaseError: a check of step 0 fails (nothing was written), or a dvc/git command
            fails (the message names the command and its error; retry the same call).
    """
    plan = check_publish(release_dir, repo=repo, tag=tag, remote=remote)
    tracked = _track(plan)
    _push(plan)
    commit = _record(plan, tracked)
    return PublishResult(tag=tag, commit=commit, tracked_by=tracked, pushed=True,
                         remote=plan.remote, path=plan.rel)


def publish_again_hint(release_dir: Path, *, repo: Path, tag: str, remote: str | None = None
                       ) -> PublishResult:
    """:func:`publish` for a release just built by a refresh: on failure the message also
    says the release is kept and how to retry only the publish.

    Raises:
        ReleaseError: as :func:`publish`, with the retry command appended.
    """
    try:
        return publish(release_dir, repo=repo, tag=tag, remote=remote)
    except ReleaseError as err:
        again = f"needleforge publish {release_dir} --tag {tag} --repo {repo}" + \
            (f" --remote {remote}" if remote else "")
        raise ReleaseError(f"{err}\nThe release {release_dir} is built and kept; retry only "
                           f"the publish with: {again}") from err
