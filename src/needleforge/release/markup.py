"""A tiny document model rendered to both Markdown and HTML (the release card).

Why not convert Markdown to HTML: the card is generated, so it is built once as blocks
(paragraphs, bullet lists, tables, images, code) and each block is rendered twice; nothing is
parsed, every text reaches the HTML escaped (Jinja2 autoescape), and the page carries its own
small stylesheet (no CDN assets: the card must read offline).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TypeAlias

import jinja2


@dataclasses.dataclass(frozen=True, slots=True)
class Paragraph:
    text: str


@dataclasses.dataclass(frozen=True, slots=True)
class Bullets:
    items: tuple[str, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class Code:
    text: str


@dataclasses.dataclass(frozen=True, slots=True)
class Figure:
    """A picture of the release: ``path`` is relative to the card."""

    path: str
    alt: str


@dataclasses.dataclass(frozen=True, slots=True)
class Link:
    """A link to a file of the release: ``path`` is relative to the card."""

    text: str
    path: str


@dataclasses.dataclass(frozen=True, slots=True)
class Table:
    """A table of already-formatted cells; every row has one cell per header."""

    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    caption: str = ""

    def __post_init__(self) -> None:
        for i, row in enumerate(self.rows):
            if len(row) != len(self.headers):
                raise ValueError(f"table row {i} has {len(row)} cells for "
                                 f"{len(self.headers)} headers")

    def to_markdown(self) -> str:
        """The table as a GitHub-flavoured Markdown pipe table."""
        return _table_md(self)


Block: TypeAlias = Paragraph | Bullets | Code | Figure | Link | Table


@dataclasses.dataclass(frozen=True, slots=True)
class Section:
    title: str
    blocks: tuple[Block, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class Document:
    title: str
    sections: tuple[Section, ...]


def _cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _table_md(table: Table) -> str:
    lines = []
    if table.caption:
        lines += [f"*{table.caption}*", ""]
    lines.append("| " + " | ".join(_cell(h) for h in table.headers) + " |")
    lines.append("|" + "|".join("---" for _ in table.headers) + "|")
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in table.rows]
    return "\n".join(lines)


def _block_md(block: Block) -> str:
    if isinstance(block, Paragraph):
        return block.text
    if isinstance(block, Bullets):
        return "\n".join(f"- {item}" for item in block.items)
    if isinstance(block, Code):
        return f"```\n{block.text.rstrip()}\n```"
    if isinstance(block, Figure):
        return f"![{block.alt}]({block.path})"
    if isinstance(block, Link):
        return f"[{block.text}]({block.path})"
    return _table_md(block)


def to_markdown(doc: Document) -> str:
    """The document as Markdown text ending in one newline."""
    parts = [f"# {doc.title}"]
    for section in doc.sections:
        parts.append(f"## {section.title}")
        parts += [_block_md(b) for b in section.blocks]
    return "\n\n".join(parts) + "\n"


_HTML = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{ doc.title }}</title>
<style>
body { font-family: sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem;
       line-height: 1.45; color: #222; }
table { border-collapse: collapse; margin: 1rem 0; }
th, td { border: 1px solid #bbb; padding: 0.25rem 0.6rem; text-align: left; }
th { background: #eee; }
caption { caption-side: top; font-style: italic; padding-bottom: 0.3rem; }
img { max-width: 100%; }
pre { background: #f4f4f4; padding: 0.6rem; overflow-x: auto; }
</style>
</head>
<body>
<h1>{{ doc.title }}</h1>
{% for section in doc.sections %}
<h2>{{ section.title }}</h2>
{% for b in section.blocks %}
{% if kind(b) == "Paragraph" %}<p>{{ b.text }}</p>
{% elif kind(b) == "Bullets" %}<ul>{% for item in b.items %}<li>{{ item }}</li>{% endfor %}</ul>
{% elif kind(b) == "Code" %}<pre><code>{{ b.text }}</code></pre>
{% elif kind(b) == "Figure" %}<figure><img src="{{ b.path }}" alt="{{ b.alt }}"></figure>
{% elif kind(b) == "Link" %}<p><a href="{{ b.path }}">{{ b.text }}</a></p>
{% else %}<table>{% if b.caption %}<caption>{{ b.caption }}</caption>{% endif %}
<thead><tr>{% for h in b.headers %}<th>{{ h }}</th>{% endfor %}</tr></thead>
<tbody>
{% for row in b.rows %}<tr>{% for c in row %}<td>{{ c }}</td>{% endfor %}</tr>
{% endfor %}</tbody></table>
{% endif %}
{% endfor %}
{% endfor %}
</body>
</html>
"""


def to_html(doc: Document) -> str:
    """The document as one self-contained HTML page (all text escaped)."""
    env = jinja2.Environment(autoescape=True, trim_blocks=True, lstrip_blocks=True,
                             undefined=jinja2.StrictUndefined)
    template = env.from_string(_HTML)
    return template.render(doc=doc, kind=lambda b: type(b).__name__)


def tables(doc: Document) -> Sequence[Table]:
    """Every table of the document, in order (for tests and reports)."""
    return [b for s in doc.sections for b in s.blocks if isinstance(b, Table)]
