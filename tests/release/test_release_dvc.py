"""Publish → clone → pull/load by tag, on real git + DVC with a local directory remote.

A temporary origin repo gets ``dvc init`` and a remote that is just a folder; the release of
:mod:`tests.release.release_cases` is published as ``v1``, rebuilt from the week-later store
and published as ``v2``; a fresh clone must then read ``v1`` back, not the newer ``v2``.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from needleforge.errors import ReleaseError
from needleforge.evaluate import ReleaseQuestion
from needleforge.params import Params
from needleforge.release import build_release, load_release, publish, pull
from needleforge.stages.release import read_release_data
from tests.release.release_cases import init_git_dvc, make_store

PATH = "releases/sample"


def sh(*cmd: str, cwd: Path) -> str:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, f"{cmd}: {proc.stderr}"
    return proc.stdout


def build(origin: Path, tmp: Path, *, variant: int) -> Path:
    db = make_store(tmp / f"store{variant}.duckdb", variant=variant)
    return build_release(data=read_release_data(db), name="sample", out_root=origin / "releases",
                         render_dir=None, params=Params(), overwrite=True).path


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An origin repo with ``v1`` (variant 0) and ``v2`` (variant 1) published."""
    root = tmp_path_factory.mktemp("dvc")
    repo, remote = root / "origin", root / "remote"
    repo.mkdir()
    remote.mkdir()
    init_git_dvc(repo, remote)
    sh("git", "add", "-A", cwd=repo)
    sh("git", "commit", "-q", "-m", "dvc init", cwd=repo)
    first = publish(build(repo, root, variant=0), repo=repo, tag="v1", remote="local")
    assert first.pushed and first.tracked_by == (f"{PATH}.dvc", "releases/.gitignore")
    publish(build(repo, root, variant=1), repo=repo, tag="v2", remote=None)
    with pytest.raises(ReleaseError, match="already exists"):
        publish(repo / PATH, repo=repo, tag="v2", remote=None)
    return repo


@pytest.fixture(scope="module")
def clone(origin: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh clone: no DVC cache, only git metadata and the remote's address."""
    target = tmp_path_factory.mktemp("clone") / "repo"
    sh("git", "clone", "-q", str(origin), str(target), cwd=target.parent)
    return target


def _texts(questions: tuple[ReleaseQuestion, ...]) -> dict[str, str]:
    return {q.question_id: q.question for q in questions}


@pytest.mark.slow
def test_pull_and_load_a_pinned_tag(origin: Path, clone: Path, tmp_path: Path) -> None:
    out = pull(rev="v1", repo=clone, out=tmp_path / "v1")
    v1_origin = sh("git", "show", f"v1:{PATH}.dvc", cwd=origin)
    assert "md5" in v1_origin and (out / "manifest.json").is_file()
    v1 = load_release(rev="v1", repo=clone)
    v2 = load_release(rev="v2", repo=origin)
    assert v1.name == v2.name == "sample"
    assert v1.manifest == json.loads((out / "manifest.json").read_text())
    assert v1.manifest != v2.manifest
    q1, q2 = _texts(v1.questions), _texts(v2.questions)
    assert q1["q-obj"] == "When does the grey cat appear?"
    assert q2["q-obj"] == "When is the grey cat seen?"
    assert "q-unverified" not in q1 and "q-unverified" in q2
    pulled = (out / "questions.jsonl").read_text().splitlines()
    assert len(pulled) == len(v1.questions)


@pytest.mark.slow
def test_missing_rev_or_path_names_them(clone: Path, tmp_path: Path) -> None:
    with pytest.raises(ReleaseError, match=r"'releases/nope' at rev 'v1'"):
        load_release(rev="v1", repo=clone, path="releases/nope")
    with pytest.raises(ReleaseError, match=r"rev 'v9'"):
        pull(rev="v9", repo=clone, out=tmp_path / "x")
