"""ffmpeg discovery with a floor: the order, the probe, and the binaries it must refuse.

The bad binaries are shell scripts in ``tmp_path`` that print what a real ffmpeg would (a
banner with an old version, ``Unknown encoder 'libx264'``) or nothing at all; the good ones
are scripts that ``exec`` the bundled binary, so "on PATH" and "in the variable" are tested
with a real ffmpeg behind them.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from needleforge.errors import MediaError
from needleforge.media import ffmpeg as ff
from needleforge.media.ffmpeg import ENV_VAR, FfmpegChoice, find_ffmpeg
from needleforge.media.ffmpeg_probe import (
    FLOOR_TEXT,
    below_floor,
    describe_failure,
    parse_version,
    probe_ffmpeg,
    version_tuple,
)

OLD_BANNER = "ffmpeg version 4.4.2-0ubuntu0.22.04.1 Copyright (c) 2000-2021 the FFmpeg developers"
NEW_BANNER = "ffmpeg version 6.1.1-3ubuntu5 Copyright (c) 2000-2023 the FFmpeg developers"


@pytest.fixture(autouse=True)
def fresh_discovery() -> Iterator[None]:
    """Each test discovers anew and sees its own one-time notice."""
    ff._discover.cache_clear()
    ff._notice_once.cache_clear()
    yield
    ff._discover.cache_clear()
    ff._notice_once.cache_clear()


def script(folder: Path, body: str, *, name: str = "ffmpeg", mode: int = 0o755) -> Path:
    """An executable ``/bin/sh`` script called ``name`` in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(mode)
    return path


def wrapper(folder: Path) -> Path:
    """A script that runs the bundled ffmpeg: a usable binary at a path of our choosing."""
    bundled, _ = ff._bundled()
    return script(folder, f'exec "{bundled}" "$@"')


def test_versions_parse_from_the_banner() -> None:
    assert parse_version(f"{NEW_BANNER}\n  built with gcc 13") == "6.1.1-3ubuntu5"
    assert parse_version("Usage: ffmpeg [options]") is None
    assert version_tuple("5.1.9-0+deb12u1") == (5, 1, 9)
    assert version_tuple("n9.0.2-17-g2a571b6068-20260930") == (9, 0, 2)
    assert version_tuple("7.1") == (7, 1, 0)
    assert version_tuple("N-113000-gabc123") is None  # a git snapshot: the features decide
    assert below_floor("4.4.2-0ubuntu0.22.04.1") and below_floor("5.0.3")
    assert not below_floor("5.1") and not below_floor("N-113000-gabc123")


def test_failures_name_the_missing_piece() -> None:
    def said(stderr: str) -> str:
        return describe_failure(stderr, returncode=1)

    assert said("[vost#0:0 @ 0x1] Unknown encoder 'libx264'") == "has no libx264 encoder"
    assert said("No such filter: 'drawtext'\nError") == "has no drawtext filter"
    assert said("[Parsed_scale_3 @ 0x55] Option 'force_divisible_by' not found") == (
        "has no option force_divisible_by in its scale filter")
    assert said("Unrecognized option 'fps_mode'.") == "has no -fps_mode option"
    assert said("weird\nthings happened") == (
        "fails the feature check (exit status 1: weird | things happened)")


def test_the_chosen_binary_passes_the_probe() -> None:
    choice = find_ffmpeg()
    assert os.access(choice.path, os.X_OK) and choice.source in ("env", "path", "bundled")
    assert version_tuple(choice.version) is None or not below_floor(choice.version)
    assert probe_ffmpeg(choice.path).usable, probe_ffmpeg(choice.path).problem()
    assert choice.to_dict()["version"] == choice.version and choice.why


def test_the_pinned_bundle_beats_path_and_the_variable_beats_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    on_path = wrapper(tmp_path / "bin")
    monkeypatch.setenv("PATH", str(on_path.parent))
    monkeypatch.delenv(ENV_VAR, raising=False)
    choice = find_ffmpeg()
    assert (choice.path, choice.source) == (ff._bundled()[0], "bundled")
    assert "the pinned encoder" in choice.why and isinstance(choice, FfmpegChoice)
    chosen = wrapper(tmp_path / "mine")
    monkeypatch.setenv(ENV_VAR, str(chosen))
    assert (find_ffmpeg().path, find_ffmpeg().source) == (str(chosen), "env")


