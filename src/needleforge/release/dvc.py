"""Fetching a published release by tag (:func:`pull`, :func:`load_release`), and the git/DVC
command runners publishing shares (:mod:`needleforge.release.publish`).

Consumers never need the producer's workspace: both functions take a git URL or a local
clone as ``repo`` and a tag (or commit) as ``rev``. Which folder is the release comes from
``releases/index.json`` at that rev (written by ``publish``; see
:mod:`needleforge.release.index`), so no ``--path`` is needed; repositories without an index
fall back to ``releases/sample``. A missing release lists the releases that exist at the rev.
Data that is tracked but not on the remote (never pushed) is an error that says so, and a
pulled folder is checked file by file against the sha256 in its ``manifest.json`` before it
is moved into place, so ``out`` is either the whole verified release or untouched.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from needleforge.errors import ReleaseError
from needleforge.records.questions import QuestionRecordError, ReleaseQuestion, parse_jsonl
from needleforge.release.file_io import list_files, sha256_file
from needleforge.release.index import INDEX_PATH, find, parse_index

if TYPE_CHECKING:
    from dvc.api import DVCFileSystem

DEFAULT_PATH = "releases/sample"
RELEASES_DIR = "releases"
_COMMAND_TIMEOUT_S = 600.0


def _fetch_errors() -> tuple[type[Exception], ...]:
    """What DVC raises for an unknown rev, a missing path, or data absent from cache and
    remote (imported on use: DVC costs seconds to import, and most commands never fetch)."""
    from dvc.exceptions import DvcException
    from dvc_data.index.index import DataIndexError
    from scmrepo.exceptions import SCMError

    return (DvcException, DataIndexError, SCMError, FileNotFoundError)


def _never_pushed_error() -> type[Exception]:
    from dvc_data.index.index import DataIndexError

    return DataIndexError


def _run(cmd: list[str], *, cwd: Path, what: str) -> str:
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False,
                              timeout=_COMMAND_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise ReleaseError(f"{what} failed in {cwd} ({' '.join(cmd[:4])} …): {err}") from None
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip()
        raise ReleaseError(f"{what} failed in {cwd} ({' '.join(cmd[:4])} …): {detail}")
    return proc.stdout.strip()


def dvc_cmd(*args: str, cwd: Path, what: str) -> str:
    """Run ``python -m dvc ARGS`` in ``cwd`` with this interpreter; returns its stdout.

    Raises:
        ReleaseError: naming ``what``, the command and DVC's error.
    """
    return _run([sys.executable, "-m", "dvc", *args], cwd=cwd, what=what)


def git_cmd(*args: str, cwd: Path, what: str) -> str:
    """Run ``git ARGS`` in ``cwd``; returns its stdout.

    Raises:
        ReleaseError: naming ``what``, the command and git's error.
    """
    return _run(["git", *args], cwd=cwd, what=what)


@dataclasses.dataclass(frozen=True, slots=True)
class LoadedRelease:
    """A release read at a pinned revision: its questions (scorer records) and manifest."""

    rev: str
    repo: str
    path: str
    questions: tuple[ReleaseQuestion, ...]
    manifest: dict[str, Any]

    @property
    def name(self) -> str:
        """The release name recorded in the manifest (the folder name when absent)."""
        return str(self.manifest.get("name", PurePosixPath(self.path).name))


def _where(rev: str, repo: str | Path, path: str | None = None) -> str:
    head = f"{path!r} at rev" if path else "rev"
    return f"{head} {rev!r} of repo {str(repo)!r}"


def _open(repo: str | Path, rev: str) -> DVCFileSystem:
    from dvc.api import DVCFileSystem

    try:
        fs = DVCFileSystem(str(repo), rev=rev)
        fs.exists(INDEX_PATH)  # resolves the rev now, so a bad one fails here
    except _fetch_errors() as exc:
        raise ReleaseError(f"cannot open {_where(rev, repo)}: {exc}") from exc
    return fs


def _available(fs: DVCFileSystem, entries: list[str]) -> list[str]:
    """Release folders at the rev: the index's and every folder under ``releases/``."""
    found = set(entries)
    try:
        for item in fs.ls(RELEASES_DIR, detail=True):
            if item.get("type") == "directory":
                found.add(str(item["name"]))
    except _fetch_errors():
        pass
    return sorted(found)


def resolve_path(fs: DVCFileSystem, *, rev: str, repo: str | Path,
                 path: str | None = None) -> str:
    """The release folder to fetch at ``rev``: ``path`` when given, else the index's entry
    for ``rev`` (see :func:`needleforge.release.index.find`), else ``releases/sample``.

    Raises:
        ReleaseError: that folder does not exist at the rev; the message lists the releases
            that do.
    """
    entries = []
    if fs.exists(INDEX_PATH):
        with fs.open(INDEX_PATH, "r", encoding="utf-8") as handle:
            entries = parse_index(handle.read(), where=f"{INDEX_PATH} at rev {rev!r}")
    wanted = path
    if wanted is None:
        entry = find(entries, rev)
        wanted = entry.path if entry is not None else DEFAULT_PATH
    try:
        found = fs.isdir(wanted)
    except _fetch_errors():
        found = False
    if not found:
        available = _available(fs, [e.path for e in entries])
        listed = ", ".join(available) if available else "none"
        raise ReleaseError(f"no release folder {_where(rev, repo, wanted)}; releases at that "
                           f"rev: {listed}")
    return wanted


