"""Replies as each platform shows them: normalising, dialects, inert mentions, splitting."""

from __future__ import annotations

import pytest

from openheim.gateway.format import ZWSP, normalise, render, sanitise_mentions, to_plain
from openheim.gateway.split import split_text


def test_line_endings_and_blank_lines_are_normalised() -> None:
    assert normalise("a\r\nb\rc  \n\n\n\n  \n\nd\n") == "a\nb\nc\n\nd"


@pytest.mark.parametrize(
    ("raw", "inert"),
    [
        ("hi @everyone", f"hi @{ZWSP}everyone"),
        ("@HERE now", f"@{ZWSP}HERE now"),
        ("ask <@123> or <@!456>", f"ask @{ZWSP}123 or @{ZWSP}456"),
        ("role <@&789> in <#42>", f"role @{ZWSP}789 in #{ZWSP}42"),
    ],
)
def test_mentions_are_made_inert(raw: str, inert: str) -> None:
    assert sanitise_mentions(raw) == inert


def test_plain_text_strips_markdown_but_keeps_code() -> None:
    text = "# Title\n**bold** and *it* and ~~gone~~, `x`, [site](https://a.example/p)\n\n```py\n**kept**\n```"
    assert (
        to_plain(text) == "Title\nbold and it and gone, x, site (https://a.example/p)\n\n**kept**"
    )


def test_whatsapp_uses_its_own_emphasis() -> None:
    assert render("whatsapp", "# Head\n**b** *i* ~~s~~") == ["*Head*\n*b* _i_ ~s~"]


def test_discord_keeps_markdown() -> None:
    assert render("discord", "**b** `c`") == ["**b** `c`"]


def test_an_empty_reply_sends_nothing() -> None:
    assert render("telegram", " \r\n ") == []


def test_a_split_prefers_paragraphs_then_lines_then_spaces() -> None:
    text = "a" * 30 + "\n\n" + "b" * 30 + "\n" + "c" * 30 + " " + "d" * 30
    assert split_text(text, 70) == ["a" * 30, "b" * 30, "c" * 30 + " " + "d" * 30]
    assert split_text("b" * 30 + " " + "c" * 60, 70) == ["b" * 30, "c" * 60]


def test_a_word_longer_than_the_limit_is_cut_where_it_must() -> None:
    chunks = split_text("x" * 250, 100)
    assert "".join(chunks) == "x" * 250 and all(len(c) <= 100 for c in chunks)


def test_a_code_block_cut_in_two_is_closed_and_reopened() -> None:
    code = "\n".join(f"row {i}" for i in range(40))
    chunks = split_text(f"intro\n\n```sql\n{code}\n```\noutro", 120)
    assert all(len(c) <= 120 for c in chunks)
    assert all(c.count("```") % 2 == 0 for c in chunks)
    assert all(c.startswith("```sql\n") for c in chunks[1:-1])
    rows = [line for c in chunks for line in c.splitlines() if line.startswith("row ")]
    assert rows == code.splitlines()
