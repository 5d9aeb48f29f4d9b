"""Publish and pull in a repository laid out like this one, and the bad inputs at their joins.

Each repository here gets this project's real ``.gitignore`` (``/releases/*`` with the
``.dvc`` files, DVC's own ``.gitignore`` and the tag index let through), so publishing meets
the same rules a user's checkout does. Releases are built from the hand-made store of
:mod:`tests.release.release_cases` without a gate (seconds, not minutes). Bad inputs: no DVC
remote, a remote that cannot be written, the release folder deleted before publishing, a
``.gitignore`` hiding the metadata, a tag naming no release, data never pushed, and ``--out``
as a new, an empty and a non-empty folder. Every refusal happens before anything is written.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from needleforge.cli import app
from needleforge.errors import ReleaseError
from needleforge.params import Params
from needleforge.release import build_release, load_release, publish, pull
from needleforge.stages.release import read_release_data
from tests.release.release_cases import make_store

pytestmark = pytest.mark.slow

MAIN = Path(__file__).resolve().parents[2]
NAME = "2026.01.05-0300"


def sh(*cmd: str, cwd: Path) -> str:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False,
                          timeout=120)
    assert proc.returncode == 0, f"{cmd}: {proc.stderr}"
    return proc.stdout.strip()


def dvc(*args: str, cwd: Path) -> str:
    return sh(sys.executable, "-m", "dvc", *args, cwd=cwd)


def make_repo(root: Path, *, remote: Path | None) -> Path:
    """A git + DVC repo with this project's .gitignore, one commit, and ``remote`` (a folder)
    as its default DVC remote when given."""
    repo = root / "repo"
    repo.mkdir(parents=True)
    shutil.copy(MAIN / ".gitignore", repo / ".gitignore")
    for cmd in (("git", "init", "-q", "-b", "main"),
                ("git", "config", "user.name", "Needleforge Test"),
                ("git", "config", "user.email", "test@needleforge.invalid")):
        sh(*cmd, cwd=repo)
    dvc("init", "-q", cwd=repo)
    sh("git", "add", "-A", cwd=repo)
    sh("git", "commit", "-q", "-m", "init", cwd=repo)
    if remote is not None:
        dvc("remote", "add", "-d", "storage", str(remote), cwd=repo)
    return repo


def build(repo: Path, tmp: Path, name: str = NAME) -> Path:
    db = make_store(tmp / f"{name}.duckdb")
    return build_release(data=read_release_data(db), name=name, out_root=repo / "releases",
                         render_dir=None, params=Params()).path


def state(repo: Path) -> tuple[str, str, str]:
    """HEAD, the tags and the tracked metadata: what a refused publish must not change."""
    meta = sorted(p.name for p in (repo / "releases").iterdir() if not p.is_dir()) \
        if (repo / "releases").is_dir() else []
    return (sh("git", "rev-parse", "HEAD", cwd=repo), sh("git", "tag", "--list", cwd=repo),
            ",".join(meta))


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A repo where ``NAME`` was published as ``v1``, plus a tag ``bare`` before it."""
    root = tmp_path_factory.mktemp("publish")
    repo = make_repo(root, remote=root / "storage")
    sh("git", "tag", "bare", cwd=repo)
    result = publish(build(repo, root), repo=repo, tag="v1")
    assert result.pushed and result.remote == "storage" and result.path == f"releases/{NAME}"
    assert result.tracked_by == (f"releases/{NAME}.dvc",)  # no releases/.gitignore needed
    return repo, result.commit


def test_publish_commits_only_the_metadata_and_the_index(origin: tuple[Path, str]) -> None:
    repo, commit = origin
    files = sh("git", "show", "--name-only", "--format=", commit, cwd=repo).split()
    assert sorted(files) == [".dvc/config", f"releases/{NAME}.dvc", "releases/index.json"]
    assert sh("git", "status", "--porcelain", cwd=repo) == ""
    assert f"needleforge release releases/{NAME}" in sh(
        "git", "tag", "-n1", "--list", "v1", cwd=repo)


def test_a_clone_pulls_and_loads_by_tag_alone(origin: tuple[Path, str], tmp_path: Path
                                              ) -> None:
    clone = tmp_path / "clone"
    sh("git", "clone", "-q", str(origin[0]), str(clone), cwd=tmp_path)
    fresh = pull(rev="v1", repo=clone, out=tmp_path / "new" / "v1")
    (tmp_path / "empty").mkdir()
    existing = pull(rev="v1", repo=clone, out=tmp_path / "empty")
    listing = sorted(p.relative_to(fresh).as_posix() for p in fresh.rglob("*"))
    assert listing == sorted(p.relative_to(existing).as_posix() for p in existing.rglob("*"))
    assert "manifest.json" in listing and "questions.jsonl" in listing
    loaded = load_release(rev="v1", repo=clone)
    assert loaded.path == f"releases/{NAME}" and loaded.name == NAME
    with pytest.raises(ReleaseError, match="not an empty folder"):
        pull(rev="v1", repo=clone, out=existing)


