"""What expand and the CPU baselines compute more than once (``benchmarks/work_repeats.py``):
its counting is tried on hand-made work lists, and its arguments on bad paths; the stages
themselves are never run here (that takes minutes on the demo's store)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "work_repeats.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("work_repeats_bench", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_a_repeat_is_an_item_whose_inputs_came_before(bench: ModuleType) -> None:
    work = [("a", 1.0), ("b", 2.0), ("a", 0.5), ("a", 0.25), ("c", 4.0)]
    got = bench.repeats(work)
    assert (got.items, got.distinct, got.repeated_s, got.all_s) == (5, 3, 0.75, 7.75)
    assert bench.repeats([]).repeated_s == 0.0


def test_the_ceiling_is_the_whole_over_what_is_not_repeated(bench: ModuleType) -> None:
    assert bench.ceiling(100.0, 20.0) == pytest.approx(1.25)
    assert bench.ceiling(10.0, 0.0) == 1.0
    for total, repeated in ((10.0, 10.0), (10.0, -1.0), (0.0, 0.0)):
        with pytest.raises(ValueError, match="repeated_s"):
            bench.ceiling(total, repeated)


def test_frames_repeat_within_a_video_or_across_videos(bench: ModuleType) -> None:
    # video 1 shows x twice (within), video 2 shows x and y again (across) and z once
    assert bench.cross_video([["x", "y", "x"], ["x", "z", "y"], []]) == (1, 2)
    assert bench.cross_video([]) == (0, 0)


def test_a_bounded_cache_saves_only_what_it_still_holds(bench: ModuleType) -> None:
    work = [("a", 1.0, 10.0), ("b", 1.0, 10.0), ("a", 3.0, 10.0), ("c", 1.0, 10.0),
            ("b", 5.0, 10.0)]
    assert bench.lru_saved(work, 30.0) == 8.0  # everything fits: both repeats saved
    assert bench.lru_saved(work, 20.0) == 3.0  # c pushed b out before b came again
    assert bench.lru_saved(work, 5.0) == 0.0  # nothing fits
    assert bench.lru_saved([("a", 1.0, 1.0), ("a", 2.0, 1.0)], 1.0) == 2.0


def test_a_picture_key_names_its_pixels_and_shape(bench: ModuleType) -> None:
    image = np.arange(48, dtype=np.uint8).reshape(4, 4, 3)
    other = image.copy()
    other[1, 1, 0] += 1
    assert bench.digest(image) == bench.digest(image.copy())
    assert bench.digest(image) != bench.digest(other)
    assert bench.digest(image, step=2) == bench.digest(other, step=2)  # (1, 1) not sampled
    assert bench.digest(image) != bench.digest(image.reshape(2, 8, 3))


def test_a_cut_release_keeps_every_question_of_its_first_videos(bench: ModuleType,
                                                               tmp_path: Path) -> None:
    questions = tmp_path / "questions.jsonl"
    rows = ['{"video": "a.mp4", "q": 1}', '{"video": "b.mp4", "q": 2}',
            '{"video": "a.mp4", "q": 3}', '{"video": "c.mp4", "q": 4}']
    questions.write_text("\n".join(rows) + "\n\n", "utf-8")
    cut = bench.first_videos(questions, tmp_path / "cut" / "questions.jsonl", 2)
    assert cut.read_text("utf-8").splitlines() == rows[:3]
    assert bench.first_videos(questions, tmp_path / "unused.jsonl", None) == questions
    assert not (tmp_path / "unused.jsonl").exists()


@pytest.mark.parametrize(("argv", "message"), [
    (["--db", "{tmp}/none.duckdb", "--skip", "evaluate"], "--db .*none.duckdb: not there"),
    (["--release", "{tmp}", "--skip", "expand"], "--release .*: not there"),
    (["--skip", "expand", "--skip", "evaluate", "--max-frames", "0"], "--max-frames 0"),
    (["--skip", "expand", "--skip", "evaluate", "--videos", "0"], "--videos 0"),
])
def test_bad_arguments_are_refused_naming_them(bench: ModuleType, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str],
                                               argv: list[str], message: str) -> None:
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    with pytest.raises(SystemExit) as exit_:
        bench.main([*argv, "--out", str(tmp_path / "out")])
    assert exit_.value.code == 2
    assert __import__("re").search(message, capsys.readouterr().err)


def test_one_decoder_input_is_one_key_wherever_a_file_holds_it(bench: ModuleType,
                                                               tmp_path: Path) -> None:
    """A clip joined to itself by stream copy (how montages reuse scene clips): the frame at
    0.75 s of each copy is fed the same packets from its keyframe, so it has one key; read
    front to back the second copy's input also holds the first copy's packets."""
    import subprocess

    from needleforge.media.ffmpeg import ffmpeg_binary

    clip, joined, listing = tmp_path / "clip.mp4", tmp_path / "joined.mp4", tmp_path / "l.txt"
    run = [ffmpeg_binary(), "-hide_banner", "-loglevel", "error", "-y"]
    subprocess.run([*run, "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=10:duration=2",
                    "-c:v", "libx264", "-pix_fmt", "yuv420p", "-g", "5", "-bf", "0",
                    str(clip)], check=True)
    listing.write_text(f"file '{clip}'\nfile '{clip}'\n", "utf-8")
    subprocess.run([*run, "-f", "concat", "-safe", "0", "-i", str(listing), "-c", "copy",
                    str(joined)], check=True)
    times = [0.05, 0.75, 1.25, 2.75, 3.25, 9.0]  # 9.0: past the end, the last frame
    sought = bench.input_keys(joined, times, from_start=False)
    assert sought[1] == sought[3] and sought[2] == sought[4]  # same frame of the clip
    assert len(set(sought[:3])) == 3 and sought[-1] not in sought[:-1]
    copy = tmp_path / "copy.mp4"
    copy.write_bytes(clip.read_bytes())
    assert bench.input_keys(copy, times[:3], from_start=False) == \
        bench.input_keys(clip, times[:3], from_start=False)
    front = bench.input_keys(joined, times, from_start=True)
    assert front[1] != front[3] and len(set(front)) == len(times)
