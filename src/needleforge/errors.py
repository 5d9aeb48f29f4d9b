"""Project exceptions.

Every failure a user can cause raises a subclass of :class:`NeedleforgeError` whose message
names the offending input (file, row, field) and what is wrong with it. The CLI prints the
message and exits with status 2; library code never calls ``sys.exit``.
"""

from __future__ import annotations


class NeedleforgeError(Exception):
    """Base class of every error needleforge raises on purpose."""


class ConfigError(NeedleforgeError):
    """A params file or config section is missing, malformed or has unknown keys."""


class ManifestError(NeedleforgeError):
    """A manifest as a whole cannot be read (encoding, syntax, top-level shape)."""


class MediaError(NeedleforgeError):
    """A media file cannot be probed, decoded or rendered, or ffmpeg is missing."""


class ProbeError(MediaError):
    """A file could not be probed; ``kind`` says why in one machine-readable word."""

    def __init__(self, message: str, *, kind: str) -> None:
        super().__init__(message)
        self.kind = kind

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        # pickled across Dask/Ray process boundaries: ``kind`` is keyword-only
        return (_probe_error, (str(self), self.kind))


def _probe_error(message: str, kind: str) -> ProbeError:
    return ProbeError(message, kind=kind)


class SubtitleError(NeedleforgeError):
    """A subtitle sidecar (SRT/WebVTT) is malformed; the message names the file and line."""


class StoreError(NeedleforgeError):
    """The DuckDB store is unusable (newer schema, corrupt file, failed write)."""


class StudioError(NeedleforgeError):
    """The sample corpus cannot be built (a package asset is missing, bad parameters)."""


class BackendError(NeedleforgeError):
    """A model backend is unknown, misconfigured, missing its files or got an unusable input."""


class EvaluationError(NeedleforgeError):
    """A questions or predictions file cannot be scored (bad line, unknown id, NaN, duplicate)."""


class NemoError(NeedleforgeError):
    """NeMo generation inputs are inconsistent (a tag or object of an unknown scene, a bad seed,
    a describer that wrote the wrong kind of needle)."""


class ReleaseError(NeedleforgeError):
    """A release cannot be built: nothing to release, a missing render, a name already taken,
    an unreadable previous release; the message names the montage, question or path."""


class OutputError(NeedleforgeError):
    """An output file or folder cannot be written (read-only folder, disk full, size limit);
    the message names the path and the cause. Whatever was published before stays intact."""


class RefreshError(NeedleforgeError):
    """A scheduled refresh cannot start (missing manifest, release name or tag taken, another
    refresh holding the store) or released nothing because every new source failed; the
    message names the input or each failure."""
