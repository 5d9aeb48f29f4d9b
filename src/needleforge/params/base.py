"""The base of every ``params.yaml`` section model: unknown keys are errors, values frozen.

Every section module of the package builds on it; also where a params file's path values
are anchored to its folder (:func:`anchor_paths`).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict


class ParamsSection(BaseModel):
    """A ``params.yaml`` section: unknown keys are errors naming them; instances are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


#: Keys of a backend's ``*_options`` (and of a section) whose values are file or folder paths.
PATH_KEYS = frozenset({"checkpoint", "python", "bert_dir", "model_dir", "font_path"})


def anchor_paths(data: object, *, base: Path) -> object:
    """``data`` (a parsed params file) with every relative path value of a :data:`PATH_KEYS`
    key made absolute from ``base``, the params file's folder.

    A params file names its model files as its author sees them from beside it
    (``python: .venv-ram/bin/python``); read from the working folder instead, the same file
    found them or not depending on where a command was started, and the error named a path
    without its folder. ``~`` paths are left to the backend (which expands them).
    """
    if isinstance(data, dict):
        return {key: (str(base / value) if key in PATH_KEYS and isinstance(value, str)
                      and value and not value.startswith("~") and not Path(value).is_absolute()
                      else anchor_paths(value, base=base))
                for key, value in data.items()}
    if isinstance(data, list):
        return [anchor_paths(item, base=base) for item in data]
    return data
