"""Fixtures for the studio tests: tiny corpora built once per session, decoded with PyAV.

Why tiny: the studio renders real H.264 with ffmpeg and the tests decode it again, so a
160x90, 10 fps corpus of two 8 s episodes keeps the whole suite to seconds while still
holding several cuts and moving objects per video. The same builder runs three times: two
identical seeds (determinism) and one other seed (the seed matters).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from studio_helpers import Frames, decode_rgb, tiny_params

from needleforge.studio import StudioReport, build_studio


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> StudioReport:
    """The tiny corpus, seed 7 (read-only by habit: other tests share it)."""
    return build_studio(tiny_params(), tmp_path_factory.mktemp("studio-a"))


@pytest.fixture(scope="session")
def truth(built: StudioReport) -> dict[str, Any]:
    """The parsed ground_truth.json of :func:`built`."""
    data: dict[str, Any] = json.loads(built.ground_truth_path.read_text(encoding="utf-8"))
    return data


@pytest.fixture(scope="session")
def decoded(built: StudioReport, truth: dict[str, Any]) -> dict[str, Frames]:
    """Decoded frames of every synthetic video of :func:`built`, keyed by ground-truth path."""
    return {v["path"]: decode_rgb(built.out_dir / v["path"]) for v in truth["videos"]}