def test_a_tag_naming_no_release_lists_what_exists(origin: tuple[Path, str],
                                                    tmp_path: Path) -> None:
    repo, _ = origin
    with pytest.raises(ReleaseError, match=r"rev 'bare'.*releases at that rev: none"):
        load_release(rev="bare", repo=repo)
    listed = rf"'releases/nope' at rev 'v1'.*releases at that rev: releases/{NAME}"
    with pytest.raises(ReleaseError, match=listed):
        pull(rev="v1", repo=repo, out=tmp_path / "x", path="releases/nope")
    with pytest.raises(ReleaseError, match=r"rev 'v9'"):
        pull(rev="v9", repo=repo, out=tmp_path / "y")
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()


def test_no_remote_is_refused_with_the_command_to_add_one(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, remote=None)
    release = build(repo, tmp_path)
    before = state(repo)
    with pytest.raises(ReleaseError, match=r"(?s)no DVC remote.*dvc remote add -d storage"):
        publish(release, repo=repo, tag="v1")
    assert state(repo) == before and not (repo / "releases" / f"{NAME}.dvc").exists()


def test_an_unwritable_remote_is_refused_then_publish_is_retried_alone(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("a file, so nothing can be created under it, not even by root\n")
    repo = make_repo(tmp_path, remote=blocker / "storage")
    release = build(repo, tmp_path)
    before = state(repo)
    runner = CliRunner()
    refused = runner.invoke(app, ["publish", str(release), "--tag", "v1", "--repo", str(repo)])
    assert refused.exit_code == 2 and "'storage'" in refused.output
    assert "not writable" in refused.output and "dvc remote modify storage url" in refused.output
    assert state(repo) == before
    dvc("remote", "modify", "storage", "url", str(tmp_path / "storage"), cwd=repo)
    again = runner.invoke(app, ["publish", str(release), "--tag", "v1", "--repo", str(repo)])
    assert again.exit_code == 0, again.output
    assert "verified" in again.output and sh("git", "tag", "--list", cwd=repo) == "v1"
    assert (tmp_path / "storage").is_dir() and any((tmp_path / "storage").rglob("*"))


def test_a_release_deleted_before_publishing_is_named(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, remote=tmp_path / "storage")
    release = build(repo, tmp_path)
    shutil.rmtree(release)
    before = state(repo)
    result = CliRunner().invoke(app, ["publish", str(release), "--tag", "v1", "--repo",
                                      str(repo)])
    assert result.exit_code == 2 and "no such release folder" in result.output
    assert str(release) in result.output.replace("\n", "") and state(repo) == before


def test_metadata_hidden_by_gitignore_is_refused_before_any_work(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, remote=tmp_path / "storage")
    (repo / ".gitignore").write_text("/releases/\n")  # the layout that broke publishing
    sh("git", "commit", "-q", "-am", "old ignore rules", cwd=repo)
    release = build(repo, tmp_path)
    before = state(repo)
    with pytest.raises(ReleaseError, match=rf"releases/{NAME}.dvc would be git-ignored"):
        publish(release, repo=repo, tag="v1")
    assert state(repo) == before and not (repo / "releases" / f"{NAME}.dvc").exists()


def test_data_never_pushed_is_an_error_not_an_empty_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user tracks and tags a release by hand but forgets ``dvc push``."""
    repo = make_repo(tmp_path, remote=tmp_path / "storage")
    release = build(repo, tmp_path)
    dvc("add", f"releases/{NAME}", cwd=repo)
    sh("git", "add", f"releases/{NAME}.dvc", ".dvc/config", cwd=repo)
    sh("git", "commit", "-q", "-m", "tracked, not pushed", cwd=repo)
    sh("git", "tag", "v1", cwd=repo)
    clone = tmp_path / "clone"
    sh("git", "clone", "-q", str(repo), str(clone), cwd=tmp_path)
    out = tmp_path / "out"
    with pytest.raises(ReleaseError, match="never pushed"):
        pull(rev="v1", repo=clone, out=out, path=f"releases/{NAME}")
    assert not out.exists() and [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] \
        == []
    with pytest.raises(ReleaseError, match="never pushed"):
        load_release(rev="v1", repo=clone, path=f"releases/{NAME}")
    assert release.is_dir()
    # The command says it in one line and keeps DVC's own error in the debug log.
    monkeypatch.setenv("NEEDLEFORGE_DEBUG_LOG", str(tmp_path / "debug.log"))
    result = CliRunner().invoke(app, ["pull", "--rev", "v1", "--repo", str(clone), "--out",
                                      str(out), "--path", f"releases/{NAME}"])
    assert result.exit_code == 2 and "never pushed" in result.output, result.output
    assert result.output.rstrip().endswith(f"(details: {tmp_path / 'debug.log'})")
    chain = (tmp_path / "debug.log").read_text()  # behind the line: the remote's missing file
    assert "FileNotFoundError" in chain and "DataIndexDirError" in chain and not out.exists()
