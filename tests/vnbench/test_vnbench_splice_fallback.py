"""Haystack sources whose GOPs cannot be reused fall back to the cache; bad ones are errors.

Each fallback source is made with the project's ffmpeg (lavfi ``testsrc2``, 24 s) and breaks
exactly one condition of the splice: GOPs of 20 s, MPEG-4 Part 2 instead of H.264, 10-bit
H.264, another frame size, another frame rate, a display rotation; so does a profile that
keeps audio. The sample still renders (from the cached
haystack clip, built only then) and says why. A truncated source is an error naming the
file, with nothing left in the output folder.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from needleforge.errors import MediaError
from needleforge.media.cache import ClipSpec, SceneClipCache
from needleforge.records import Video
from needleforge.vnbench import VNBenchResult, VNBenchSample
from needleforge.vnbench.clip_seconds import decode_file
from needleforge.vnbench.sample_render import render_sample_from_source
from tests.conftest import ffmpeg, rotate_display
from tests.vnbench.test_vnbench_splice import MAX_GOP_S, STYLE, on_source, profile_source
from tests.vnbench.vnbench_cases import PROFILE


def sample_of(result: VNBenchResult, task: str = "ret_edit1") -> VNBenchSample:
    return next(s for s in result.samples if s.task == task)


def cache_builder(root: Path, sample: VNBenchSample, calls: list[int]) -> Callable[[], Path]:
    """A ``haystack_clip`` that builds the sample's cached clip and counts its calls."""
    def build() -> Path:
        calls.append(1)
        hay = sample.haystack
        return SceneClipCache(root, profile=PROFILE).ensure(ClipSpec(
            Path(hay.source), float(hay.start_s), float(hay.start_s + hay.duration_s))).path
    return build


@pytest.mark.parametrize(("case", "why"), [
    ("long-gop", "20 s GOP"),
    ("mpeg4", "codec mpeg4, not H.264"),
    ("10-bit", "pixel format yuv420p10le"),
    ("640x360", "640x360, not the profile's 320x180"),
    ("25-fps", "25 fps, not the profile's 10"),
    ("rotated", "display rotation"),
])
def test_unsuitable_sources_take_the_cached_path_with_the_reason(
        case: str, why: str, vnb_result: VNBenchResult, vnb_source: Video,
        tmp_path: Path) -> None:
    path = tmp_path / f"{case}.mp4"
    if case == "long-gop":  # no keyframe between 0 s and 20 s
        profile_source(path, gop_s=20)
    elif case == "mpeg4":
        profile_source(path, codec="mpeg4", pix_fmt="yuv420p")
    elif case == "10-bit":
        profile_source(path, pix_fmt="yuv420p10le")
    elif case == "640x360":
        profile_source(path, size="640x360")
    elif case == "rotated":  # shown portrait: the cache's decode turns it upright
        rotate_display(profile_source(tmp_path / "upright.mp4"), path, degrees=90)
    else:  # the session's haystack: 320x180 H.264 at 25 fps
        path = Path(vnb_source.stored_path)
    sample, calls = on_source(sample_of(vnb_result), path), []
    done = render_sample_from_source(
        sample, haystack_clip=cache_builder(tmp_path / "hay", sample, calls),
        out=tmp_path / "out" / sample.video, profile=PROFILE, style=STYLE,
        piece_root=tmp_path / "pieces", work_root=tmp_path / "work",
        max_gop_s=MAX_GOP_S)
    assert (done.route, calls) == ("cache", [1])
    assert done.fallback is not None and why in done.fallback, done.fallback
    assert len(decode_file(done.path)) == round(sample.duration_s * PROFILE.fps)
    sidecar = json.loads(done.path.with_suffix(".json").read_text())
    assert sidecar["route"] == "cache" and sidecar["fallback"] == done.fallback


def test_audio_profiles_take_the_cached_path(vnb_result: VNBenchResult, tmp_path: Path
                                             ) -> None:
    sample = on_source(sample_of(vnb_result), profile_source(tmp_path / "src.mp4"))
    profile = PROFILE.model_copy(update={"audio": True})
    calls: list[int] = []

    def build() -> Path:
        calls.append(1)
        hay = sample.haystack
        return SceneClipCache(tmp_path / "hay", profile=profile).ensure(ClipSpec(
            Path(hay.source), float(hay.start_s), float(hay.start_s + hay.duration_s))).path

    done = render_sample_from_source(
        sample, haystack_clip=build, out=tmp_path / "out" / sample.video, profile=profile,
        style=STYLE, piece_root=tmp_path / "pieces", work_root=tmp_path / "work",
        max_gop_s=MAX_GOP_S)
    assert done.route == "cache" and calls == [1]
    assert done.fallback is not None and "audio" in done.fallback


@pytest.mark.parametrize("faststart", [True, False])
def test_a_truncated_source_is_an_error_naming_it_and_writes_nothing(
        faststart: bool, vnb_result: VNBenchResult, tmp_path: Path) -> None:
    """Cut mid-GOP, half-way through the haystack: with the index first (faststart) the
    packets run out; with the index last the file has none."""
    whole = profile_source(tmp_path / "whole.mp4")
    path = tmp_path / "cut.mp4"
    if faststart:
        ffmpeg("-i", str(whole), "-c", "copy", "-movflags", "+faststart", str(path))
    else:
        path.write_bytes(whole.read_bytes())
    data = path.read_bytes()
    path.write_bytes(data[: len(data) * 15 // 24 + 333])  # about 15 s of 24: inside a GOP
    sample, out_dir = on_source(sample_of(vnb_result), path), tmp_path / "out"

    def no_cache() -> Path:
        raise AssertionError("a damaged source must not be re-encoded instead")

    with pytest.raises(MediaError, match=re.escape(str(path))) as err:
        render_sample_from_source(
            sample, haystack_clip=no_cache, out=out_dir / sample.video, profile=PROFILE,
            style=STYLE, piece_root=tmp_path / "pieces", work_root=tmp_path / "work",
            max_gop_s=MAX_GOP_S)
    assert "truncated" in str(err.value) or "cannot open" in str(err.value), err.value
    assert not out_dir.exists() or list(out_dir.iterdir()) == []
    assert list((tmp_path / "work").iterdir()) == []
