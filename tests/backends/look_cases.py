"""Shared pieces of the looking verifier's tests: real frames of the clips the project ships
(skipped, naming the clip, where its package is missing) and a run of back-to-back scenes."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from needleforge.errors import StudioError
from needleforge.records import Scene
from needleforge.records.base import scene_id_for
from needleforge.studio.real_assets import sample_frames


def real_frames(name: str, *, most: int) -> list[npt.NDArray[np.uint8]]:
    """Up to ``most`` frames of real clip ``name``, 25 decoded frames apart."""
    try:
        return sample_frames(name, most=most)
    except StudioError as err:
        pytest.skip(f"real clip {name!r} not installed: {err}")


def back_to_back(video_id: str, n: int, *, length_s: float) -> list[Scene]:
    """``n`` scenes of ``video_id``, each ``length_s`` long (25 fps), one after the other."""
    return [Scene(scene_id=scene_id_for(video_id, i), video_id=video_id, index=i,
                  start_s=length_s * i, end_s=length_s * (i + 1),
                  n_frames=round(25 * length_s)) for i in range(n)]