def test_path_serves_only_where_the_bundle_cannot_with_one_notice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A platform imageio-ffmpeg ships no binary for, or a bundled binary that fails the
    probe: the ffmpeg on PATH is used, and the one warning says the bytes will differ."""
    on_path = wrapper(tmp_path / "bin")
    broken = script(tmp_path / "bundle", f'echo "{NEW_BANNER}" >&2\n'
                    "echo \"[vost#0:0 @ 0x5] Unknown encoder 'libx264'\" >&2\nexit 1")
    monkeypatch.setenv("PATH", str(on_path.parent))
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setattr(ff, "_bundled", lambda: (str(broken), "0.8.1"))
    with caplog.at_level(logging.WARNING, logger="needleforge.media.ffmpeg"):
        first = find_ffmpeg()
        ff._discover.cache_clear()  # a second discovery in the same process: no new notice
        assert find_ffmpeg() == first
    assert (first.path, first.source) == (str(on_path), "path")
    assert f"{broken} (version 6.1.1-3ubuntu5) has no libx264 encoder" in first.why
    notices = [r.getMessage() for r in caplog.records]
    assert len(notices) == 1 and "differ byte for byte" in notices[0], notices
    assert "\n" not in notices[0]

    def no_binary() -> tuple[str, str]:
        raise MediaError("imageio-ffmpeg has no usable ffmpeg binary: no build for this "
                         "platform")

    monkeypatch.setattr(ff, "_bundled", no_binary)
    ff._discover.cache_clear()
    assert find_ffmpeg().source == "path" and "no build for this platform" in find_ffmpeg().why


def test_no_usable_bundle_nor_path_is_an_error_naming_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = script(tmp_path / "bin", f'echo "{OLD_BANNER}" >&2\nexit 0')
    silent = script(tmp_path / "bundle", "exit 0")
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setattr(ff, "_bundled", lambda: (str(silent), "0.8.1"))
    monkeypatch.setenv("PATH", str(old.parent))
    with pytest.raises(MediaError) as err:
        find_ffmpeg()
    message = str(err.value)
    assert f"the imageio-ffmpeg binary {silent} (no version)" in message
    assert f"the ffmpeg on PATH {old} (version 4.4.2-0ubuntu0.22.04.1)" in message
    assert "set $NEEDLEFORGE_FFMPEG" in message
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    ff._discover.cache_clear()
    with pytest.raises(MediaError, match="there is no ffmpeg on PATH"):
        find_ffmpeg()


def test_variable_that_is_not_executable_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = script(tmp_path, 'echo "ffmpeg version 7.1"', mode=0o644)
    for value in (str(plain), str(tmp_path), "/no/such/ffmpeg"):
        monkeypatch.setenv(ENV_VAR, value)
        with pytest.raises(MediaError, match=f"NEEDLEFORGE_FFMPEG = '{value}' is not an exec"):
            find_ffmpeg()


def test_variable_that_prints_no_version_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    silent = script(tmp_path, "exit 0")
    monkeypatch.setenv(ENV_VAR, str(silent))
    with pytest.raises(MediaError) as err:
        find_ffmpeg()
    assert f"{silent} (no version) prints no 'ffmpeg version' banner" in str(err.value)


def test_variable_that_is_too_old_names_its_version_and_the_floor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = script(tmp_path, f'echo "{OLD_BANNER}" >&2\nexit 0')
    monkeypatch.setenv(ENV_VAR, str(old))
    with pytest.raises(MediaError) as err:
        find_ffmpeg()
    message = str(err.value)
    assert str(old) in message and "version 4.4.2-0ubuntu0.22.04.1" in message
    assert f"is older than the floor {FLOOR_TEXT}" in message


def test_probe_runs_once_per_binary_until_it_changes(tmp_path: Path) -> None:
    runs = tmp_path / "runs.txt"
    counted = script(tmp_path / "bin", f'echo run >> "{runs}"\n'
                     f'echo "{OLD_BANNER}" >&2\nexit 0')
    assert not probe_ffmpeg(counted).usable
    assert probe_ffmpeg(counted) == probe_ffmpeg(str(counted))
    assert runs.read_text().count("run") == 1
    counted.write_text(counted.read_text().replace("4.4.2", "4.4.3"))  # replaced in place
    os.utime(counted, ns=(1, 1))
    assert probe_ffmpeg(counted).version == "4.4.3-0ubuntu0.22.04.1"
    assert runs.read_text().count("run") == 2
