"""Scene-clip cache, stream-copy montages and edited pieces on frame-numbered lavfi sources.

Every source frame carries its own index as ten vertical stripes of 16 px (stripe ``b`` white
when bit ``b`` of the frame number is set), drawn by ffmpeg's ``geq`` from ``N``; after any
number of H.264 generations the stripes still read back exactly, so a test can say *which*
source frame each rendered frame shows instead of comparing pixels approximately.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import av
import ffmpeg
import numpy as np
import pytest

from needleforge.errors import MediaError
from needleforge.media.cache import ClipSpec, SceneClipCache, index_path
from needleforge.media.join import Piece, encode_piece, plan_pieces, render_montage
from needleforge.params import RenderParams
from needleforge.records import FrameSpan, frame_at
from tests.conftest import ffmpeg as run_ffmpeg

PROFILE = RenderParams(width=160, height=90, fps=25, preset="veryfast")
_STRIPES = "geq=lum='255*mod(floor(N/pow(2\\,floor(X/16)))\\,2)':cb=128:cr=128"


def coded_source(path: Path, *, fps: int, seconds: float, audio: bool = False) -> Path:
    """A 160x90 video whose frame ``i`` shows ``i`` in binary stripes (keyframe every 10 s).

    ``ffmpeg -f lavfi -i color=c=black:size=160x90:rate=FPS:duration=S,format=yuv444p,GEQ
    -c:v libx264 -g 10*FPS out.mp4`` (+ a 440 Hz tone when ``audio``). Sparse keyframes make
    the cache seek into the middle of GOPs, which is where inexact cutting would show.
    """
    args = ["-f", "lavfi", "-i",
            f"color=c=black:size=160x90:rate={fps}:duration={seconds},format=yuv444p,{_STRIPES}"]
    if audio:
        args += ["-f", "lavfi", "-i", f"sine=frequency=440:duration={seconds}", "-c:a", "aac"]
    run_ffmpeg(*args, "-c:v", "libx264", "-pix_fmt", "yuv420p", "-g", str(10 * fps),
               str(path))
    return path


def frame_codes(path: Path) -> list[int]:
    """The frame number drawn on every frame of ``path``, in display order."""
    codes = []
    with av.open(str(path)) as container:
        for frame in container.decode(video=0):
            gray = frame.to_ndarray(format="gray")
            band = gray[30:60]
            bits = [band[:, b * 16 + 4: b * 16 + 12].mean() > 128 for b in range(10)]
            codes.append(sum(1 << b for b, on in enumerate(bits) if on))
    return codes


def expected_codes(start_s: float, n_frames: int, *, src_fps: int) -> list[int]:
    """Source frames shown by clip frames 0..n-1 (sample and hold at start + k/25 + 1 ms)."""
    return [math.floor((start_s + k / PROFILE.fps + 0.001) * src_fps) for k in range(n_frames)]


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("render-sources")
    return {"25": coded_source(root / "src25.mp4", fps=25, seconds=20),
            "30": coded_source(root / "src30.mp4", fps=30, seconds=12)}


def test_clip_holds_the_frames_of_its_range(sources: dict[str, Path], tmp_path: Path) -> None:
    cache = SceneClipCache(tmp_path / "cache", profile=PROFILE)
    same_rate = cache.ensure(ClipSpec(sources["25"], 4.0, 7.0))
    assert same_rate.n_frames == 75 and not same_rate.hit
    assert frame_codes(same_rate.path) == list(range(100, 175))
    # 30 fps resampled to 25 fps, starting between source frames: sample and hold.
    resampled = cache.ensure(ClipSpec(sources["30"], 2.51, 6.0))
    assert resampled.n_frames == frame_at(6.0 - 2.51, rate=25) == 87
    assert frame_codes(resampled.path) == expected_codes(2.51, 87, src_fps=30)
    # A range running to the very end of the source.
    tail = cache.ensure(ClipSpec(sources["25"], 18.0, 20.0))
    assert frame_codes(tail.path) == list(range(450, 500))


def test_second_request_is_a_hit_and_bytes_are_stable(
    sources: dict[str, Path], tmp_path: Path
) -> None:
    spec = ClipSpec(sources["25"], 1.0, 3.0, source_id="a" * 64)
    cache = SceneClipCache(tmp_path / "one", profile=PROFILE)
    first = cache.ensure(spec)
    stamp = first.path.stat().st_mtime_ns
    again = cache.ensure(spec)
    assert (again.hit, again.cpu_s, again.path) == (True, 0.0, first.path)
    assert (cache.hits, cache.misses) == (1, 1)
    assert first.path.stat().st_mtime_ns == stamp
    assert first.cpu_s > 0
    other = SceneClipCache(tmp_path / "two", profile=PROFILE).ensure(spec)
    assert other.path.read_bytes() == first.path.read_bytes()
    # The key follows the profile and the range, not only the source.
    assert cache.path_for(ClipSpec(sources["25"], 1.0, 3.5, source_id="a" * 64)) != first.path
    sharper = SceneClipCache(tmp_path / "one", profile=PROFILE.model_copy(update={"crf": 18}))
    assert sharper.path_for(spec) != first.path


def test_montage_shows_planned_source_frames(sources: dict[str, Path], tmp_path: Path) -> None:
    cache = SceneClipCache(tmp_path / "cache", profile=PROFILE)
    a = cache.ensure(ClipSpec(sources["25"], 2.0, 9.0)).path  # source frames 50..224
    b = cache.ensure(ClipSpec(sources["30"], 1.0, 7.0)).path  # 30 fps source from 1.0 s
    pieces = plan_pieces([(a, 3.0, 1.5), (b, 2.0, 0.7), (a, 0.0, 2.02), (b, 5, 1.0)],
                         profile=PROFILE, name="m")
    out = render_montage(pieces, tmp_path / "m.mp4", profile=PROFILE)
    planned_s = 1.5 + 0.7 + 2.02 + 1.0
    assert abs(out.duration_s - planned_s) <= 1 / PROFILE.fps
    assert out.n_frames == frame_at(planned_s, rate=25) == 131
    # Piece ends fall at round(cumulative seconds * 25), half up: 37.5 → 38, 55, 105.5 → 106, 131.
    want = ([125 + k for k in range(38)]                   # src25 from 5.0 s
            + expected_codes(3.0, 17, src_fps=30)          # src30 from 1.0 + 2 s
            + [50 + k for k in range(51)]                  # src25 from 2.0 s again
            + expected_codes(6.0, 25, src_fps=30))         # src30 from 1.0 + 5 s
    assert frame_codes(out.path) == want
    again = render_montage(pieces, tmp_path / "m2.mp4", profile=PROFILE)
    assert again.path.read_bytes() == out.path.read_bytes()


def test_pieces_must_start_on_a_cached_keyframe(sources: dict[str, Path], tmp_path: Path) -> None:
    clip = SceneClipCache(tmp_path, profile=PROFILE).ensure(ClipSpec(sources["25"], 0, 4)).path
    out = tmp_path / "x.mp4"

    def plan(*parts: tuple[Path, float, float], profile: RenderParams = PROFILE) -> list[Piece]:
        return plan_pieces(parts, profile=profile, name="bad")

    with pytest.raises(MediaError, match=r"montage bad: piece 1 \(.*\.h264\): frame 38 "
                                         r"\(1\.52 s\) is not a keyframe"):
        render_montage(plan((clip, 0, 1), (clip, 1.5, 1)), out, profile=PROFILE, name="bad")
    with pytest.raises(MediaError, match=r"piece 0 .* wants \[3, 5\.000\) s but the clip "
                                         r"holds 100 frames"):
        plan((clip, 3, 2.0))
    with pytest.raises(MediaError, match="not a cached clip"):
        plan((sources["30"], 0, 1))
    larger = PROFILE.model_copy(update={"width": 320, "height": 180})
    with pytest.raises(MediaError, match="clip is 160x90@25, not the profile's 320x180@25"):
        plan((clip, 0, 1), profile=larger)
    with pytest.raises(MediaError, match=r"piece 1 .*: offset 1\.0 s must be >= 0 and "
                                         r"duration -1\.0 s > 0"):
        plan((clip, 0.0, 1.0), (clip, 1.0, -1.0))
    with pytest.raises(MediaError, match=r"montage bad: no piece lasts half a frame \(1 "):
        plan((clip, 0.0, 0.01))  # 10 ms rounds to no frame
    # Pieces made by hand are checked too: frames of the clip, at the profile's rate.
    with pytest.raises(MediaError, match=r"piece 1 .*: frames \[75, 101\) at 25 fps are not "
                                         r"among the clip's 100 at 25 fps"):
        render_montage([Piece(clip, FrameSpan(0, 25, 25)), Piece(clip, FrameSpan(75, 101, 25))],
                       out, profile=PROFILE)
    with pytest.raises(MediaError, match=r"piece 0 .*: frames \[0, 30\) at 30 fps"):
        render_montage([Piece(clip, FrameSpan(0, 30, 30))], out, profile=PROFILE)
    with pytest.raises(MediaError, match="has no pieces"):
        render_montage([], out, profile=PROFILE)
    index = json.loads(index_path(clip).read_text())
    index_path(clip).write_text(json.dumps({**index, "keyframes": [0]}))
    with pytest.raises(MediaError, match=r"frame 25 \(1 s\) is not a keyframe"):
        render_montage(plan((clip, 1, 1)), out, profile=PROFILE)
    assert not out.exists()


def test_a_part_one_frame_short_is_made_up_by_the_next(sources: dict[str, Path],
                                                       tmp_path: Path) -> None:
    cache = SceneClipCache(tmp_path, profile=PROFILE)
    a = cache.ensure(ClipSpec(sources["25"], 0, 4)).path   # 100 frames
    b = cache.ensure(ClipSpec(sources["25"], 0, 1)).path   # 25 frames
    # 1.02 s from 3 s wants frames 0..25.5 → 26, the clip has 25 left: the 10 ms part after it
    # (no frame of its own: 1.03 s is frame 25.75 → 26) makes the frame up, as joins always did.
    pieces = plan_pieces([(a, 3.0, 1.02), (b, 0.0, 0.01), (a, 0.0, 1.0)], profile=PROFILE,
                         name="m")
    assert [(p.clip, p.span) for p in pieces] == [
        (a, FrameSpan(75, 100, 25)), (b, FrameSpan(0, 1, 25)), (a, FrameSpan(0, 25, 25))]
    assert render_montage(pieces, tmp_path / "m.mp4", profile=PROFILE).n_frames == 51


def test_other_aspect_ratios_are_padded_not_stretched(tmp_path: Path) -> None:
    src = tmp_path / "square.mp4"
    run_ffmpeg("-f", "lavfi", "-i", "color=c=white:size=120x90:rate=25:duration=2",
               "-c:v", "libx264", "-pix_fmt", "yuv420p", str(src))
    clip = SceneClipCache(tmp_path / "c", profile=PROFILE).ensure(ClipSpec(src, 0, 2)).path
    with av.open(str(clip)) as container:
        frame = next(container.decode(video=0))
        assert (frame.width, frame.height) == (160, 90)
        gray = frame.to_ndarray(format="gray").astype(float)
    assert gray[:, :18].mean() < 20 and gray[:, -18:].mean() < 20   # black pillars
    assert gray[:, 22:138].mean() > 230                               # the white picture


def test_encoded_pieces_join_copied_clips(sources: dict[str, Path], tmp_path: Path) -> None:
    clip = SceneClipCache(tmp_path, profile=PROFILE).ensure(ClipSpec(sources["25"], 0, 4)).path
    red = np.zeros((72, 96, 3), np.uint8)
    red[..., 0] = 255
    still = encode_piece(tmp_path / "still.h264", profile=PROFILE, frames=[red] * 25)
    assert (still.n_frames, still.duration_s) == (25, 1.0)
    drawn = encode_piece(
        tmp_path / "drawn.h264", profile=PROFILE, duration_s=0.4,
        stream=ffmpeg.input(str(sources["25"]), ss=2).drawtext(text="100% 'it': works", x=2, y=70,
                                                       fontcolor="white", fontsize=12))
    assert drawn.n_frames == 10
    pieces = plan_pieces([(clip, 0, 1.0), (still.path, 0, 1.0), (drawn.path, 0, 0.4),
                          (clip, 1, 1.0)], profile=PROFILE, name="edited")
    out = render_montage(pieces, tmp_path / "edited.mp4", profile=PROFILE)
    assert out.n_frames == 85
    codes = frame_codes(out.path)
    assert codes[:25] == list(range(25))
    assert codes[50:60] == list(range(50, 60))  # the drawn text sits below the stripes
    assert codes[60:] == list(range(25, 50))
    with av.open(str(out.path)) as container:
        rgb = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)][30]
    assert rgb[45, 80, 0] > 200 and rgb[45, 80, 1] < 60  # the inserted still is red
    with pytest.raises(MediaError, match="exactly one of frames or stream"):
        encode_piece(tmp_path / "none.h264", profile=PROFILE)


def test_audio_profile_keeps_a_normalized_track(tmp_path: Path) -> None:
    profile = PROFILE.model_copy(update={"audio": True})
    loud = coded_source(tmp_path / "loud.mp4", fps=25, seconds=4, audio=True)
    silent = coded_source(tmp_path / "silent.mp4", fps=25, seconds=4)
    cache = SceneClipCache(tmp_path / "c", profile=profile)
    a = cache.ensure(ClipSpec(loud, 0.0, 3.0)).path
    b = cache.ensure(ClipSpec(silent, 1.0, 4.0)).path
    assert a.with_suffix(".m4a").is_file() and b.with_suffix(".m4a").is_file()
    out = render_montage(plan_pieces([(a, 1, 1.6), (b, 0, 2.0)], profile=profile, name="a"),
                         tmp_path / "a.mp4", profile=profile)
    assert out.n_frames == 90
    with av.open(str(out.path)) as container:
        stream = container.streams.audio[0]
        assert (stream.codec_context.name, stream.rate, stream.channels) == ("aac", 48000, 2)
        samples = sum(f.samples for f in container.decode(audio=0))
    assert abs(samples / 48000 - 3.6) < 0.05
    assert frame_codes(out.path)[:40] == list(range(25, 65))
