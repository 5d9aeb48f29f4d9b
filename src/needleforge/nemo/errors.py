"""The NeMo stage's exception (to move into :mod:`needleforge.errors` when the stage merges)."""

from __future__ import annotations

from needleforge.errors import NeedleforgeError


class NemoError(NeedleforgeError):
    """Generation inputs are inconsistent (a tag or object of an unknown scene, a bad seed)."""
