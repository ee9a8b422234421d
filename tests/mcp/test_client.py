"""The MCP client against the test server over stdio and streamable HTTP."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from openheim.config.schema import McpServerEntry
from openheim.errors import ConfigError, ProviderError, ToolError
from openheim.mcp import McpManager
from openheim.mcp.client import ServerConnection
from openheim.redaction.secrets import redact
from openheim.tools.base import Tool, ToolKind

from .conftest import stdio_entry, tagged_pids


def by_name(manager: McpManager) -> dict[str, Tool]:
    return {t.name: t for t in manager.tools()}


async def call(tool: Tool, **args: Any) -> Any:
    return await tool.call(tool.parse(args), None)  # type: ignore[arg-type]


async def test_stdio_lists_and_calls(tag: str) -> None:
    async with McpManager({"t": stdio_entry(tag)}) as mcp:
        tools = by_name(mcp)
        assert {"t__echo", "t__image", "t__fail", "t__dotted_name_with_spaces"} <= set(tools)
        assert tools["t__echo"].parameters["properties"]["text"]["type"] == "string"
        assert (await call(tools["t__echo"], text="hi")).content == "hi"
        image = await call(tools["t__image"])
        assert image.content == "[image: image/png, 67 bytes]" and not image.is_error
        assert len(image.images) == 1 and image.images[0].mime_type == "image/png"
        assert base64.b64decode(image.images[0].data).startswith(b"\x89PNG")
        failed = await call(tools["t__fail"], reason="x")
        assert failed.is_error
        weather = await call(tools["t__weather"], city="Oslo")
        assert '"celsius": 21' in weather.content
        [status] = mcp.status()
        assert (status.name, status.transport, status.connected, status.error) == (
            "t",
            "stdio",
            True,
            None,
        )
        assert status.tools == len(tools)


async def test_capabilities_from_annotations(tag: str) -> None:
    async with McpManager({"t": stdio_entry(tag)}) as mcp:
        tools = by_name(mcp)
        assert tools["t__echo"].capabilities.read_only
        assert tools["t__echo"].capabilities.kind is ToolKind.READ
        assert not tools["t__slow"].capabilities.read_only
        assert tools["t__slow"].capabilities.kind is ToolKind.OTHER


async def test_http_transport_with_headers_on_loopback(http_url: str) -> None:
    entry = McpServerEntry(url=http_url, headers={"Authorization": "Bearer s3cret-header-v"})
    async with McpManager({"web": entry}) as mcp:
        tools = by_name(mcp)
        assert (await call(tools["web__echo"], text="over http")).content == "over http"
        assert (await call(tools["web__image"])).content.startswith("[image: image/png")
        assert mcp.status()[0].transport == "http" and mcp.status()[0].connected
    assert "s3cret" not in redact("header: Bearer s3cret-header-v")


def test_headers_refused_over_plain_http() -> None:
    entry = McpServerEntry(url="http://example.com/mcp", headers={"X-Key": "v"})
    with pytest.raises(ConfigError, match="'remote'"):
        McpManager({"remote": entry})
    McpManager({"ok": McpServerEntry(url="https://example.com/mcp", headers={"X-Key": "v"})})


def test_entry_needs_command_or_url() -> None:
    with pytest.raises(ConfigError, match="'both'"):
        McpManager({"both": McpServerEntry(command="x", url="https://example.com")})


async def test_call_timeout_cancels_and_server_stays_usable(tag: str) -> None:
    async with McpManager({"t": stdio_entry(tag, call_timeout=0.5)}) as mcp:
        tools = by_name(mcp)
        with pytest.raises(ToolError, match=r"did not answer within 0\.5 s"):
            await call(tools["t__slow"], seconds=30)
        assert (await call(tools["t__echo"], text="still here")).content == "still here"
        with anyio.fail_after(10):  # the cancel notification reaches the server's tool
            while (await call(tools["t__cancellations"])).content != "1":
                await anyio.sleep(0.05)


async def test_crash_mid_call_then_restart(tag: str) -> None:
    async with McpManager({"t": stdio_entry(tag)}) as mcp:
        tools = by_name(mcp)
        first = int((await call(tools["t__pid"])).content)
        with pytest.raises(ToolError, match="restarted on the next call"):
            await call(tools["t__crash"])
        assert not mcp.status()[0].connected
        second = int((await call(tools["t__pid"])).content)
        assert second != first
        assert mcp.status()[0].connected


async def test_hanging_server_times_out_others_fine(tag: str) -> None:
    servers = {"slow": stdio_entry(tag, "hang", startup_timeout=1.0), "t": stdio_entry(tag)}
    with anyio.fail_after(20):
        async with McpManager(servers) as mcp:
            hang, ok = mcp.status()
            assert not hang.connected and "did not start within 1 s" in (hang.error or "")
            assert ok.connected and ok.tools > 0
            assert all(t.name.startswith("t__") for t in mcp.tools())


async def test_missing_command_is_reported(tag: str) -> None:
    servers = {"gone": McpServerEntry(command=f"/nonexistent/{tag}"), "t": stdio_entry(tag)}
    async with McpManager(servers) as mcp:
        gone, ok = mcp.status()
        assert not gone.connected and "FileNotFoundError" in (gone.error or "")
        assert ok.connected


async def test_malformed_output_lines_are_survived(tag: str) -> None:
    async with McpManager({"g": stdio_entry(tag, "garbage")}) as mcp:
        assert (await call(by_name(mcp)["g__echo"], text="ok")).content == "ok"


async def test_group_killed_on_exit(tag: str) -> None:
    async with McpManager({"t": stdio_entry(tag)}) as mcp:
        grandchild = int((await call(by_name(mcp)["t__spawn_child"], tag=tag)).content)
        assert grandchild in tagged_pids(tag)
    assert tagged_pids(tag) == []


async def test_group_killed_on_cancel(tag: str) -> None:
    with anyio.move_on_after(30) as scope:
        async with McpManager({"t": stdio_entry(tag)}) as mcp:
            await call(by_name(mcp)["t__spawn_child"], tag=tag)
            assert len(tagged_pids(tag)) == 2
            scope.cancel()
            await anyio.sleep_forever()
    assert scope.cancelled_caught
    assert tagged_pids(tag) == []


async def test_declared_env_reaches_server_and_is_secret(tag: str) -> None:
    entry = stdio_entry(tag, env={"OH_TEST_DECLARED": "declared-value-123"})
    async with McpManager({"t": entry}) as mcp:
        conn: ServerConnection = mcp.connections["t"]
        pid = conn.child.pid
        assert pid is not None
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        assert b"OH_TEST_DECLARED=declared-value-123" in environ
    assert redact("declared-value-123") == "[REDACTED]"
    assert os.getpgid(0) != pid  # the server had its own process group


@pytest.mark.parametrize(
    "error",
    [
        ProviderError("the model is unreachable"),
        ToolError("a tool failed"),
        ValueError("a bug"),
    ],
)
async def test_an_error_of_the_body_leaves_the_manager_as_itself(
    tag: str, error: Exception
) -> None:
    """The error raised inside ``async with McpManager`` comes out unwrapped (no
    ExceptionGroup), so the surfaces print their one-line message."""
    with pytest.raises(type(error)) as caught:
        async with McpManager({"t": stdio_entry(tag)}):
            raise error
    assert caught.value is error
    assert tagged_pids(tag) == []
