"""``index.html``: every reviewed question on one page, each linking to its contact sheet."""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Sequence

from needleforge.review.items import ReviewItem
from needleforge.review.verdicts import Verdict

_STYLE = """
body { font-family: DejaVu Sans, Helvetica, Arial, sans-serif; margin: 1.5em; color: #141414; }
table { border-collapse: collapse; width: 100%; }
th, td { border-bottom: 1px solid #ddd; padding: 6px 8px; vertical-align: top; text-align: left; }
th { background: #f3f3f3; position: sticky; top: 0; }
td.sheet img { width: 320px; height: 180px; object-fit: cover; object-position: top;
               border: 1px solid #ccc; }
.pass { color: #147832; font-weight: bold; } .fail { color: #aa2828; font-weight: bold; }
.none { color: #777; } .small { font-size: 85%; color: #555; } pre { background: #f6f6f6; }
"""


@dataclasses.dataclass(frozen=True, slots=True)
class IndexRow:
    """One question of the index: the item, its sheet's file name, key and human verdict."""

    item: ReviewItem
    sheet: str
    key: str
    verdict: Verdict | None = None


def _verifier(item: ReviewItem) -> str:
    if not item.verifications:
        return '<span class="none">not verified</span>'
    parts = []
    for v in item.verifications:
        css, word = ("pass", "passed") if v.passed else ("fail", "failed")
        parts.append(f'<span class="{css}">{word}</span> <span class="small">'
                     f"{html.escape(v.verifier)}: {html.escape(v.reason)}</span>")
    return "<br>".join(parts)


def _human(verdict: Verdict | None) -> str:
    if verdict is None or not verdict.judged:
        return '<span class="none">not judged</span>'
    css, word = ("pass", "valid") if verdict.valid else ("fail", "invalid")
    note = f'<br><span class="small">{html.escape(verdict.note)}</span>' if verdict.note else ""
    return f'<span class="{css}">{word}</span>{note}'


def _row(number: int, row: IndexRow) -> str:
    item, q = row.item, row.item.question
    sheet = html.escape(row.sheet, quote=True)
    return (
        f"<tr><td>{number}</td>"
        f'<td class="sheet"><a href="{sheet}"><img src="{sheet}" loading="lazy" '
        f'alt="sheet of {html.escape(q.question_id)}"></a></td>'
        f"<td><b>{html.escape(q.text)}</b><br>{html.escape(q.description)}"
        f'<br><span class="small">{html.escape(q.question_id)} · key {row.key}</span></td>'
        f"<td>{q.needle_type}<br>{item.montage.bucket}, {item.needles} needle(s)"
        f"<br>{len(item.negatives)} negative(s)</td>"
        f"<td>{_verifier(item)}</td><td>{_human(row.verdict)}</td></tr>"
    )


def index_html(rows: Sequence[IndexRow], *, title: str, summary: str = "") -> str:
    """The index page: a table of ``rows`` (thumbnail of the sheet's top, question and
    description, needle type and bucket, verifier and human verdicts) under ``summary``."""
    body = "\n".join(_row(k, r) for k, r in enumerate(rows, start=1))
    pre = f"<pre>{html.escape(summary)}</pre>" if summary else ""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>\n"
        f"<h1>{html.escape(title)}</h1>\n{pre}\n"
        "<p>Open a sheet to judge its question: valid when the description fits the green "
        "answer frames and none of the red negative frames. Record verdicts in "
        '<a href="verdicts_template.yaml">verdicts_template.yaml</a>.</p>\n'
        "<table><thead><tr><th>#</th><th>sheet</th><th>question / description</th>"
        "<th>needle</th><th>verifier</th><th>human</th></tr></thead><tbody>\n"
        f"{body}\n</tbody></table></body></html>\n"
    )
