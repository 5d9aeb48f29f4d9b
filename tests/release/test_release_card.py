"""The release card: statistics in the paper's table shapes, plots, Markdown and HTML."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

import pytest

from needleforge.params import ReleaseParams
from needleforge.records import Verification
from needleforge.release import build_release, select_questions
from needleforge.release.markup import Document, Paragraph, Section, Table, to_html, to_markdown
from needleforge.release.stats import failure_kind, failure_table, summary_table, table2
from needleforge.stages.release import read_release_data
from tests.release.release_cases import CASE_PARAMS, make_store, montages, questions, verdicts

_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("card")
    params = CASE_PARAMS.model_copy(update={"release": ReleaseParams(
        title="NeMo <b>&</b> co", top_n_labels=1, release_date=dt.date(2026, 12, 1))})
    report = build_release(data=read_release_data(make_store(base / "nf.duckdb")), name="v1",
                           out_root=base, render_dir=None, params=params)
    return report.path


def test_html_shows_every_plot_and_nothing_remote(release: Path) -> None:
    html = (release / "card.html").read_text(encoding="utf-8")
    sources = re.findall(r'<img src="([^"]+)"', html)
    pngs = sorted(p.relative_to(release).as_posix() for p in (release / "plots").glob("*.png"))
    assert sorted(sources) == pngs and len(pngs) == 8  # 6 + the bias audit's 2
    for rel in pngs:
        assert (release / rel).read_bytes().startswith(_PNG_MAGIC)
    assert "http" not in html and "<script" not in html and "<link" not in html
    assert "NeMo &lt;b&gt;&amp;&lt;/b&gt; co: v1" in html  # titles are escaped
    assert html.count("<table>") == len(re.findall(r"^\| ---|^\|---", (
        release / "card.md").read_text(), flags=re.MULTILINE))


def test_markdown_card_holds_the_statistics(release: Path) -> None:
    md = (release / "card.md").read_text(encoding="utf-8")
    assert md.startswith("# NeMo <b>&</b> co: v1\n")
    assert ("| Short (< 2.5 min) | Single-needle | 1 | 0 | 2 | 22.10 s | 18.80 s | 15.50 s | "
            "1.50 | 3.17 s |") in md
    assert "| Medium (2.5–15 min) | Single-needle | 0 | 0 | 1 | 2.70 min |" in md
    assert "| All | All | 2 | 1 | 3 | - | - | - | - | - |" in md
    assert "| v1 (nemo) | 2 / 2 | 1 / 1 | 0 / 0 | 3 / 3 |" in md
    assert "| cat | 2 |" in md and "| beach |" not in md  # top_n_labels = 1
    assert "| judge/ver-1 | scene | 1 | 0 | 0.0 % |" in md
    assert "| judge/ver-1 | other | 1 |" in md  # why verdicts failed, by kind
    assert "| embedded/writer-1 | embedded/ver-1, judge/ver-1 | 1 |" in md  # who wrote/checked
    assert "| Archive B | CC0-1.0 | 1 | 0.167 |" in md
    assert "| Studio A | CC-BY-4.0 | 1 | 0.167 |" in md
    assert "- Release date: 2026-12-01" in md
    manifest = json.loads((release / "manifest.json").read_text())
    assert manifest["release_date"] == "2026-12-01" and manifest["title"] == "NeMo <b>&</b> co"


def _record(qid: str, bucket: str, video: str) -> dict[str, Any]:
    return {"question_id": qid, "family": "nemo", "bucket": bucket, "video": video}


def test_table2_lays_out_the_nemo_statistics() -> None:
    released = [q for q, _ in select_questions(questions(0), verdicts(0)).released]
    table = table2(montages(), released)
    assert table.headers[:5] == ("Montage type", "#Needles", "Object QA", "Scene QA", "All QA")
    assert [r[:5] for r in table.rows] == [
        ("Short (< 2.5 min)", "Single-needle", "1", "0", "2"),
        ("", "Multi-needle", "0", "1", ""),
        ("Medium (2.5–15 min)", "Single-needle", "0", "0", "1"),
        ("", "Multi-needle", "1", "0", ""),
        ("Long (> 15 min)", "Single-needle", "0", "0", "0"),
        ("", "Multi-needle", "0", "0", ""),
        ("All", "All", "2", "1", "3"),
    ]
    # m-obj 15.5 s and m-multi 22.1 s; needles 4.5 s, 3 s and 2 s; m-shared 162 s.
    assert table.rows[0][5:] == ("22.10 s", "18.80 s", "15.50 s", "1.50", "3.17 s")
    assert table.rows[2][5:] == ("2.70 min", "2.70 min", "2.70 min", "2.00", "4.00 s")
    assert table.rows[4][5:] == ("-",) * 5


def test_summary_table_counts_questions_and_montages() -> None:
    records = [_record("a", "short", "m1"), _record("b", "short", "m1"),
               _record("c", "short", "m2"), _record("d", "long", "m3")]
    summary = summary_table(records, name="x")
    assert summary.rows == (("x (nemo)", "3 / 2", "0 / 0", "1 / 1", "4 / 3"),)


def test_markup_escapes_and_checks_rows() -> None:
    with pytest.raises(ValueError, match="row 0 has 1 cells for 2 headers"):
        Table(("a", "b"), (("x",),))
    doc = Document("T", (Section("S", (Paragraph("a < b"), Table(("k|v",), (("1\n2",),)))),))
    assert "| k\\|v |" in to_markdown(doc) and "| 1 2 |" in to_markdown(doc)
    assert "<p>a &lt; b</p>" in to_html(doc)


def test_failed_verdicts_are_counted_by_kind() -> None:
    assert failure_kind("unconfirmed: 'cat': crop-classify: ...") == "unconfirmed"
    assert failure_kind("refused by negative-redetect: negative s1 shows 'car'") == (
        "refused by negative-redetect")
    assert failure_kind("ambiguous: negative s2 also holds 'cat'") == "other"
    verdicts = [Verification("q1", "embedded-looking", "2", False, "unconfirmed: x"),
                Verification("q2", "embedded-looking", "2", False, "unconfirmed: y"),
                Verification("q3", "embedded-looking", "2", False, "refused by person-pose: z"),
                Verification("q4", "embedded-looking", "2", True, "unique")]
    assert failure_table(verdicts).rows == (
        ("embedded-looking/2", "refused by person-pose", "1"),
        ("embedded-looking/2", "unconfirmed", "2"))
