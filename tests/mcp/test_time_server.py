"""A real third-party MCP server (``mcp-server-time``) driven by the agent loop."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from openheim.config.schema import McpServerEntry
from openheim.events import ToolResult
from openheim.loop import Agent
from openheim.mcp import McpManager
from openheim.messages import Message, TextBlock, ToolResultBlock
from openheim.testing import Reply, ScriptedProvider, tool_call
from openheim.tools.base import ToolContext, ToolSet

from ..helpers import collect


async def test_agent_calls_time_server(ctx: ToolContext) -> None:
    entry = McpServerEntry(
        command=sys.executable, args=["-m", "mcp_server_time", "--local-timezone", "UTC"]
    )
    call = tool_call("time__get_current_time", {"timezone": "Asia/Tokyo"})
    provider = ScriptedProvider([Reply(tool_calls=[call]), "It is late in Tokyo."])
    async with McpManager({"time": entry}) as mcp:
        pid = mcp.connections["time"].child.pid
        agent = Agent(provider, "test-model", tools=ToolSet(mcp.tools()), context=ctx)
        history = [Message("user", (TextBlock("What time is it in Tokyo?"),))]
        events = await collect(agent.run(history))
    assert pid is not None
    [result] = [e for e in events if isinstance(e, ToolResult)]
    assert not result.is_error
    assert json.loads(result.content)["timezone"] == "Asia/Tokyo"
    second = provider.requests[1]
    assert "time__get_current_time" in [s.name for s in second.tools]
    answer = second.messages[-1].content[0]
    assert isinstance(answer, ToolResultBlock) and answer.content == result.content
    provider.assert_done()
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)  # the server's whole process group is gone
    assert not Path(f"/proc/{pid}").exists()
