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
_FENCE = re.compile(r"^(```|~~~)[^\n]*\n(.*?)^\1[ \t]*$", re.DOTALL | re.MULTILINE)
_MASS = re.compile(r"@(everyone|here)\b", re.IGNORECASE)
_USER_MENTION = re.compile(r"<@[!&]?(\d+)>")
_ROLE_OR_CHANNEL = re.compile(r"<#(\d+)>")
_LINK = re.compile(r"\[([^\]\n]+)\]\((https?://[^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.MULTILINE)
_BOLD = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_ITALIC = re.compile(r"(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
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


def _outside_code(text: str, convert: Callable[[str], str]) -> str:
    """``convert`` applied to the text between fenced code blocks, the blocks kept."""
    out: list[str] = []
    last = 0
    for block in _FENCE.finditer(text):
        out += [convert(text[last : block.start()]), block.group(0)]
        last = block.end()
    return "".join([*out, convert(text[last:])])


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
    converted = _outside_code(text, _rewrite(_PLAIN))
    return _FENCE.sub(lambda m: m.group(2).rstrip("\n"), converted)


def to_whatsapp(text: str) -> str:
    """Markdown in WhatsApp's dialect: ``*bold*``, ``_italic_``, ``~strike~``, headings bold,
    links as ``text (url)``; code blocks kept as ```` ``` ```` blocks (which WhatsApp shows)."""
    return _FENCE.sub(lambda m: f"```\n{m.group(2)}```", _outside_code(text, _rewrite(_WHATSAPP)))


_DIALECTS: dict[str, Callable[[str], str]] = {
    "telegram": to_plain,
    "discord": lambda text: text,
    "whatsapp": to_whatsapp,
}


def render(platform: str, text: str) -> list[str]:
    """The messages that carry ``text`` on ``platform``, each within its limit."""
    body = sanitise_mentions(_DIALECTS[platform](normalise(text)))
    return split_text(body, LIMITS[platform]) if body else []
