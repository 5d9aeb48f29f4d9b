"""``index.html``: every reviewed question on one page, each linking to its contact sheet."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence

import jinja2

from needleforge.review.items import ReviewItem
from needleforge.review.verdicts import FileVerdict


@dataclasses.dataclass(frozen=True, slots=True)
class IndexRow:
    """One question of the index: the item, its sheet's file name, key and human verdict."""

    item: ReviewItem
    sheet: str
    key: str
    verdict: FileVerdict | None = None


#: The page (Jinja2, autoescaped as :mod:`needleforge.release.markup`'s card: every question,
#: description, note, reason and file name reaches it as text).
_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{ title }}</title><style>
body { font-family: DejaVu Sans, Helvetica, Arial, sans-serif; margin: 1.5em; color: #141414; }
table { border-collapse: collapse; width: 100%; }
th, td { border-bottom: 1px solid #ddd; padding: 6px 8px; vertical-align: top; text-align: left; }
th { background: #f3f3f3; position: sticky; top: 0; }
td.sheet img { width: 320px; height: 180px; object-fit: cover; object-position: top;
               border: 1px solid #ccc; }
.pass { color: #147832; font-weight: bold; } .fail { color: #aa2828; font-weight: bold; }
.none { color: #777; } .small { font-size: 85%; color: #555; } pre { background: #f6f6f6; }
</style></head><body>
<h1>{{ title }}</h1>
{% if summary %}<pre>{{ summary }}</pre>{% endif %}

<p>Open a sheet to judge its question: valid when the description fits the green answer \
frames and none of the red negative frames. Record verdicts in \
<a href="verdicts_template.yaml">verdicts_template.yaml</a>.</p>
<table><thead><tr><th>#</th><th>sheet</th><th>question / description</th><th>needle</th>\
<th>verifier</th><th>human</th></tr></thead><tbody>
{% for row in rows %}
{% set item, q, verdict = row.item, row.item.question, row.verdict %}
<tr><td>{{ loop.index }}</td><td class="sheet"><a href="{{ row.sheet }}"><img \
src="{{ row.sheet }}" loading="lazy" alt="sheet of {{ q.question_id }}"></a></td>\
<td><b>{{ q.text }}</b><br>{{ q.description }}<br><span class="small">{{ q.question_id }} \
· key {{ row.key }}</span></td>\
<td>{{ q.needle_type }}<br>{{ item.montage.bucket }}, {{ item.needles }} needle(s)<br>\
{{ item.negatives | length }} negative(s)</td><td>
{%- for v in item.verifications -%}
{{ "<br>" | safe if not loop.first }}<span class="{{ "pass" if v.passed else "fail" }}">\
{{ "passed" if v.passed else "failed" }}</span> <span class="small">{{ v.verifier }}: \
{{ v.reason }}</span>
{%- else -%}
<span class="none">not verified</span>
{%- endfor -%}
</td><td>
{%- if verdict is none or not verdict.judged -%}
<span class="none">not judged</span>
{%- else -%}
<span class="{{ "pass" if verdict.valid else "fail" }}">\
{{ "valid" if verdict.valid else "invalid" }}</span>
{%- if verdict.note %}<br><span class="small">{{ verdict.note }}</span>{% endif -%}
{%- endif -%}
</td></tr>
{% endfor %}
</tbody></table></body></html>
"""


@functools.cache
def _template() -> jinja2.Template:
    env = jinja2.Environment(autoescape=True, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    return env.from_string(_PAGE)


def index_html(rows: Sequence[IndexRow], *, title: str, summary: str = "") -> str:
    """The index page: a table of ``rows`` (thumbnail of the sheet's top, question and
    description, needle type and bucket, verifier and human verdicts) under ``summary``."""
    return _template().render(rows=rows, title=title, summary=summary)
