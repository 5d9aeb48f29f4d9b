"""Fixtures of the VNBench tests: one generated source and one stage run per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from needleforge.params import VNBenchParams
from needleforge.records import Video
from needleforge.vnbench import VNBenchResult, build_vnbench
from tests.vnbench.vnbench_cases import PROFILE, HistogramEmbedder, lavfi_source, video_record


@pytest.fixture(scope="session")
def vnb_source(tmp_path_factory: pytest.TempPathFactory) -> Video:
    """24 s of testsrc2 at 320x180 (25 fps, keyframe every 2 s): the haystack source."""
    root = tmp_path_factory.mktemp("vnb-source")
    return video_record(lavfi_source(root / "haystack.mp4", seconds=24))


@pytest.fixture(scope="session")
def vnb_params() -> VNBenchParams:
    """Every subtask once, plus Long (on 14–18 s "long" haystacks) and Act, on 12–20 s."""
    return VNBenchParams(
        seed=7, samples_per_subtask=1, min_haystack_s=12, max_haystack_s=20,
        include_long=True, long_samples=1, long_min_s=14, long_max_s=18, include_act=True,
        clip_needle_s=1, count_min=2, count_max=4, similarity_threshold=0.999,
        text_size_frac=0.1)


@pytest.fixture(scope="session")
def vnb_dirs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(out_dir, cache_dir) of the session's stage run."""
    root = tmp_path_factory.mktemp("vnb-run")
    return root / "out", root / "cache"


@pytest.fixture(scope="session")
def vnb_steps() -> list[tuple[int, int]]:
    """The ``(done, total)`` progress counts of the session's stage run."""
    return []


@pytest.fixture(scope="session")
def vnb_result(vnb_source: Video, vnb_params: VNBenchParams, vnb_dirs: tuple[Path, Path],
               vnb_steps: list[tuple[int, int]]) -> VNBenchResult:
    """The stage run every rendering test inspects (16 samples, a few seconds)."""
    out_dir, cache_dir = vnb_dirs
    return build_vnbench(videos=[vnb_source], params=vnb_params, out_dir=out_dir,
                         cache_dir=cache_dir, render=PROFILE, embedder=HistogramEmbedder(),
                         on_step=lambda done, total: vnb_steps.append((done, total)))
