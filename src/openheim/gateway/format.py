"""A reply as each platform shows it: line endings and blank lines normalised, Markdown kept
(Discord), converted to the platform's dialect (WhatsApp) or stripped (Telegram, sent as
plain text), mass mentions and user mentions made inert, then split at the platform's limit.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from openheim.gateway.split import split_text

LIMITS = {"telegram": 4096, "discord": 2000, "whatsapp": 4096}
"""Characters per message on each platform."""

ZWSP = "\u200b"
_BLANKS = re.compile(r"\n[ \t]*\n(?:[ \t]*\n)+")
_FENCE_LINE = re.compile(r"^(```|~~~)[^\n]*$", re.MULTILINE)
_MASS = re.compile(r"@(everyone|here)\b", re.IGNORECASE)
_USER_MENTION = re.compile(r"<@[!&]?(\d+)>")
_ROLE_OR_CHANNEL = re.compile(r"<#(\d+)>")
_LINK = re.compile(r"\[([^\]\n]+)\]\((https?://[^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.MULTILINE)
_BOLD = re.compile(r"(\*\*|__)(?=\S)((?:(?!\1).)+?)(?<=\S)\1")  # content: up to the next mark
_ITALIC = re.compile(r"(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])")
_STRIKE = re.compile(r"~~(?=\S)((?:(?!~~).)+?)(?<=\S)~~")
_CODE = re.compile(r"`([^`\n]+)`")


def normalise(text: str) -> str:
    """CRLF and CR to LF, trailing spaces off, runs of blank lines collapsed to one."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    return _BLANKS.sub("\n\n", text).strip()


def sanitise_mentions(text: str) -> str:
    """``@everyone``/``@here`` broken by a zero-width space; ``<@id>``, ``<@!id>``, ``<@&id>``
    and ``<#id>`` shown as plain text that pings no one."""
    text = _MASS.sub(lambda m: f"@{ZWSP}{m.group(1)}", text)
    text = _USER_MENTION.sub(lambda m: f"@{ZWSP}{m.group(1)}", text)
    return _ROLE_OR_CHANNEL.sub(lambda m: f"#{ZWSP}{m.group(1)}", text)


Block = tuple[int, int, int, int]
"""A fenced code block in a text: its start and end, and its content's start and end (the
content keeps its last newline; the end is that of the closing fence line, before its newline)."""


def fenced_blocks(text: str) -> list[Block]:
    """The fenced code blocks of ``text``: a ```` ``` ```` or ``~~~`` line up to the next line
    that is the same mark alone; an opening line never closed is plain text. One pass over the
    fence lines (a reply of thousands of unclosed fences costs no more than its length)."""
    lines = [(m.start(), m.end(), m.group(1), m.group(0)) for m in _FENCE_LINE.finditer(text)]
    closer: dict[str, int | None] = {"```": None, "~~~": None}
    next_close: list[int | None] = [None] * len(lines)
    for index in range(len(lines) - 1, -1, -1):  # the nearest closing line after each line
        next_close[index] = closer[lines[index][2]]
        if lines[index][3].rstrip(" \t") == lines[index][2]:
            closer[lines[index][2]] = index
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        close = next_close[index]
        if close is None:
            index += 1
            continue
        start, head_end = lines[index][0], lines[index][1]
        blocks.append((start, lines[close][1], head_end + 1, lines[close][0]))
        index = close + 1
    return blocks


def _sub_blocks(text: str, block: Callable[[str], str], outside: Callable[[str], str]) -> str:
    """``text`` with each fenced block's content passed to ``block`` and the text between the
    blocks to ``outside``."""
    out: list[str] = []
    last = 0
    for start, end, inner_start, inner_end in fenced_blocks(text):
        out += [outside(text[last:start]), block(text[inner_start:inner_end])]
        last = end
    return "".join([*out, outside(text[last:])])


Rules = tuple[tuple[re.Pattern[str], str], ...]
_PLAIN: Rules = (
    (_HEADING, r"\1"),
    (_LINK, r"\1 (\2)"),
    (_BOLD, r"\2"),
    (_STRIKE, r"\1"),
    (_ITALIC, r"\1"),
    (_CODE, r"\1"),
)
_WHATSAPP: Rules = (  # italic before bold and headings, which become *...*
    (_LINK, r"\1 (\2)"),
    (_ITALIC, r"_\1_"),
    (_BOLD, r"*\2*"),
    (_HEADING, r"*\1*"),
    (_STRIKE, r"~\1~"),
)


def _rewrite(rules: Rules) -> Callable[[str], str]:
    """A function applying ``rules`` (pattern, replacement) in order."""

    def rewrite(text: str) -> str:
        for pattern, replacement in rules:
            text = pattern.sub(replacement, text)
        return text

    return rewrite


def to_plain(text: str) -> str:
    """Markdown stripped: emphasis, headings and inline code marks off, links as ``text (url)``,
    fenced blocks without their fences (their content untouched)."""
    return _sub_blocks(text, lambda code: code.rstrip("\n"), _rewrite(_PLAIN))


def to_whatsapp(text: str) -> str:
    """Markdown in WhatsApp's dialect: ``*bold*``, ``_italic_``, ``~strike~``, headings bold,
    links as ``text (url)``; code blocks kept as ```` ``` ```` blocks (which WhatsApp shows)."""
    return _sub_blocks(text, lambda code: f"```\n{code}```", _rewrite(_WHATSAPP))


_DIALECTS: dict[str, Callable[[str], str]] = {
    "telegram": to_plain,
    "discord": lambda text: text,
    "whatsapp": to_whatsapp,
}


def render(platform: str, text: str) -> list[str]:
    """The messages that carry ``text`` on ``platform``, each within its limit."""
    body = sanitise_mentions(_DIALECTS[platform](normalise(text)))
    return split_text(body, LIMITS[platform]) if body else []
