"""Agent Client Protocol → openheim: a ``session/prompt``'s content blocks as one user message.

Text and images map one to one. Context the client attaches becomes text the model can use: a
resource link is a hint naming the file (the model reads it with its tools when it needs it),
an embedded text resource is its text inside a ``<context uri="…">`` tag. What no provider
takes (audio, binary resources) and an empty prompt are refused with ``invalid_params`` saying
what to send instead, rather than silently dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias
from urllib.parse import unquote, urlsplit

from acp import RequestError
from acp.schema import (
    AudioContentBlock,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

from openheim.messages import ContentBlock, ImageBlock, Message, TextBlock

PromptBlock: TypeAlias = (
    TextContentBlock
    | ImageContentBlock
    | AudioContentBlock
    | ResourceContentBlock
    | EmbeddedResourceContentBlock
)
"""A content block of a ``session/prompt`` request."""


def _refuse(reason: str) -> RequestError:
    return RequestError.invalid_params({"reason": reason})


def _uri_shown(uri: str) -> str:
    """A local ``file://`` URI as its path; any other URI as it is."""
    parts = urlsplit(uri)
    if parts.scheme == "file" and parts.netloc in ("", "localhost"):
        return unquote(parts.path)
    return uri


def _link_hint(link: ResourceContentBlock) -> str:
    """The text standing for a resource link: what it is and where the model can find it."""
    if urlsplit(link.uri).scheme == "file":
        shown = _uri_shown(link.uri)
        return f"[Referenced file: {link.name} ({shown})] — read it with the file tools if needed"
    return f"[Referenced resource: {link.name} ({link.uri})]"


def _embedded(block: EmbeddedResourceContentBlock) -> TextBlock:
    """An embedded text resource as a ``<context>`` tag; a binary one is refused."""
    resource = block.resource
    if not isinstance(resource, TextResourceContents):
        raise _refuse(
            f"embedded binary resource {resource.uri} is not supported: send text resources, "
            "images as image blocks, or a resource_link to the file"
        )
    uri = resource.uri.replace('"', "%22")
    return TextBlock(f'<context uri="{uri}">\n{resource.text}\n</context>')


def _image(block: ImageContentBlock) -> ImageBlock:
    """An image with its data; one given only by URI is refused (nothing fetches it)."""
    if not block.data:
        raise _refuse("an image without data (only a uri) is not supported: send its base64 data")
    return ImageBlock(block.data, block.mime_type)


def _block(block: PromptBlock) -> ContentBlock:
    if isinstance(block, TextContentBlock):
        return TextBlock(block.text)
    if isinstance(block, ImageContentBlock):
        return _image(block)
    if isinstance(block, ResourceContentBlock):
        return TextBlock(_link_hint(block))
    if isinstance(block, EmbeddedResourceContentBlock):
        return _embedded(block)
    raise _refuse("audio content is not supported: send text (a transcript) instead")


def _blank(block: ContentBlock) -> bool:
    return isinstance(block, TextBlock) and not block.text.strip()


def prompt_message(blocks: Sequence[PromptBlock]) -> Message:
    """The user message of a prompt (raises ``RequestError`` invalid params for content that
    cannot be sent to a model, and for a prompt with nothing but blank text)."""
    content = tuple(_block(block) for block in blocks)
    if all(_blank(block) for block in content):
        raise _refuse("the prompt is empty: send at least one text, image or resource block")
    return Message("user", content)
