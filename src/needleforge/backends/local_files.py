"""Checks and fingerprints for model files that a user points us at (GPU backends).

The embedded backends find their files inside installed packages; the RAM++ and transformers
backends get paths from params.yaml instead, so a typo must fail early with a message naming the
path and what was expected there, not deep inside ``torch.load``. Their weights are gigabytes,
so versions use a fingerprint of each file's size, first and last MiB instead of a full sha256:
a copy of the same weights gets the same version, a retrained model (same sizes, new values)
gets a new one, and building a backend does not spend seconds hashing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

from needleforge.errors import BackendError

_EDGE_BYTES = 1 << 20


def require_file(path: Path | str, *, what: str, hint: str = "") -> Path:
    """``path`` as a :class:`Path` if it is a file.

    Raises:
        BackendError: naming ``what`` the file is, the path, and ``hint`` (how to get it).
    """
    file = Path(path).expanduser().absolute()  # an error names the folder looked in
    if not file.is_file():
        state = "is a directory, not a file" if file.is_dir() else "does not exist"
        raise BackendError(f"{what} {file} {state}{'; ' + hint if hint else ''}")
    return file


def require_dir(path: Path | str, *, what: str, hint: str = "") -> Path:
    """``path`` as a :class:`Path` if it is a directory.

    Raises:
        BackendError: naming ``what`` the directory is, the path, and ``hint``.
    """
    folder = Path(path).expanduser().absolute()
    if not folder.is_dir():
        state = "is a file, not a directory" if folder.is_file() else "does not exist"
        raise BackendError(f"{what} {folder} {state}{'; ' + hint if hint else ''}")
    return folder


def fingerprint(files: Iterable[Path], *, length: int = 12) -> str:
    """Hex digest prefix over each file's name, size, first and last MiB (order-independent).

    Names count because a renamed shard is a different model layout; the files are sorted so
    the directory listing order does not change the result.
    """
    digest = hashlib.sha256()
    for file in sorted(files, key=lambda p: p.name):
        size = file.stat().st_size
        digest.update(f"{file.name}\0{size}\0".encode())
        with file.open("rb") as handle:
            digest.update(handle.read(_EDGE_BYTES))
            if size > 2 * _EDGE_BYTES:
                handle.seek(size - _EDGE_BYTES)
                digest.update(handle.read(_EDGE_BYTES))
            elif size > _EDGE_BYTES:
                digest.update(handle.read())
    return digest.hexdigest()[:length]


def check_device(device: str) -> str:
    """``device`` normalized by torch (``"cuda"`` → ``"cuda"``, ``"cuda:1"`` stays).

    Checked up front because torch only fails when the first tensor moves, after minutes of
    loading weights.

    Raises:
        BackendError: for a string torch does not parse, or a CUDA/MPS device that this torch
            build or machine does not have.
    """
    import torch  # heavy: only when a GPU-capable backend is built

    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise BackendError(f"device = {device!r} is not a torch device ({exc})") from exc
    if parsed.type == "cuda":
        if not torch.cuda.is_available():
            raise BackendError(f"device = {device!r} but torch.cuda.is_available() is False")
        if parsed.index is not None and parsed.index >= torch.cuda.device_count():
            raise BackendError(
                f"device = {device!r} but only {torch.cuda.device_count()} CUDA device(s) exist"
            )
    elif parsed.type == "mps" and not torch.backends.mps.is_available():
        raise BackendError(f"device = {device!r} but torch.backends.mps.is_available() is False")
    elif parsed.type not in ("cpu", "cuda", "mps"):
        raise BackendError(f"device = {device!r}: use 'cpu', 'cuda', 'cuda:N' or 'mps'")
    return str(parsed)
