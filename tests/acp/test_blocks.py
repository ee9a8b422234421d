"""ACP prompt blocks → one openheim user message, and what is refused."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from acp import RequestError
from acp.helpers import (
    audio_block,
    embedded_blob_resource,
    embedded_text_resource,
    image_block,
    resource_block,
    resource_link_block,
    text_block,
)

from openheim.acp.blocks import PromptBlock, prompt_message
from openheim.messages import ImageBlock, Message, TextBlock


def refusal(blocks: Sequence[PromptBlock]) -> str:
    """The reason ``prompt_message`` gives for refusing ``blocks`` as invalid params."""
    with pytest.raises(RequestError) as caught:
        prompt_message(blocks)
    assert caught.value.code == -32602
    assert isinstance(caught.value.data, dict)
    reason = caught.value.data["reason"]
    assert isinstance(reason, str)
    return reason


def test_text_and_image() -> None:
    message = prompt_message([text_block("what is this?"), image_block("aGk=", "image/png")])
    assert message == Message("user", (TextBlock("what is this?"), ImageBlock("aGk=", "image/png")))


def test_file_resource_link_is_a_hint_with_the_path() -> None:
    link = resource_link_block("a b.py", "file:///home/u/proj/a%20b.py")
    assert prompt_message([text_block("fix"), link]).content[1] == TextBlock(
        "[Referenced file: a b.py (/home/u/proj/a b.py)] — read it with the file tools if needed"
    )


def test_other_resource_link_keeps_its_uri() -> None:
    link = resource_link_block("spec", "https://example.com/spec")
    assert prompt_message([link]).content == (
        TextBlock("[Referenced resource: spec (https://example.com/spec)]"),
    )


def test_embedded_text_resource_is_wrapped_in_context() -> None:
    block = resource_block(embedded_text_resource("file:///p/x.py", "print(1)"))
    assert prompt_message([block]).content == (
        TextBlock('<context uri="file:///p/x.py">\nprint(1)\n</context>'),
    )


def test_embedded_resource_uri_cannot_break_the_tag() -> None:
    block = resource_block(embedded_text_resource('file:///p/a"b', "x"))
    assert prompt_message([block]).content == (
        TextBlock('<context uri="file:///p/a%22b">\nx\n</context>'),
    )


def test_image_without_data_is_refused() -> None:
    reason = refusal([image_block("", "image/png", uri="https://example.com/a.png")])
    assert "uri" in reason and "base64" in reason


def test_embedded_blob_is_refused() -> None:
    blob = resource_block(embedded_blob_resource("file:///p/a.bin", "AAAA"))
    reason = refusal([text_block("see"), blob])
    assert "file:///p/a.bin" in reason and "resource_link" in reason


def test_audio_is_refused() -> None:
    assert "audio" in refusal([audio_block("AAAA", "audio/wav")])


@pytest.mark.parametrize("blocks", [[], [text_block("")], [text_block("  \n"), text_block("\t")]])
def test_empty_prompt_is_refused(blocks: list[PromptBlock]) -> None:
    assert "empty" in refusal(blocks)


def test_blank_text_beside_an_image_is_kept() -> None:
    message = prompt_message([text_block(" "), image_block("aGk=", "image/png")])
    assert message.content == (TextBlock(" "), ImageBlock("aGk=", "image/png"))
