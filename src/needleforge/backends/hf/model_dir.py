"""Local transformers model folders: checks, names, versions, dtypes (shared by the hf backends).

A model folder is what ``save_pretrained`` writes (or a hub snapshot copied by hand):
``config.json`` with a ``model_type``, weights (``*.safetensors`` or ``pytorch_model*.bin``,
possibly sharded with an index), and the processor's files. We check the first two ourselves
before transformers sees the folder, because transformers treats a path that is not a folder
as a hub repo id and answers with a confusing "Repo id must be in the form …" message.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeAlias, get_args

from needleforge.backends.local_files import fingerprint, require_dir
from needleforge.errors import BackendError

if TYPE_CHECKING:
    import torch

CONFIG_FILE = "config.json"
#: Weight file patterns transformers loads (sharded checkpoints add an index JSON, hashed too).
WEIGHT_PATTERNS = ("*.safetensors", "pytorch_model*.bin", "*.safetensors.index.json",
                   "pytorch_model*.bin.index.json")
#: ``auto`` keeps the dtype stored in the folder's config (bf16 for most recent VLMs).
DType: TypeAlias = Literal["auto", "float32", "bfloat16", "float16"]
DTYPES: tuple[DType, ...] = get_args(DType)


def require_model_dir(model_dir: Path | str) -> Path:
    """The folder, after checking it holds a readable ``config.json`` and weights.

    Raises:
        BackendError: naming the folder and what is missing (the folder, its config.json, a
            ``model_type`` in it, or any weights file).
    """
    folder = require_dir(model_dir, what="transformers model folder",
                         hint="pass model_dir= pointing at a save_pretrained() folder")
    config_path = folder / CONFIG_FILE
    if not config_path.is_file():
        raise BackendError(f"{folder} is not a transformers model folder: no {CONFIG_FILE}")
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BackendError(f"{config_path} is not readable JSON: {exc}") from exc
    if not isinstance(config, dict) or "model_type" not in config:
        raise BackendError(f"{config_path} has no 'model_type': not a transformers model config")
    if not weight_files(folder):
        raise BackendError(
            f"{folder} holds no weights (expected *.safetensors or pytorch_model*.bin)"
        )
    return folder


def weight_files(folder: Path) -> list[Path]:
    """The weight files (and shard indexes) directly inside ``folder``, sorted by name."""
    found = {path for pattern in WEIGHT_PATTERNS for path in folder.glob(pattern)}
    return sorted((p for p in found if p.is_file()), key=lambda p: p.name)


def backend_name(folder: Path) -> str:
    """``hf-<folder name>``, e.g. ``hf-SmolVLM-256M-Instruct`` (resolved, so ``.`` works)."""
    return f"hf-{folder.resolve().name}"


def model_version(folder: Path) -> str:
    """``transformers-<version>+cfg.<config sha>.w.<weights fingerprint>``.

    The config hash tells architectures and label maps apart; the weights fingerprint (sizes,
    first and last MiB of each file) tells fine-tunes of one architecture apart.
    """
    config_sha = hashlib.sha256((folder / CONFIG_FILE).read_bytes()).hexdigest()[:12]
    weights = fingerprint(weight_files(folder))
    return f"transformers-{_transformers_version()}+cfg.{config_sha}.w.{weights}"


def torch_dtype(dtype: str) -> str | torch.dtype:
    """``"auto"`` or the torch dtype named ``dtype``, for ``from_pretrained(dtype=...)``.

    Raises:
        BackendError: for a name outside :data:`DTYPES`.
    """
    if dtype not in DTYPES:
        raise BackendError(f"dtype = {dtype!r} must be one of {', '.join(DTYPES)}")
    if dtype == "auto":
        return "auto"
    import torch

    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]


def _transformers_version() -> str:
    try:
        return importlib.metadata.version("transformers")
    except importlib.metadata.PackageNotFoundError:
        return "unversioned"
