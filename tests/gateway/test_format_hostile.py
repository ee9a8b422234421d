"""A hostile reply (a model steered by a prompt injection) cannot stall the gateway nor break a
platform's limit: formatting and splitting take time linear in the reply's length."""

from __future__ import annotations

import time

import pytest

from openheim.gateway.format import LIMITS, render, to_plain
from openheim.gateway.split import split_text

HOSTILE = [
    "```x\n" * 20_000,  # fences opened, none closed
    "**a " * 25_000,  # bold opened, never closed
    "__a " * 25_000,
    "~~a " * 25_000,
]


@pytest.mark.parametrize("platform", sorted(LIMITS))
@pytest.mark.parametrize("text", HOSTILE, ids=lambda t: repr(t[:4]))
def test_a_hostile_reply_is_rendered_in_linear_time(platform: str, text: str) -> None:
    started = time.monotonic()
    chunks = render(platform, text)
    assert time.monotonic() - started < 2.0  # was 20 s and more, the event loop blocked
    assert chunks and all(len(chunk) <= LIMITS[platform] for chunk in chunks)


def test_a_fence_line_longer_than_the_limit_is_not_reopened_whole() -> None:
    text = "```" + "a" * 3000 + "\nx\n```"
    chunks = split_text(text, 2000)
    assert all(len(chunk) <= 2000 for chunk in chunks)
    assert "".join(chunks).count("a") >= 3000  # nothing lost


def test_fenced_blocks_are_still_found_between_unclosed_ones() -> None:
    text = "```x\n**not bold**\n```\n**bold** ```y\n~~~\ncode\n~~~"
    assert to_plain(text) == "**not bold**\nbold ```y\ncode"
