"""The debug log keeps what an error's one line leaves out: its causes, whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from needleforge.debug_log import log_path, record
from needleforge.errors import BackendError


def failing() -> None:
    try:
        [].pop()
    except IndexError as exc:
        raise BackendError("checkpoint /w/ram.pth cannot be read") from exc


def test_an_error_with_a_cause_is_logged_whole(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEEDLEFORGE_DEBUG_LOG", str(tmp_path / "logs" / "debug.log"))
    with pytest.raises(BackendError) as info:
        failing()
    assert record(info.value, command="represent") == tmp_path / "logs" / "debug.log"
    text = log_path().read_text()
    assert "needleforge represent" in text and "IndexError: pop from empty list" in text
    assert "The above exception was the direct cause" in text
    assert text.rstrip().endswith("BackendError: checkpoint /w/ram.pth cannot be read")


def test_an_error_without_causes_or_an_unwritable_log_is_not_logged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NEEDLEFORGE_DEBUG_LOG", str(tmp_path / "debug.log"))
    assert record(BackendError("plain"), command="nemo") is None
    assert not (tmp_path / "debug.log").exists()
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("NEEDLEFORGE_DEBUG_LOG", str(tmp_path / "file" / "debug.log"))
    with pytest.raises(BackendError) as info:
        failing()
    assert record(info.value, command="nemo") is None  # a folder that is a file: skipped


def test_the_default_log_is_in_the_cache_folder(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NEEDLEFORGE_DEBUG_LOG")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert log_path() == tmp_path / "needleforge" / "debug.log"
