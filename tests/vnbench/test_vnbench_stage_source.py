"""The stage's render route: samples spliced from the source's GOPs, the cache only on demand.

A profile-matched source (``profile_source``: 320x180, 10 fps, H.264, an IDR every 2 s)
lets every sample be spliced; the stage must then build no haystack clip at all (the needle
filter reads the source too). A haystack that cannot be spliced (a GOP longer than
``max_gop_s``, or the session's 25 fps source) falls back to its cached clip, encoded once
however many samples and render threads ask for it; ``reuse_source_gops: false`` is the
cached path for every sample, and flipping it re-renders.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from needleforge.media.cache import ClipSpec, SceneClipCache
from needleforge.params import ParamsError, VNBenchParams, parse_params
from needleforge.records import Video
from needleforge.vnbench import VNBenchResult, build_vnbench
from needleforge.vnbench.clip_seconds import decode_file
from tests.vnbench.test_vnbench_splice import profile_source
from tests.vnbench.vnbench_cases import PROFILE, HistogramEmbedder, video_record

#: A subtitle edit, an image insertion and an image edit (the filter screens images).
TASKS = ["ret_edit1", "ret_insert1", "cnt_edit2"]


@pytest.fixture(scope="module")
def matched(tmp_path_factory: pytest.TempPathFactory) -> Video:
    """The profile-matched source (24 s, an IDR every 2 s) as an ingested video."""
    return video_record(profile_source(tmp_path_factory.mktemp("stage-src") / "matched.mp4"))


def run(video: Video, root: Path, **overrides: Any) -> VNBenchResult:
    params = VNBenchParams(seed=7, samples_per_subtask=1, tasks=TASKS, min_haystack_s=12,
                           max_haystack_s=20, similarity_threshold=0.999, text_size_frac=0.1,
                           builtin_clips=False, **overrides)
    return build_vnbench(videos=[video], params=params, out_dir=root / "out",
                         cache_dir=root / "cache", render=PROFILE, embedder=HistogramEmbedder())


def sidecars(result: VNBenchResult) -> list[dict[str, Any]]:
    return [json.loads(p.with_suffix(".json").read_text()) for p in result.videos]


def haystack_clips(root: Path) -> list[Path]:
    return sorted((root / "cache" / "vnbench-haystacks").rglob("*.h264"))


def test_matching_haystacks_are_spliced_and_cache_nothing(matched: Video, tmp_path: Path
                                                          ) -> None:
    result = run(matched, tmp_path)
    assert len(result.samples) == len(TASKS), result.skipped
    assert {s["route"] for s in sidecars(result)} == {"source-gops"}
    assert not any("fallback" in s for s in sidecars(result))
    assert not (tmp_path / "cache" / "vnbench-haystacks").exists()  # filter included
    for sample, video in zip(result.samples, result.videos, strict=True):
        assert len(decode_file(video)) == round(sample.duration_s * PROFILE.fps)


def test_switching_route_re_renders_every_sample(matched: Video, tmp_path: Path) -> None:
    spliced = run(matched, tmp_path)
    stamps = {p: p.stat().st_mtime_ns for p in spliced.videos}
    cached = run(matched, tmp_path, reuse_source_gops=False)
    assert cached.samples == spliced.samples
    assert {s["route"] for s in sidecars(cached)} == {"cache"}
    assert not any("fallback" in s for s in sidecars(cached))
    assert all(p.stat().st_mtime_ns != stamps[p] for p in cached.videos)
    assert len(haystack_clips(tmp_path)) == 1  # one haystack, cached up front
    again = run(matched, tmp_path)
    assert {s["route"] for s in sidecars(again)} == {"source-gops"}


def test_a_gop_over_max_gop_s_falls_back_and_caches_the_haystack_once(
        matched: Video, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every sample's needle GOPs are 2 s, over a 1 s limit: all three fall back, on two
    render threads, and the haystack is encoded once."""
    encodes: list[ClipSpec] = []
    lock = threading.Lock()
    encode = SceneClipCache._encode

    def counted(cache: SceneClipCache, spec: ClipSpec, path: Path, n_frames: int) -> float:
        with lock:
            encodes.append(spec)
        return encode(cache, spec, path, n_frames)

    monkeypatch.setattr(SceneClipCache, "_encode", counted)
    result = run(matched, tmp_path, max_gop_s=1.0)
    assert PROFILE.workers == 2 and len(result.samples) == len(TASKS)
    for sidecar in sidecars(result):
        assert sidecar["route"] == "cache"
        assert "longer than max_gop_s = 1 s" in sidecar["fallback"], sidecar
    assert len(encodes) == 1 and len(haystack_clips(tmp_path)) == 1


def test_the_session_run_falls_back_on_its_25_fps_source(
        vnb_result: VNBenchResult, vnb_dirs: tuple[Path, Path]) -> None:
    """The session's stage run (default params) renders by the source route, which its 25 fps
    haystacks cannot take: each haystack is cached once, every sample says why."""
    for sidecar in sidecars(vnb_result):
        assert sidecar["route"] == "cache"
        assert "25 fps, not the profile's 10" in sidecar["fallback"], sidecar
    haystacks = {s.haystack.haystack_id for s in vnb_result.samples}
    assert len(haystack_clips(vnb_dirs[0].parent)) == len(haystacks)


@pytest.mark.parametrize(("data", "message"), [
    ({"max_gop_s": 0.5}, "vnbench.max_gop_s: Input should be greater than or equal to 1"),
    ({"max_gop_s": 31}, "vnbench.max_gop_s: Input should be less than or equal to 30"),
    ({"reuse_source_gops": "sometimes"}, "vnbench.reuse_source_gops"),
])
def test_bad_route_params_are_named(data: dict[str, Any], message: str) -> None:
    assert VNBenchParams().reuse_source_gops and VNBenchParams().max_gop_s == 4.0
    with pytest.raises(ParamsError) as err:
        parse_params({"vnbench": data}, source="p.yaml")
    assert message in str(err.value) and "p.yaml" in str(err.value)
