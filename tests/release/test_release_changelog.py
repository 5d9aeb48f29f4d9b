"""The changelog between two releases: added, removed, changed, counts per family and bucket."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from needleforge.errors import ReleaseError
from needleforge.release import build_release
from needleforge.release.changelog import compare, read_previous
from needleforge.stages.release import read_release_data
from tests.release.release_cases import CASE_PARAMS, make_store


def test_second_release_lists_what_changed(tmp_path: Path) -> None:
    out = tmp_path / "releases"
    first = build_release(data=read_release_data(make_store(tmp_path / "v1.duckdb")), name="v1",
                          out_root=out, render_dir=None, params=CASE_PARAMS)
    assert "First release" in (first.path / "CHANGELOG.md").read_text()
    second = build_release(data=read_release_data(make_store(tmp_path / "v2.duckdb", variant=1)),
                           name="v2", out_root=out, render_dir=None, params=CASE_PARAMS,
                           previous=first.path)
    assert second.changes == {"previous": "v1", "added": 1, "removed": 1, "changed": 1,
                              "failed_sources": 0}
    text = (second.path / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "Compared with `v1`: 1 added, 1 removed, 1 changed" in text
    assert "## Added (1)\n\n- `q-unverified`" in text
    assert "## Removed (1)\n\n- `q-multi`" in text
    assert "## Changed (1)\n\n- `q-obj`" in text  # reworded; q-shared-obj is untouched
    assert "| nemo | short | 2 | 2 | +0 |" in text  # q-multi out, q-unverified in
    assert "| nemo | medium | 1 | 1 | +0 |" in text
    manifest = json.loads((second.path / "manifest.json").read_text())
    assert "CHANGELOG.md" in [f["path"] for f in manifest["files"]]


def test_answers_and_tries_are_compared() -> None:
    old = [{"question_id": "g", "family": "nemo", "bucket": "short", "question": "q",
            "answer_spans": [[1.0, 2.0]]},
           {"question_id": "c", "try": 0, "family": "vnbench", "bucket": "short",
            "question": "q", "options": ["a", "b", "c", "d"], "answer_index": 0},
           {"question_id": "c", "try": 1, "family": "vnbench", "bucket": "short",
            "question": "q", "options": ["b", "c", "d", "a"], "answer_index": 3}]
    new = [{**old[0], "answer_spans": [[1.0, 2.5]]}, old[1],
           {**old[2], "try": 2}]
    log = compare(new, name="v2", previous=("v1", old))
    assert log.changed == (("g", None),)
    assert log.added == (("c", 2),) and log.removed == (("c", 1),)
    assert "- `c (try 2)`" in log.to_markdown()


def test_unreadable_previous_release(tmp_path: Path) -> None:
    with pytest.raises(ReleaseError, match=r"cannot read questions\.jsonl"):
        read_previous(tmp_path)
    (tmp_path / "questions.jsonl").write_text('{"question_id": "a"}\n[1, 2]\n')
    with pytest.raises(ReleaseError, match=r"questions.jsonl:2: not a question record"):
        read_previous(tmp_path)
