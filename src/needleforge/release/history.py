"""When and from what each release was built: ``build.json``, release order, input fingerprints.

Why a file of its own: ``manifest.json`` must be byte-identical for the same inputs, so it
holds no clock time; but a refresh needs to know which release was built last (names are not
a clock: ``releases/sample`` sorts after every dated release) and whether anything changed
since. ``build.json`` holds the build time (UTC) and the **inputs fingerprint**: the sha256
of every source video used, a hash of the params (less the task runner, which decides where
work runs, not what it makes) and a hash of the code (the needleforge package's Python files
and the versions of the packages that shape a release). The manifest hashes it like every
file, marked ``per_build`` (like the Data Docs pages), since it changes with every build.

Same fingerprint as the latest release: a refresh has nothing new to release.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import needleforge
from needleforge.errors import ReleaseError
from needleforge.params import Params
from needleforge.release.manifest import package_versions

BUILD_FILE = "build.json"
MANIFEST_FILE = "manifest.json"
#: Params sections that do not change what a release holds: how stages run (runner), and how
#: models are scored on it afterwards (evaluate).
_NEUTRAL_SECTIONS = ("runner", "evaluate")


@dataclasses.dataclass(frozen=True, slots=True)
class Fingerprint:
    """What a release is built from: its source videos (sha256), params and code."""

    videos: tuple[str, ...]
    params_sha256: str
    code_sha256: str

    def to_dict(self) -> dict[str, Any]:
        return {"videos": list(self.videos), "params_sha256": self.params_sha256,
                "code_sha256": self.code_sha256}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Fingerprint:
        """Raises: ValueError when a key is missing or has the wrong type."""
        videos, params, code = data.get("videos"), data.get("params_sha256"), \
            data.get("code_sha256")
        if not isinstance(videos, list) or not isinstance(params, str) \
                or not isinstance(code, str):
            raise ValueError(f"not an inputs fingerprint: {dict(data)!r}")
        return cls(tuple(sorted(str(v) for v in videos)), params, code)

    def differences(self, other: Fingerprint) -> list[str]:
        """What changed from ``other`` to this one, in words (empty: nothing)."""
        out = []
        added = sorted(set(self.videos) - set(other.videos))
        removed = sorted(set(other.videos) - set(self.videos))
        if added:
            out.append(f"{len(added)} new source video(s)")
        if removed:
            out.append(f"{len(removed)} source video(s) no longer used")
        if self.params_sha256 != other.params_sha256:
            out.append("params changed")
        if self.code_sha256 != other.code_sha256:
            out.append("code or package versions changed")
        return out


def _sha256_json(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def code_sha256(package_dir: Path | None = None) -> str:
    """A hash of the needleforge package's Python files and the key package versions.

    Why files and not the git commit: publishing a release commits, which would make every
    published release look like a code change; and an installed wheel has no commit.
    """
    root = package_dir or Path(needleforge.__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode("utf-8") + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    digest.update(_sha256_json(package_versions()).encode("ascii"))
    return digest.hexdigest()


def fingerprint(video_sha256s: Iterable[str], params: Params) -> Fingerprint:
    """The fingerprint of a build from these source videos with ``params`` and this code."""
    dumped = {k: v for k, v in params.model_dump(mode="json").items()
              if k not in _NEUTRAL_SECTIONS}
    return Fingerprint(tuple(sorted(set(video_sha256s))), _sha256_json(dumped), code_sha256())


def write_build_info(root: Path, *, name: str, inputs: Fingerprint,
                     now: dt.datetime | None = None) -> None:
    """Write ``root/build.json``: the release name, UTC build time and inputs fingerprint."""
    built = (now or dt.datetime.now(dt.UTC)).astimezone(dt.UTC)
    doc = {"name": name, "built_at": built.isoformat(timespec="microseconds"),
           "inputs": inputs.to_dict()}
    (root / BUILD_FILE).write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n",
                                   encoding="utf-8")


@dataclasses.dataclass(frozen=True, slots=True)
class BuildInfo:
    """A release folder's build time and, when recorded, its inputs fingerprint."""

    path: Path
    built_at: dt.datetime
    inputs: Fingerprint | None


def read_build_info(release_dir: Path) -> BuildInfo:
    """The build time and inputs of ``release_dir``.

    A release without ``build.json`` (built before it existed) is dated by its
    ``manifest.json``'s modification time and has no fingerprint.

    Raises:
        ReleaseError: the folder has no ``manifest.json``, or ``build.json`` is malformed.
    """
    manifest = release_dir / MANIFEST_FILE
    if not manifest.is_file():
        raise ReleaseError(f"{release_dir} is not a release: no {MANIFEST_FILE}")
    path = release_dir / BUILD_FILE
    if not path.is_file():
        mtime = dt.datetime.fromtimestamp(manifest.stat().st_mtime, dt.UTC)
        return BuildInfo(release_dir, mtime, None)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        built = dt.datetime.fromisoformat(doc["built_at"])
        inputs = Fingerprint.from_dict(doc["inputs"])
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError,
            ValueError) as err:
        raise ReleaseError(f"{path}: not a readable build record ({err})") from None
    if built.tzinfo is None:
        built = built.replace(tzinfo=dt.UTC)
    return BuildInfo(release_dir, built, inputs)


def releases_by_build_time(out_root: Path, *, exclude: str | None = None) -> list[BuildInfo]:
    """Every release under ``out_root`` (folders with a ``manifest.json``) but ``exclude``,
    oldest build first; ties broken by name. Unreadable ``build.json`` files raise.

    Raises:
        ReleaseError: a release's ``build.json`` is malformed (named).
    """
    if not out_root.is_dir():
        return []
    found = [read_build_info(p) for p in out_root.iterdir()
             if p.is_dir() and p.name != exclude and (p / MANIFEST_FILE).is_file()]
    return sorted(found, key=lambda b: (b.built_at, b.path.name))


def latest_release(out_root: Path, *, exclude: str | None = None) -> BuildInfo | None:
    """The release built last under ``out_root`` (None when there is none)."""
    found = releases_by_build_time(out_root, exclude=exclude)
    return found[-1] if found else None
