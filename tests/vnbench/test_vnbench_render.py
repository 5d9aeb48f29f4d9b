"""Every subtask rendered on a generated haystack: needles where planned, the rest untouched.

One stage run (``vnb_result``, see conftest) makes one sample of each of the 9 subtasks, the
4 Long ones and the 3 Act ones. Each test decodes the rendered videos and checks one
property on all of them: frames outside the needles are bit-identical to the cached
haystack, and each kind of needle shows up at its planned time.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from needleforge.params import VNBenchParams
from needleforge.records import Video
from needleforge.vnbench import VNBenchResult, VNBenchSample, build_vnbench
from needleforge.vnbench.clip_seconds import decode_file
from needleforge.vnbench.sample_render import render_sample, still_frame
from needleforge.vnbench.stage import haystack_cache, haystack_spec
from needleforge.vnbench.subtasks import ACT_SUBTASKS, LONG_SUBTASKS, SUBTASKS
from needleforge.vnbench.text import TextStyle, default_font_path
from tests.vnbench.vnbench_cases import (
    PROFILE,
    HistogramEmbedder,
    haystack_frame,
    mean_abs_diff,
)

FPS = PROFILE.fps
_decoded: dict[Path, list[np.ndarray]] = {}


def frames_of(path: Path) -> list[np.ndarray]:
    if path not in _decoded:
        _decoded[path] = decode_file(path)
    return _decoded[path]


def rendered(sample: VNBenchSample, dirs: tuple[Path, Path]) -> list[np.ndarray]:
    return frames_of(dirs[0] / sample.video)


def haystack(sample: VNBenchSample, dirs: tuple[Path, Path]) -> list[np.ndarray]:
    path = haystack_cache(dirs[1], profile=PROFILE).path_for(haystack_spec(sample.haystack))
    return frames_of(path)


def by_task(result: VNBenchResult) -> dict[str, VNBenchSample]:
    return {s.task: s for s in result.samples}


def test_every_subtask_long_and_act_is_made(vnb_result: VNBenchResult) -> None:
    expected = set(SUBTASKS) | set(LONG_SUBTASKS) | set(ACT_SUBTASKS)
    assert set(by_task(vnb_result)) == expected
    reasons = [s for s in vnb_result.skipped if not s.what.startswith("name ")]
    assert reasons == [], reasons  # only CJK names (no glyphs in DejaVu Sans) are left out
    assert {p.name for p in vnb_result.videos} == {s.video for s in vnb_result.samples}


def test_the_stage_counts_each_haystack_screened_and_sample_rendered(
        vnb_result: VNBenchResult, vnb_steps: list[tuple[int, int]]) -> None:
    haystacks = {s.haystack.haystack_id for s in vnb_result.samples}
    total = len(haystacks) + len(vnb_result.samples)  # every job composed: no skip
    assert [d for d, _ in vnb_steps] == list(range(1, total + 1))
    assert vnb_steps[-1] == (total, total)


def test_videos_have_the_planned_length(vnb_result: VNBenchResult,
                                        vnb_dirs: tuple[Path, Path]) -> None:
    for sample in vnb_result.samples:
        inserted = sum(n.end_s - n.start_s for n in sample.needles if n.method == "insert")
        assert sample.duration_s == sample.haystack.duration_s + inserted
        assert len(rendered(sample, vnb_dirs)) == round(sample.duration_s * FPS), sample.task


def test_frames_outside_needles_are_bit_identical_to_the_cached_haystack(
        vnb_result: VNBenchResult, vnb_dirs: tuple[Path, Path]) -> None:
    for sample in vnb_result.samples:
        out, hay = rendered(sample, vnb_dirs), haystack(sample, vnb_dirs)
        compared = 0
        for k, frame in enumerate(out):
            source = haystack_frame(sample, k, fps=FPS)
            if source is not None:
                assert np.array_equal(frame, hay[source]), (sample.task, k, source)
                compared += 1
        assert compared == sample.haystack.duration_s * FPS - sum(
            FPS for n in sample.needles if n.method == "edit")


def test_subtitles_change_the_bottom_of_their_second_only(
        vnb_result: VNBenchResult, vnb_dirs: tuple[Path, Path]) -> None:
    subtitled = [s for s in vnb_result.samples if s.needle_kind == "subtitle"]
    assert {s.task for s in subtitled} >= {"ret_edit1", "ord_edit1", "cnt_edit1"}
    for sample in subtitled:
        out, hay = rendered(sample, vnb_dirs), haystack(sample, vnb_dirs)
        for needle in sample.needles:
            for k in range(round(needle.start_s * FPS), round(needle.end_s * FPS)):
                bottom = slice(int(PROFILE.height * 0.7), PROFILE.height)
                top = slice(0, int(PROFILE.height * 0.5))
                changed = np.abs(out[k][bottom].astype(int) - hay[needle.haystack_s * FPS + k
                                                                  - round(needle.start_s * FPS)
                                                                  ][bottom]).max(axis=2)
                assert (changed > 100).sum() > 100, (sample.task, k)  # text strokes
                assert mean_abs_diff(out[k][top], hay[needle.haystack_s * FPS + k - round(
                    needle.start_s * FPS)][top]) < 4  # re-encoded, otherwise untouched


def test_pasted_images_fill_their_regions(vnb_result: VNBenchResult,
                                          vnb_dirs: tuple[Path, Path]) -> None:
    sample = by_task(vnb_result)["cnt_edit2"]
    assert len(sample.needles) == 4 and all(1 <= len(n.regions) <= 4 for n in sample.needles)
    assert len({n.label for n in sample.needles}) == 1
    out, hay = rendered(sample, vnb_dirs), haystack(sample, vnb_dirs)
    for needle in sample.needles:
        k = round(needle.start_s * FPS) + FPS // 2
        with Image.open(str(needle.asset)) as opened:
            picture = opened.convert("RGBA")
        for r in needle.regions:
            base = Image.fromarray(hay[needle.haystack_s * FPS + FPS // 2]).convert("RGBA")
            copy = picture.resize((r.width, r.height), Image.Resampling.LANCZOS)
            base.alpha_composite(copy, (r.x, r.y))
            want = np.asarray(base.convert("RGB"))[r.y: r.y + r.height, r.x: r.x + r.width]
            got = out[k][r.y: r.y + r.height, r.x: r.x + r.width]
            was = hay[needle.haystack_s * FPS + FPS // 2][r.y: r.y + r.height,
                                                          r.x: r.x + r.width]
            assert mean_abs_diff(got, want) < 12, (needle, r)
            assert mean_abs_diff(got, want) < mean_abs_diff(got, was) / 2


def test_inserted_stills_show_their_image_for_one_second(
        vnb_result: VNBenchResult, vnb_dirs: tuple[Path, Path]) -> None:
    stills = [s for s in vnb_result.samples if s.needle_type == "image_insert"]
    assert {s.task for s in stills} >= {"ret_insert1", "ret_insert2", "ord_insert1",
                                        "ord_insert2", "cnt_insert1"}
    for sample in stills:
        out = rendered(sample, vnb_dirs)
        for needle in sample.needles:
            want = still_frame(Path(str(needle.asset)), width=PROFILE.width,
                               height=PROFILE.height)
            assert needle.end_s - needle.start_s == 1
            for k in range(round(needle.start_s * FPS), round(needle.end_s * FPS)):
                assert mean_abs_diff(out[k], want) < 6, (sample.task, needle.label, k)


def test_inserted_clips_play_their_frames(vnb_result: VNBenchResult,
                                          vnb_dirs: tuple[Path, Path]) -> None:
    clips = [s for s in vnb_result.samples if s.needle_kind == "clip"]
    assert {s.task for s in clips} == set(ACT_SUBTASKS)
    for sample in clips:
        out = rendered(sample, vnb_dirs)
        for needle in sample.needles:
            source = frames_of(Path(str(needle.asset)))  # 25 fps, same 320x180 frame
            for step in (0, FPS // 2, FPS - 1):
                k = round(needle.start_s * FPS) + step
                assert mean_abs_diff(out[k], source[int((step / FPS + 0.001) * 25)]) < 6


def test_answers_are_right_by_construction(vnb_result: VNBenchResult) -> None:
    for sample in vnb_result.samples:
        needles = sorted(sample.needles, key=lambda n: n.start_s)
        if sample.group == "retrieval":
            assert len(needles) == 1 and sample.answer == needles[0].label
        elif sample.group == "ordering":
            assert len(needles) == 4 and sample.answer == ", ".join(n.label for n in needles)
            assert len({n.label for n in needles}) == 4
        else:
            assert sample.answer == str(sum(n.copies for n in needles))
        if sample.needle_kind == "subtitle":
            assert all(n.text == f"The secret word is {n.label}." for n in needles)


def test_options_are_distinct_and_rotations_balanced(vnb_result: VNBenchResult) -> None:
    for sample in vnb_result.samples:
        assert len({o.casefold() for o in sample.options}) == 4
        letters = []
        for try_index in range(4):
            options, answer = sample.rotation(try_index)
            assert sorted(options) == sorted(sample.options)
            assert options[answer] == sample.answer
            assert sum(o == sample.answer for o in options) == 1
            letters.append(answer)
        assert sorted(letters) == [0, 1, 2, 3]


def test_long_and_main_haystacks_have_their_lengths(vnb_result: VNBenchResult,
                                                    vnb_params: VNBenchParams) -> None:
    for sample in vnb_result.samples:
        low, high = ((vnb_params.long_min_s, vnb_params.long_max_s) if sample.task.endswith(
            "_long") else (vnb_params.min_haystack_s, vnb_params.max_haystack_s))
        assert low <= sample.haystack.duration_s <= high


def test_rerun_keeps_samples_and_skips_rendering(
        vnb_source: Video, vnb_params: VNBenchParams, vnb_result: VNBenchResult,
        vnb_dirs: tuple[Path, Path]) -> None:
    out_dir, cache_dir = vnb_dirs
    before = {p: p.stat().st_mtime_ns for p in vnb_result.videos}
    again = build_vnbench(videos=[vnb_source], params=vnb_params, out_dir=out_dir,
                          cache_dir=cache_dir, render=PROFILE, embedder=HistogramEmbedder())
    assert again.samples == vnb_result.samples
    assert again.questions == vnb_result.questions
    assert {p: p.stat().st_mtime_ns for p in again.videos} == before


def test_too_short_videos_are_reported_not_fatal(vnb_source: Video, tmp_path: Path) -> None:
    params = VNBenchParams(min_haystack_s=60, max_haystack_s=90, tasks=["ret_edit1"])
    result = build_vnbench(videos=[vnb_source], params=params, out_dir=tmp_path / "o",
                           cache_dir=tmp_path / "c", render=PROFILE,
                           embedder=HistogramEmbedder())
    assert result.samples == () and result.questions == ()
    assert any("no ingested video lasts 60 s" in s.reason for s in result.skipped)


@pytest.mark.parametrize("task", ["ord_insert2"])
def test_a_pool_too_small_skips_the_sample_with_its_reason(
        vnb_source: Video, tmp_path: Path, task: str) -> None:
    params = VNBenchParams(tasks=[task], samples_per_subtask=1, min_haystack_s=12,
                           max_haystack_s=12, level2_categories=["no-such-category"])
    result = build_vnbench(videos=[vnb_source], params=params, out_dir=tmp_path / "o",
                           cache_dir=tmp_path / "c", render=PROFILE,
                           embedder=HistogramEmbedder())
    assert result.samples == ()
    assert any("Ordering-I2 needs 4" in s.reason for s in result.skipped)


def test_rendering_is_byte_identical_from_scratch(vnb_result: VNBenchResult,
                                                  vnb_dirs: tuple[Path, Path],
                                                  tmp_path: Path) -> None:
    style = TextStyle(font_path=default_font_path(), size_frac=0.1)
    for task in ("cnt_edit2", "ord_insert1", "ret_edit1"):
        sample = by_task(vnb_result)[task]
        clip = haystack_cache(vnb_dirs[1], profile=PROFILE).path_for(
            haystack_spec(sample.haystack))
        again = render_sample(sample, haystack_clip=clip, out=tmp_path / sample.video,
                              profile=PROFILE, style=style, piece_root=tmp_path / "pieces",
                              work_root=tmp_path / "work")
        assert not again.skipped
        assert again.path.read_bytes() == (vnb_dirs[0] / sample.video).read_bytes(), task
