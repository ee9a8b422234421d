"""The fence splitter: blocks found wherever they are, whatever the chunking."""

from __future__ import annotations

import random

import pytest

from openheim.envelope.fence import Block, FenceSplitter, Segment, Text, split_text

BLOCK = '```openheim-agent\n{"actions": []}\n```'

TEXTS = [
    "plain answer",
    f"Let me look.\n{BLOCK}\nafter",
    "code: ```python\nprint(1)\n```\ndone ``",
    '````yips-agent\n{"actions": []}\n  ````\n',
    '```openheim-agent\n{"a": "``` not a close"}\n```',
    "```openheim-agent",
    "``",
    "```yips-tool",
    f"{BLOCK}{BLOCK}",
    '```openheim-agent\n{"actions": []}```',
    '```openheim-agent\n{"c": "# T\n```sh\nls\n```\n"}\n```\nafter',
    '```openheim-agent\n{"c": "say \\"hi\\"\n```\\\\"}\n```\n',
    '```openheim-agent\n{"c": "unbalanced}\n```\nafter ```yips-agent\n{}',
]


def chunked(text: str, sizes: list[int]) -> list[Segment]:
    splitter = FenceSplitter()
    out: list[Segment] = []
    pos = 0
    for size in sizes:
        out += splitter.feed(text[pos : pos + size])
        pos += size
    out += splitter.feed(text[pos:])
    return merged(out + splitter.close())


def merged(segments: list[Segment]) -> list[Segment]:
    out: list[Segment] = []
    for segment in segments:
        if isinstance(segment, Text) and out and isinstance(out[-1], Text):
            out[-1] = Text(out[-1].text + segment.text)
        else:
            out.append(segment)
    return out


@pytest.mark.parametrize("text", TEXTS)
def test_chunking_never_changes_the_result(text: str) -> None:
    whole = split_text(text)
    rng = random.Random(text)
    assert chunked(text, [1] * len(text)) == whole
    for _ in range(20):
        assert chunked(text, [rng.randint(0, 4) for _ in range(len(text))]) == whole


def test_text_around_a_block() -> None:
    segments = split_text(f"Let me look.\n{BLOCK}\nafter")
    assert segments == [
        Text("Let me look.\n"),
        Block("openheim-agent", '\n{"actions": []}', BLOCK, True),
        Text("\nafter"),
    ]


def test_other_fences_and_stray_backticks_are_text() -> None:
    text = "code: ```python\nprint(1)\n```\ndone ``"
    assert split_text(text) == [Text(text)]
    assert split_text("```yips-agentish\n{}\n```") == [Text("```yips-agentish\n{}\n```")]


def test_backticks_inside_json_strings_do_not_close_the_block() -> None:
    (block,) = split_text('```openheim-agent\n{"a": "``` x"}\n```')
    assert isinstance(block, Block)
    assert block.body == '\n{"a": "``` x"}'
    assert block.closed


def test_longer_fences_tags_in_any_case_and_indented_close() -> None:
    segments = split_text('````Yips-Agent\n{"actions": []}\n  ````\nnext')
    assert segments == [
        Block("yips-agent", '\n{"actions": []}', '````Yips-Agent\n{"actions": []}\n  ````', True),
        Text("\nnext"),
    ]


def test_a_block_without_closing_fence_runs_to_the_end() -> None:
    (block,) = split_text('```yips-tools\n{"tool_calls": []}')
    assert block == Block(
        "yips-tools", '\n{"tool_calls": []}', '```yips-tools\n{"tool_calls": []}', False
    )


def test_held_backticks_are_released_once_settled() -> None:
    splitter = FenceSplitter()
    assert splitter.feed("Use ``") == [Text("Use ")]
    assert splitter.feed("`") == []
    assert splitter.feed("open") == []
    assert splitter.feed("api now") == [Text("```openapi now")]
    assert splitter.feed(" ```openheim-agent") == [Text(" ")]
    assert splitter.close() == [Block("openheim-agent", "", "```openheim-agent", False)]


def test_fences_inside_json_strings_with_raw_newlines_do_not_close() -> None:
    body = '\n{"c": "# T\n```sh\nls\n```\n", "d": "\\"\n```"}'
    segments = split_text(f"```openheim-agent{body}\n```\nafter")
    assert segments == [
        Block("openheim-agent", body, f"```openheim-agent{body}\n```", True),
        Text("\nafter"),
    ]


def test_an_unbalanced_quote_falls_back_to_the_first_fence_line() -> None:
    splitter = FenceSplitter()
    assert splitter.feed('```openheim-agent\n{"c": "x}\n```\nafter') == []
    assert splitter.close() == [
        Block("openheim-agent", '\n{"c": "x}', '```openheim-agent\n{"c": "x}\n```', True),
        Text("\nafter"),
    ]
