"""``needleforge doctor``: the ffmpeg, PyAV and model files in use, and a clear failure."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from needleforge.cli import app
from needleforge.cli.doctor import diagnose, render
from needleforge.media import ffmpeg as ff
from needleforge.media.ffmpeg import ENV_VAR, find_ffmpeg

runner = CliRunner()


@pytest.fixture(autouse=True)
def fresh_discovery() -> None:
    ff._discover.cache_clear()


def test_diagnosis_names_the_binary_pyav_and_every_model_file() -> None:
    found = diagnose()
    assert found.ffmpeg == find_ffmpeg() and not found.problems
    assert found.pyav["av"] and found.pyav["libavcodec"].count(".") == 2
    assert len(found.models) == 8 and all(m.path and m.path.is_file() for m in found.models)
    assert all(m.version and "+sha256." in m.version for m in found.models)
    text = render(found)
    assert f"path     {find_ffmpeg().path}" in text and find_ffmpeg().why in text
    assert "efficientnet_lite3.tflite" in text and "libavformat" in text
    runtime = dict(found.detector_runtime)
    assert runtime["OpenVINO"].endswith("(f32)") and "converted" in runtime


def test_doctor_says_where_the_converted_detector_is_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEEDLEFORGE_MODEL_CACHE", str(tmp_path))
    runtime = dict(diagnose().detector_runtime)
    assert runtime["cache"] == str(tmp_path)
    assert runtime["converted"].startswith("not yet: the first detector converts")
    assert not any(tmp_path.iterdir())  # doctor converts nothing


def test_doctor_command_prints_the_report() -> None:
    result = runner.invoke(app, ["doctor"])
    assert result.exit_code == 0, result.output
    assert find_ffmpeg().path in result.output and "ch_PP-OCRv4_rec_infer.onnx" in result.output


def test_the_package_runs_as_a_module() -> None:
    """``python -m needleforge.cli doctor``, the way CI's distribution-ffmpeg smoke set calls it."""
    done = subprocess.run([sys.executable, "-m", "needleforge.cli", "doctor"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert find_ffmpeg().path in done.stdout


def test_doctor_reports_an_unusable_ffmpeg_and_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "ffmpeg"
    fake.write_text("#!/bin/sh\nexit 0\n")  # runs, prints no version
    fake.chmod(0o755)
    monkeypatch.setenv(ENV_VAR, str(fake))
    result = runner.invoke(app, ["doctor"])
    assert result.exit_code == 2
    assert "none usable" in result.output and "prints no 'ffmpeg version' banner" in result.output
    assert "PyAV" in result.output  # the rest of the report is still there
