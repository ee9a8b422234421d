"""HTML to readable text for ``web_fetch``, with the standard library's ``html.parser``.

A model reads a page better as plain text than as markup: headings become ``#`` lines, list
items ``-`` lines, links ``text (url)`` with absolute URLs, and ``pre`` blocks keep their layout.
Scripts, styles, navigation and other chrome are dropped; other whitespace is collapsed.
"""

from __future__ import annotations

from html.parser import HTMLParser
from urllib.parse import urljoin

_SKIP = frozenset({"script", "style", "nav", "noscript", "template", "svg", "iframe"})
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_BLOCKS = frozenset(
    {
        *("p", "div", "section", "article", "main", "header", "footer", "aside", "blockquote"),
        *("ul", "ol", "dl", "dt", "dd", "table", "figure", "figcaption", "form", "hr", "title"),
    }
)
_TIGHT = frozenset({"li", "tr", "br"})
"""Blocks joined to the previous one by a single newline instead of a blank line."""
_CELLS = frozenset({"td", "th"})


class _TextExtractor(HTMLParser):
    """Collects text blocks; each block is flushed when a block-level tag opens or closes."""

    def __init__(self, base_url: str) -> None:
        super().__init__(convert_charrefs=True)
        self._base = base_url
        self._blocks: list[tuple[str, bool]] = []
        self._parts: list[str] = []
        self._prefix = ""
        self._tight = False
        self._skip = 0
        self._pre = 0
        self._links: list[tuple[str | None, int]] = []
        """Open links: their target and where their text starts in ``_parts``."""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP or self._skip:
            self._skip += 1 if tag in _SKIP else 0
            return
        if tag in _BLOCKS or tag in _HEADINGS or tag in _TIGHT or tag == "pre":
            self._flush(tight=tag in _TIGHT)
        if tag in _HEADINGS:
            self._prefix = "#" * int(tag[1]) + " "
        elif tag == "title":
            self._prefix = "Title: "
        elif tag == "li":
            self._prefix = "- "
        elif tag == "pre":
            self._pre += 1
        elif tag == "a":
            self._links.append((self._href(dict(attrs).get("href")), len(self._parts)))

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self._skip = max(0, self._skip - 1)
        if self._skip or tag in _SKIP:
            return
        if tag == "a" and self._links:
            href, start = self._links.pop()
            if href and href != "".join(self._parts[start:]).strip():
                self._parts.append(f" ({href})")
        elif tag in _CELLS:
            self._parts.append(" ")
        elif tag in _BLOCKS or tag in _HEADINGS or tag in _TIGHT or tag == "pre":
            self._flush(tight=tag in _TIGHT)
            self._pre = max(0, self._pre - (tag == "pre"))

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self._parts.append(data)

    def text(self) -> str:
        """All blocks, separated by blank lines (single newlines for list items and rows)."""
        self._flush(tight=False)
        out: list[str] = []
        for block, tight in self._blocks:
            if out:
                out.append("\n" if tight else "\n\n")
            out.append(block)
        return "".join(out) + "\n" if out else ""

    def _href(self, raw: str | None) -> str | None:
        """An absolute URL for a link target; None for in-page and script targets."""
        if not raw or raw.startswith("#") or raw.lower().startswith("javascript:"):
            return None
        return urljoin(self._base, raw.strip())

    def _flush(self, *, tight: bool) -> None:
        raw = "".join(self._parts)
        text = raw.strip("\n").rstrip() if self._pre else " ".join(raw.split())
        if text:
            self._blocks.append((self._prefix + text, self._tight))
        # a flush with nothing in it keeps a pending blank line (the first item of a list)
        self._tight = tight if text else self._tight and tight
        self._parts, self._prefix = [], ""


def html_to_text(html: str, base_url: str) -> str:
    """Readable text of an HTML document; relative links resolve against ``base_url``."""
    parser = _TextExtractor(base_url)
    parser.feed(html)
    parser.close()
    return parser.text()
