"""The bridge from MCP tools to openheim ``Tool``s: names, schemas, capabilities and results.

Results: text parts joined, images passed on as image blocks (with a short line naming each in the
text), audio as a placeholder, structured content as JSON, resource links and embedded resources
as text. ``isError`` becomes ``ToolOutput(is_error=True)``.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any

import mcp_types

from openheim.mcp.names import tool_name, unique_names
from openheim.mcp.schema import cap_schema
from openheim.messages import ImageBlock
from openheim.tools.base import Capabilities, Tool, ToolContext, ToolKind, ToolOutput, cap_output

if TYPE_CHECKING:
    from openheim.mcp.client import ServerConnection

MAX_DESCRIPTION = 2000


class McpTool(Tool):
    """One tool of one MCP server, called through its connection."""

    args_model = dict

    def __init__(self, name: str, conn: ServerConnection, tool: mcp_types.Tool) -> None:
        self.name = name
        self.remote_name = tool.name
        self.server = conn.name
        self.description = (tool.description or tool.title or tool.name)[:MAX_DESCRIPTION]
        self.capabilities = capabilities(tool.annotations)
        self._conn = conn
        self._schema = tool.input_schema

    @cached_property
    def parameters(self) -> dict[str, Any]:
        return cap_schema(self._schema)

    def parse(self, arguments: Mapping[str, Any]) -> Any:
        """Arguments go to the server as given: it validates them against its own schema."""
        return dict(arguments)

    async def call(self, args: Any, ctx: ToolContext) -> ToolOutput:
        result = await self._conn.call(self.remote_name, dict(args))
        return render_result(result)


def capabilities(annotations: mcp_types.ToolAnnotations | None) -> Capabilities:
    """Read-only only when the server says ``readOnlyHint: true``; kind from the other hints."""
    if annotations is None:
        return Capabilities(read_only=False)
    if annotations.read_only_hint:
        kind = ToolKind.FETCH if annotations.open_world_hint else ToolKind.READ
        return Capabilities(read_only=True, kind=kind)
    if annotations.destructive_hint:
        return Capabilities(read_only=False, kind=ToolKind.DELETE)
    return Capabilities(read_only=False)


def build_tools(connections: Iterable[ServerConnection]) -> list[Tool]:
    """Tools of every connected server, named ``{server}__{tool}`` with collisions resolved."""
    pairs = [(c, t) for c in connections if c.client is not None for t in c.tools]
    names = unique_names(tool_name(c.name, t.name) for c, t in pairs)
    return [McpTool(n, c, t) for n, (c, t) in zip(names, pairs, strict=True)]


def render_result(result: mcp_types.CallToolResult) -> ToolOutput:
    """The model-facing text of a tool result (see the module docstring)."""
    parts = [render_block(b) for b in result.content]
    if result.structured_content is not None and not any(
        isinstance(b, mcp_types.TextContent) for b in result.content
    ):
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, default=str))
    text = "\n".join(p for p in parts if p) or (
        "(error with no message)" if result.is_error else "(no output)"
    )
    images = tuple(
        ImageBlock(b.data, b.mime_type)
        for b in result.content
        if isinstance(b, mcp_types.ImageContent)
    )
    return ToolOutput(cap_output(text), is_error=result.is_error, images=images)


def render_block(block: mcp_types.ContentBlock) -> str:
    """One content block as text."""
    if isinstance(block, mcp_types.TextContent):
        return block.text
    if isinstance(block, mcp_types.ImageContent | mcp_types.AudioContent):
        return f"[{block.type}: {block.mime_type}, {_decoded_size(block.data)} bytes]"
    if isinstance(block, mcp_types.ResourceLink):
        return f"[resource: {block.uri}{_detail(block.name, block.description)}]"
    if isinstance(block, mcp_types.EmbeddedResource):
        res = block.resource
        if isinstance(res, mcp_types.TextResourceContents):
            return f"[resource: {res.uri}]\n{res.text}"
        return (
            f"[resource: {res.uri}, {res.mime_type or 'binary'}, {_decoded_size(res.blob)} bytes]"
        )
    return f"[unsupported content: {type(block).__name__}]"  # type: ignore[unreachable]


def _detail(name: str, description: str | None) -> str:
    return f" ({name}: {description})" if description else f" ({name})"


def _decoded_size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=True))
    except (binascii.Error, ValueError):
        return len(data)
