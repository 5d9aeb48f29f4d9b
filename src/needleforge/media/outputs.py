"""Writing outputs safely: temp-then-rename files, stale scratch cleanup, clear I/O errors.

Every file a stage publishes (a montage, a sidecar, a questions file) is written under a
hidden scratch name in the same folder and renamed into place, so a reader — or a rerun after
a crash — sees either the old file or the complete new one, never half of one. Scratch names
carry the writer's process id and a tag of its host (``.<name>.<pid>.<thread>.h<tag>…``),
which lets :func:`sweep_scratch` remove those left by a process of this host that was killed,
and only those: on a filesystem shared by several workers (Dask, Ray) another host's scratch
file is only removed once it is a day old, since its pid means nothing here.

An ``OSError`` while writing (a read-only folder, a full disk, a file-size limit) becomes an
:class:`~needleforge.errors.OutputError` naming the path and the cause in words, instead of a
traceback, through :func:`writing`.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from needleforge.errors import OutputError

# ``.<name>.<pid>`` then optional ``.<thread id>`` and suffixes: the scratch names used by
# media.join, media.cache, stages/render.py, vnbench and this module.
_SCRATCH_RE = re.compile(r"^\.(?P<name>.+?)\.(?P<pid>\d{1,9})(?:\.\d+)?(?:\.[A-Za-z0-9_-]+)*$")
_HOST_RE = re.compile(r"\.h(?P<host>[0-9a-f]{8})(?:\.|$)")
#: This host's tag in scratch names (hostnames may hold dots, which names use as separators).
HOST_TAG = hashlib.blake2b(socket.gethostname().encode(), digest_size=4).hexdigest()
#: Another host's scratch file older than this is taken as abandoned.
FOREIGN_STALE_S = 86_400.0

_CAUSES = {
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied (is the folder read-only?)",
    errno.EPERM: "operation not permitted",
    errno.ENOSPC: "no space left on the device (disk full)",
    errno.EDQUOT: "disk quota exceeded",
    errno.EFBIG: "file too large (disk full or file-size limit reached)",
}


def describe_os_error(err: OSError) -> str:
    """The cause of ``err`` in words: a known errno gets a hint, others their strerror."""
    if err.errno in _CAUSES:
        return _CAUSES[err.errno]
    return err.strerror or str(err)


def output_error(err: OSError, *, what: str, path: Path) -> OutputError:
    """An :class:`OutputError` for ``err`` raised while writing ``what`` at ``path``.

    The message names the file the OS complained about when it says, else ``path``; for a
    two-path call (copy, rename) that is the destination (``err.filename2``): shutil reports
    a failed write of the copy with the *source* as ``filename``.
    """
    named = [f for f in (err.filename2, err.filename) if isinstance(f, str) and f]
    target = named[0] if named else str(path)
    return OutputError(f"{what}: cannot write {target}: {describe_os_error(err)}")


@contextlib.contextmanager
def writing(path: Path, *, what: str) -> Iterator[None]:
    """Turn an ``OSError`` inside the block into an :class:`OutputError` naming ``path``.

    Raises:
        OutputError: the block raised an ``OSError`` (PyAV's write errors are ``OSError``
            subclasses too).
    """
    try:
        yield
    except OutputError:
        raise
    except OSError as err:
        raise output_error(err, what=what, path=path) from err


def scratch_path(path: Path, suffix: str | None = None) -> Path:
    """A hidden scratch name beside ``path``, unique to this host, process and thread."""
    tail = path.suffix if suffix is None else suffix
    return path.with_name(
        f".{path.stem}.{os.getpid()}.{threading.get_ident()}.h{HOST_TAG}{tail}")


def write_bytes_atomic(path: Path, data: bytes, *, what: str = "output") -> Path:
    """Write ``data`` to ``path`` through a scratch file and a rename; returns ``path``.

    A killed process or a failed write leaves ``path`` as it was (absent or the previous
    version).

    Raises:
        OutputError: the folder cannot be created or written (read-only, disk full).
    """
    tmp = scratch_path(path)
    with writing(path, what=what):
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            # No fsync: the rename already guarantees a killed process leaves the old file
            # or the new one; syncing every sidecar would cost the render stage milliseconds
            # per montage for power-loss safety we do not promise.
            tmp.write_bytes(data)
            tmp.replace(path)
        finally:
            tmp.unlink(missing_ok=True)
    return path


def write_text_atomic(path: Path, text: str, *, what: str = "output") -> Path:
    """:func:`write_bytes_atomic` of ``text`` encoded as UTF-8.

    Raises:
        OutputError: the folder cannot be created or written (read-only, disk full).
    """
    return write_bytes_atomic(path, text.encode("utf-8"), what=what)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    return True


def _abandoned(path: Path, pid: int) -> bool:
    host = _HOST_RE.search(path.name[path.name.index(f".{pid}") :])
    if host is None or host["host"] == HOST_TAG:
        return not _alive(pid)
    try:  # another host's file: its pid cannot be checked here
        return time.time() - path.stat().st_mtime > FOREIGN_STALE_S
    except FileNotFoundError:
        return False


def sweep_scratch(folder: Path, *, recursive: bool = False) -> list[Path]:
    """Remove scratch files in ``folder`` left by processes that no longer run.

    A killed render leaves its hidden ``.<name>.<pid>…`` files behind; a rerun calls this
    first so that no truncated file outlives the crash. Files of running processes (this one,
    or a concurrent writer) are kept, and so are another host's files less than a day old.
    Returns the removed paths. A folder that does not exist or cannot be listed is left alone.
    """
    if not folder.is_dir():
        return []
    removed: list[Path] = []
    candidates = folder.rglob(".*") if recursive else folder.glob(".*")
    for path in candidates:
        match = _SCRATCH_RE.match(path.name)
        if match is None or not path.is_file() or not _abandoned(path, int(match["pid"])):
            continue
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
            removed.append(path)
    return removed
