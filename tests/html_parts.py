"""An HTML page as what a browser makes of it: tags, attributes and text, entities decoded.

Two pages with the same parts show the same thing, however their escaping is spelt
(``&quot;`` or ``&#34;``): the HTML tests compare pages this way with golden copies.
"""

from __future__ import annotations

from html.parser import HTMLParser


class _Parts(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[tuple[str, ...]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.parts.append(("start", tag, *(f"{k}={v}" for k, v in attrs)))

    def handle_endtag(self, tag: str) -> None:
        self.parts.append(("end", tag))

    def handle_data(self, data: str) -> None:
        if data.strip():
            self.parts.append(("text", " ".join(data.split())))


def html_parts(page: str) -> list[tuple[str, ...]]:
    """The start tags (with attributes), end tags and non-blank texts of ``page``, in order;
    text whitespace runs are folded to one space (the browser shows them so)."""
    parser = _Parts()
    parser.feed(page)
    parser.close()
    return parser.parts


def texts(page: str) -> list[str]:
    """The texts of ``page`` (see :func:`html_parts`)."""
    return [part[1] for part in html_parts(page) if part[0] == "text"]
