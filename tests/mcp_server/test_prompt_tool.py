"""The ``openheim`` tool end to end: a real ``openheim mcp serve`` subprocess driven by the MCP
SDK's client, its model the ``FakeLLMServer``."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from mcp.client.stdio import StdioServerParameters
from mcp_types import CallToolResult, TextContent

from mcp import Client
from openheim.store import open_store
from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from tests.mcp_server.conftest import ServeClient


def text_of(result: CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


def stored_sessions(home: Path) -> list[str]:
    store = open_store(home)
    try:
        return [record.id for record in store.list()]
    finally:
        store.close()


async def test_tools_are_listed_with_their_schemas(serve: ServeClient) -> None:
    async with serve() as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert {"openheim", "validate_json", "json_example", "submit"} <= set(tools)
    schema = tools["openheim"].input_schema
    assert schema["required"] == ["prompt"]
    assert {"prompt", "session_id", "agent", "model", "cwd"} == set(schema["properties"])
    assert tools["submit"].input_schema["required"] == ["data"]  # schema: the configured one
    assert set(tools["json_example"].input_schema["properties"]) == {"schema"}


async def test_a_prompt_returns_text_stop_reason_session_and_progress(
    serve: ServeClient, fake: FakeLLMServer, home: Path
) -> None:
    fake.add(FakeReply(text="the answer is 42"))
    seen: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))

    async with serve() as client:
        result = await client.call_tool(
            "openheim", {"prompt": "what?"}, progress_callback=on_progress
        )
    assert not result.is_error, text_of(result)
    assert text_of(result).startswith("the answer is 42")
    [sid] = stored_sessions(home)
    usage = {
        "input_tokens": 10,
        "output_tokens": 5,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
    }
    assert result.structured_content == {
        "text": "the answer is 42",
        "stop_reason": "end_turn",
        "session_id": sid,
        "usage": usage,
        "cost_usd": None,  # the fake model has no price
    }
    first: tuple[float, str | None] = (1.0, "model call 1")
    assert seen[:1] == [first]
    assert fake.requests[0].body["messages"][-1]["content"] == "what?"


async def test_session_id_continues_a_stored_session(
    serve: ServeClient, fake: FakeLLMServer
) -> None:
    fake.add(FakeReply(text="first answer"), FakeReply(text="second answer"))
    async with serve() as client:
        first = await client.call_tool("openheim", {"prompt": "one"})
        assert first.structured_content is not None
        sid = first.structured_content["session_id"]
        second = await client.call_tool("openheim", {"prompt": "two", "session_id": sid})
    assert second.structured_content is not None
    assert second.structured_content["text"] == "second answer"
    assert second.structured_content["session_id"] == sid
    contents = [m.get("content") for m in fake.requests[1].body["messages"]]
    assert contents[-3:] == ["one", "first answer", "two"]


async def test_cwd_outside_the_work_dir_is_refused(
    serve: ServeClient, fake: FakeLLMServer, tmp_path: Path
) -> None:
    async with serve() as client:
        outside = await client.call_tool("openheim", {"prompt": "hi", "cwd": str(tmp_path)})
        escape = await client.call_tool("openheim", {"prompt": "hi", "cwd": "../"})
    for result in (outside, escape):
        assert result.is_error
        assert "is not a folder inside" in text_of(result)
    assert fake.requests == []


async def test_a_cwd_inside_the_work_dir_is_the_session_folder(
    serve: ServeClient, fake: FakeLLMServer, home: Path, work: Path
) -> None:
    fake.add(FakeReply(text="ok"))
    async with serve() as client:
        result = await client.call_tool("openheim", {"prompt": "hi", "cwd": "sub"})
    assert not result.is_error, text_of(result)
    store = open_store(home)
    try:
        [record] = store.list()
    finally:
        store.close()
    assert Path(record.cwd) == (work / "sub").resolve()


async def test_errors_are_is_error_results(serve: ServeClient, fake: FakeLLMServer) -> None:
    async with serve() as client:
        unknown = await client.call_tool("openheim", {"prompt": "hi", "session_id": "nope"})
        empty = await client.call_tool("openheim", {"prompt": "  "})
        no_agent = await client.call_tool("openheim", {"prompt": "hi", "agent": "ghost"})
    assert unknown.is_error and "nope" in text_of(unknown)
    assert empty.is_error and "prompt is empty" in text_of(empty)
    assert no_agent.is_error and "ghost" in text_of(no_agent)
    assert fake.requests == []


async def test_cancelling_the_call_cancels_the_run(
    serve: ServeClient, fake: FakeLLMServer, home: Path
) -> None:
    fake.add(FakeReply(text="a long answer that never ends", hang_at=2), FakeReply(text="again"))
    async with serve() as client:
        call = asyncio.create_task(client.call_tool("openheim", {"prompt": "slow"}))
        await asyncio.to_thread(fake.wait_for_requests, 1, 30)
        call.cancel()
        [sid] = stored_sessions(home)
        # waits for the cancelled run to end: were it still running, this would never return
        again = await asyncio.wait_for(
            client.call_tool("openheim", {"prompt": "more", "session_id": sid}), 30
        )
    assert again.structured_content is not None
    assert again.structured_content["text"] == "again"
    contents = [m.get("content") for m in fake.requests[1].body["messages"]]
    assert contents[-1] == "more" and "slow" in contents


async def test_a_call_the_policy_asks_about_is_refused_headless(
    serve: ServeClient, fake: FakeLLMServer, work: Path
) -> None:
    write = FakeToolCall("write_file", {"path": "a.txt", "content": "hello\n"})
    fake.add(FakeReply(tool_calls=[write]), FakeReply(text="could not write"))
    seen: list[str | None] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(message)

    async with serve() as client:
        result = await client.call_tool(
            "openheim", {"prompt": "write a.txt"}, progress_callback=on_progress
        )
    assert text_of(result).startswith("could not write")
    assert not (work / "a.txt").exists()
    told = [m["content"] for m in fake.requests[1].messages if m.get("role") == "tool"]
    assert "no one to ask" in told[0] and "openheim permissions add" in told[0]
    assert seen == ["model call 1", "tool write_file", "model call 2"]


async def test_auto_approval_lets_the_call_run(
    serve: ServeClient, fake: FakeLLMServer, work: Path
) -> None:
    write = FakeToolCall("write_file", {"path": "a.txt", "content": "hello\n"})
    fake.add(FakeReply(tool_calls=[write]), FakeReply(text="written"))
    async with serve("--approve", "auto") as client:
        result = await client.call_tool("openheim", {"prompt": "write a.txt"})
    assert text_of(result).startswith("written")
    assert (work / "a.txt").read_text() == "hello\n"


async def test_a_provider_error_with_an_mcp_server_says_what_failed(
    serve: ServeClient, home: Path
) -> None:
    """With an MCP server of its own configured, a failing provider is still reported by its
    message, not as a bare "Error executing tool"."""
    server = Path(__file__).parents[1] / "mcp" / "servers" / "test_server.py"
    (home / "config.toml").write_text(
        'default_provider = "down"\n[providers.down]\napi_base = "http://127.0.0.1:9/v1"\n'
        'default_model = "m"\nmax_retries = 0\n'
        f"[mcp_servers.demo]\ncommand = {json.dumps(sys.executable)}\n"
        f"args = {json.dumps([str(server), 'stdio', 'serve-test'])}\n"
    )
    async with serve() as client:
        result = await client.call_tool("openheim", {"prompt": "hi"})
    assert result.is_error
    assert text_of(result).startswith("openheim: provider 'down': cannot connect"), text_of(result)


async def test_an_inherited_anthropic_key_goes_to_the_inherited_base_url(
    tmp_path: Path, work: Path
) -> None:
    """Started by Claude Code with no provider of its own: the ``ANTHROPIC_API_KEY`` it hands
    down goes where its ``ANTHROPIC_BASE_URL`` says, as the official SDK would send it."""
    home = tmp_path / "bare-home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENHEIM_", "ANTHROPIC_"))}
    env = {k: v for k, v in env.items() if not k.endswith("_API_KEY")}
    with FakeLLMServer([FakeReply(text="from the proxy")]) as proxy:
        env |= {
            "OPENHEIM_HOME": str(home),
            "ANTHROPIC_API_KEY": "sk-ant-inherited-0123456789",
            "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{proxy.port}",
        }
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "openheim", "mcp", "serve"], env=env, cwd=work
        )
        async with Client(params) as client:
            result = await client.call_tool("openheim", {"prompt": "hi"})
    assert not result.is_error, text_of(result)
    assert text_of(result).startswith("from the proxy")
    [request] = proxy.requests
    assert request.path == "/v1/messages"
    assert request.headers.get("x-api-key") == "sk-ant-inherited-0123456789"
