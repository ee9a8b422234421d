"""``openheim mcp serve`` keeps a session open between the tool calls that continue it: its
``session_start`` hook runs once, and ``session_end`` once the server stops."""

from __future__ import annotations

import shlex
from pathlib import Path

from mcp_types import CallToolResult, TextContent

from openheim.testing import FakeLLMServer, FakeReply
from tests.mcp_server.conftest import ServeClient


def text_of(result: CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


def hook_config(home: Path, log: Path) -> None:
    quoted = shlex.quote(str(log))
    with (home / "config.toml").open("a") as config:
        config.write(
            f'\n[hooks]\nsession_start = "echo start >> {quoted}"\n'
            f'session_end = "echo end >> {quoted}"\n'
        )


async def test_calls_that_continue_a_session_run_session_start_once(
    serve: ServeClient, fake: FakeLLMServer, home: Path, tmp_path: Path
) -> None:
    log = tmp_path / "hooks.log"
    hook_config(home, log)
    for i in range(3):
        fake.add(FakeReply(text=f"answer {i}"))
    async with serve() as client:
        first = await client.call_tool("openheim", {"prompt": "one"})
        assert first.structured_content is not None, text_of(first)
        sid = first.structured_content["session_id"]
        for prompt in ("two", "three"):
            result = await client.call_tool("openheim", {"prompt": prompt, "session_id": sid})
            assert not result.is_error, text_of(result)
            assert result.structured_content is not None
            assert result.structured_content["session_id"] == sid
        assert log.read_text().split() == ["start"]  # still open between the calls
    texts = [m.get("content") for m in fake.requests[-1].messages]
    assert "one" in texts and "answer 1" in texts and "three" in texts
    assert log.read_text().split() == ["start", "end"]  # closed when the server stopped