def _never_pushed(rev: str, repo: str | Path, path: str, exc: Exception) -> ReleaseError:
    return ReleaseError(
        f"the data of {_where(rev, repo, path)} is tracked in git but not in the DVC cache "
        f"or remote: it was never pushed ({type(exc).__name__}: {exc}). The producer must "
        f"run `needleforge publish {path} --tag TAG` or `dvc push` in that repository.")


def verify_files(root: Path) -> list[str]:
    """Problems of a fetched release against its ``manifest.json`` (empty: all files there
    with the sha256 the manifest lists and, when the manifest says it lists every file
    (``files_note``, releases since it hashes the Data Docs too), no file it does not list)."""
    try:
        doc = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
        files = doc["files"]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as err:
        return [f"manifest.json unreadable ({err})"]
    problems = []
    for entry in files:
        path = root / str(entry["path"])
        if not path.is_file():
            problems.append(f"{entry['path']} missing")
        elif sha256_file(path) != entry["sha256"]:
            problems.append(f"{entry['path']} has another sha256 than the manifest's")
    if "files_note" in doc:
        listed = {str(e["path"]) for e in files} | {"manifest.json"}
        problems += [f"{rel} is not in the manifest" for rel in list_files(root)
                     if rel not in listed]
    return problems


def _place(fetched: Path, out: Path) -> None:
    """Move the fetched folder to ``out``: the same result whether ``out`` existed (empty)
    or not."""
    if out.exists():
        out.rmdir()  # checked empty up front
    fetched.rename(out)


def pull(*, rev: str, repo: str | Path, out: Path, path: str | None = None) -> Path:
    """Copy the release published at ``rev`` of ``repo`` into ``out``; return ``out``.

    Like ``dvc get --rev REV REPO PATH -o OUT``, with the folder found from the release
    index (``path`` overrides it) and every file checked against the manifest. ``out`` may
    exist only as an empty folder; it receives the release's files directly.

    Raises:
        ReleaseError: naming the rev, repo and path, when the rev or the release cannot be
            found (the releases at that rev are listed), its data was never pushed, a file
            does not match the manifest, or ``out`` is a file or a non-empty folder.
    """
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ReleaseError(f"cannot pull {_where(rev, repo, path)} into {out}: it exists and "
                           "is not an empty folder")
    fs = _open(repo, rev)
    release = resolve_path(fs, rev=rev, repo=repo, path=path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".pull", dir=out.parent))
    try:
        fetched = tmp / "release"
        try:
            fs.get(release, str(fetched), recursive=True)
        except _never_pushed_error() as exc:
            raise _never_pushed(rev, repo, release, exc) from exc
        except _fetch_errors() as exc:
            raise ReleaseError(f"cannot pull {_where(rev, repo, release)}: {exc}") from exc
        problems = verify_files(fetched) if fetched.is_dir() else ["nothing fetched"]
        if problems:
            raise ReleaseError(f"pulled {_where(rev, repo, release)} does not match its "
                               f"manifest (data incomplete on the remote?): "
                               f"{'; '.join(problems[:5])}")
        _place(fetched, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def _read_text(fs: DVCFileSystem, rev: str, repo: str | Path, path: str, name: str) -> str:
    file = (PurePosixPath(path) / name).as_posix()
    try:
        with fs.open(file, "r", encoding="utf-8") as handle:
            text: str = handle.read()
    except _never_pushed_error() as exc:
        raise _never_pushed(rev, repo, path, exc) from exc
    except _fetch_errors() as exc:
        raise ReleaseError(f"cannot read {name} of {_where(rev, repo, path)}: {exc}") from exc
    return text


def load_release(*, rev: str, repo: str | Path = ".", path: str | None = None
                 ) -> LoadedRelease:
    """Read the questions and manifest of the release published at ``rev`` of ``repo``.

    The folder is found as :func:`pull` finds it (``path`` overrides the index). Questions
    are read strictly by the release question format
    (:func:`needleforge.records.questions.parse_jsonl`), whose classes are the scorer's
    questions, so they can go straight to the scorer.

    Raises:
        ReleaseError: naming the rev, repo and path, when the release is not there (the
            releases at that rev are listed), its data was never pushed, or
            ``questions.jsonl`` or ``manifest.json`` is missing or malformed.
    """
    fs = _open(repo, rev)
    release = resolve_path(fs, rev=rev, repo=repo, path=path)
    text = _read_text(fs, rev, repo, release, "questions.jsonl")
    manifest_text = _read_text(fs, rev, repo, release, "manifest.json")
    try:
        questions = parse_jsonl(text, path="questions.jsonl")
    except QuestionRecordError as exc:
        raise ReleaseError(f"bad questions.jsonl in {_where(rev, repo, release)}: {exc}") \
            from exc
    try:
        manifest = json.loads(manifest_text)
    except json.JSONDecodeError as exc:
        raise ReleaseError(f"bad manifest.json in {_where(rev, repo, release)}: {exc}") from exc
    if not isinstance(manifest, dict):
        raise ReleaseError(f"manifest.json in {_where(rev, repo, release)} is not an object")
    return LoadedRelease(rev=rev, repo=str(repo), path=release, questions=tuple(questions),
                         manifest=manifest)
