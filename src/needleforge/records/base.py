"""Shared machinery of the records: checks, dict round trips, id derivation."""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import re
from collections.abc import Mapping
from typing import Any, Self

SHA256_RE = re.compile(r"^[0-9a-f]{64}$")


def _check(condition: bool, message: str) -> None:
    """Raise ``ValueError(message)`` unless ``condition`` holds (never stripped by ``-O``)."""
    if not condition:
        raise ValueError(message)


def _finite_nonneg(name: str, value: float) -> None:
    _check(math.isfinite(value) and value >= 0, f"{name} = {value!r} must be finite and >= 0")


def _to_jsonable(value: Any) -> Any:
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, tuple):
        return [_to_jsonable(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _to_jsonable(v) for k, v in value.items()}
    return value


class _Record:
    """Mixin giving frozen dataclasses ``to_dict``/``from_dict`` with ISO dates."""

    def to_dict(self) -> dict[str, Any]:
        fields = dataclasses.fields(self)  # type: ignore[arg-type]
        return {f.name: _to_jsonable(getattr(self, f.name)) for f in fields}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        unknown = sorted(set(data) - names)
        _check(not unknown, f"{cls.__name__}: unknown fields {unknown}")
        kwargs: dict[str, Any] = {}
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            if f.name not in data:
                continue
            value = data[f.name]
            if isinstance(value, str) and f.type in ("dt.date", "dt.date | None"):
                value = dt.date.fromisoformat(value)
            elif isinstance(value, list):
                value = tuple(value)
            kwargs[f.name] = value
        return cls(**kwargs)


def video_id_for(sha256: str) -> str:
    """Stable video id from the content hash: ``v`` + the first 16 hex digits."""
    return f"v{sha256[:16]}"


def scene_id_for(video_id: str, index: int) -> str:
    """Stable scene id: ``{video_id}-s{index:04d}``."""
    return f"{video_id}-s{index:04d}"


def object_id_for(scene_id: str, index: int) -> str:
    """Stable object id: ``{scene_id}-o{index:03d}``."""
    return f"{scene_id}-o{index:03d}"
