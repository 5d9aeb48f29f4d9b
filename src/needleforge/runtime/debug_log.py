"""The debug log: where the whole story of an error goes when its message tells only the end.

A user error is printed as one line that names the input at fault and what to do
(:mod:`needleforge.errors`). The library text behind it — torch's ``EOFError``, a worker's
traceback — helps whoever debugs needleforge, not whoever ran it, so the CLI appends each such
error with its full chain of causes here instead: ``NEEDLEFORGE_DEBUG_LOG`` when set, else
``debug.log`` in needleforge's cache folder (``$XDG_CACHE_HOME/needleforge``, by default
``~/.cache/needleforge``). Writing the log never fails a command: an unwritable log is skipped.
"""

from __future__ import annotations

import datetime as dt
import os
import traceback
from pathlib import Path

#: Entries beyond this size start the log afresh (one old file kept as ``debug.log.1``).
MAX_BYTES = 1 << 20


def log_path() -> Path:
    """Where :func:`record` writes (module docstring)."""
    explicit = os.environ.get("NEEDLEFORGE_DEBUG_LOG", "").strip()
    if explicit:
        return Path(explicit).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(cache) / "needleforge" / "debug.log"


def record(error: BaseException, *, command: str) -> Path | None:
    """Append ``error`` with its causes and tracebacks; the log's path, or None when the
    error has no cause worth keeping or the log cannot be written."""
    if error.__cause__ is None and error.__context__ is None:
        return None
    path = log_path()
    stamp = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    entry = (f"--- {stamp} needleforge {command}\n"
             + "".join(traceback.format_exception(error)) + "\n")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_file() and path.stat().st_size > MAX_BYTES:
            path.replace(path.with_name(path.name + ".1"))
        with path.open("a", encoding="utf-8") as handle:
            handle.write(entry)
    except OSError:
        return None
    return path
