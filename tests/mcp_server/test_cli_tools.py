"""The coding-agent CLI tools of ``openheim mcp serve`` (``claude_code``, ``codex``,
``opencode``), driven by the MCP SDK's client over stdio: offered only when the CLI is found,
private folders per session id, ``cwd`` inside the work dir, progress, usage, errors as
``isError`` results, and no CLI process left behind by a cancelled call or a closed client."""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp.client.stdio import StdioServerParameters

from mcp import Client
from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from tests.cliagents import npm_clis
from tests.cliagents.standin import FORKS, write_script
from tests.mcp_server.test_prompt_tool import text_of
from tests.processes import alive, wait_until

pytestmark = pytest.mark.timeout(120)
Opener = Callable[..., AbstractAsyncContextManager[Client]]

COUNTER = """
prompt = sys.stdin.read()
count = int(open("calls").read()) + 1 if os.path.exists("calls") else 1
open("calls", "w").write(str(count))
mode = oct(os.stat(".").st_mode & 0o777)
print(json.dumps({"type": "assistant", "message": {"content": [
    {"type": "tool_use", "name": "Read", "input": {}}]}}), flush=True)
answer = f"call {count} in {os.getcwd()} mode {mode}: {prompt}"
print(json.dumps({"type": "result", "subtype": "success", "result": answer,
    "session_id": "cli-1", "usage": {"input_tokens": 4, "output_tokens": 6}}), flush=True)
"""
"""A stand-in Claude Code that counts its calls in its folder and says where it runs."""


@pytest.fixture
def opener(tmp_path: Path) -> Opener:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(
        'default_provider = "fake"\n[providers.fake]\napi_base = "http://127.0.0.1:9/v1"\n'
        'default_model = "fake-model"\n[cli_agents]\ntimeout_secs = 20\n'
    )
    (tmp_path / "work" / "sub").mkdir(parents=True)

    @asynccontextmanager
    async def open_client(**extra: str) -> AsyncIterator[Client]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENHEIM_")}
        env = {k: v for k, v in env.items() if not k.endswith("_API_KEY")}
        for name in ("CC_ADAPTER_CLAUDE_BIN", "CODEX_ADAPTER_BIN", "OPENCODE_ADAPTER_BIN"):
            env.pop(name, None)
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"])
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "openheim", "mcp", "serve"],
            env={**env, "OPENHEIM_HOME": str(home), **extra},
            cwd=tmp_path / "work",
        )
        async with Client(params) as client:
            yield client

    return open_client


async def test_only_installed_clis_are_offered(opener: Opener, tmp_path: Path) -> None:
    script = write_script(tmp_path, COUNTER)
    async with opener() as client:
        without = {tool.name for tool in (await client.list_tools()).tools}
    async with opener(CC_ADAPTER_CLAUDE_BIN=str(script)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert not {"claude_code", "codex", "opencode"} & without
    assert "claude_code" in tools and not {"codex", "opencode"} & set(tools)
    schema = tools["claude_code"].input_schema
    assert set(schema["properties"]) == {"prompt", "instruction", "session_id", "cwd"}
    assert "Claude Code" in (tools["claude_code"].description or "")


async def test_session_folders_are_private_and_kept(opener: Opener, tmp_path: Path) -> None:
    script = write_script(tmp_path, COUNTER)
    seen: list[str | None] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(message)

    async with opener(CC_ADAPTER_CLAUDE_BIN=str(script)) as client:
        first = await client.call_tool(
            "claude_code", {"prompt": "one", "session_id": "s1"}, progress_callback=on_progress
        )
        second = await client.call_tool("claude_code", {"instruction": "two", "session_id": "s1"})
        other = await client.call_tool("claude_code", {"prompt": "three", "session_id": "s2"})
        fresh = await client.call_tool("claude_code", {"prompt": "four"})
    assert not first.is_error, text_of(first)
    assert first.structured_content is not None and second.structured_content is not None
    folder = Path(first.structured_content["text"].split(" in ")[1].split(" mode")[0])
    assert first.structured_content["text"] == f"call 1 in {folder} mode 0o700: one"
    assert second.structured_content["text"] == f"call 2 in {folder} mode 0o700: two"
    assert other.structured_content is not None
    assert other.structured_content["text"].startswith("call 1 in ")
    assert str(folder) not in other.structured_content["text"]
    assert first.structured_content["session_id"] == "s1"
    assert first.structured_content["usage"]["input_tokens"] == 4
    assert first.structured_content["cli_session_id"] == "cli-1"
    assert fresh.structured_content is not None and fresh.structured_content["session_id"]
    assert seen == ["tool Read"]
    assert not folder.exists()  # removed when the server ended


async def test_cwd_inside_the_work_dir_only(opener: Opener, tmp_path: Path) -> None:
    script = write_script(tmp_path, COUNTER)
    async with opener(CC_ADAPTER_CLAUDE_BIN=str(script)) as client:
        inside = await client.call_tool("claude_code", {"prompt": "x", "cwd": "sub"})
        outside = await client.call_tool("claude_code", {"prompt": "x", "cwd": str(tmp_path)})
        escape = await client.call_tool("claude_code", {"prompt": "x", "cwd": "../"})
        both = await client.call_tool(
            "claude_code", {"prompt": "x", "cwd": "sub", "session_id": "a"}
        )
        empty = await client.call_tool("claude_code", {"session_id": "a"})
        bad_id = await client.call_tool("claude_code", {"prompt": "x", "session_id": "../up"})
    assert not inside.is_error, text_of(inside)
    assert f"in {(tmp_path / 'work' / 'sub').resolve()} " in text_of(inside)
    for result in (outside, escape):
        assert result.is_error and "is not a folder inside the work dir" in text_of(result)
    assert both.is_error and "not both" in text_of(both)
    assert empty.is_error and "prompt is empty" in text_of(empty)
    assert bad_id.is_error and "session_id may hold only" in text_of(bad_id)


async def test_failures_and_timeouts_are_errors(opener: Opener, tmp_path: Path) -> None:
    failing = write_script(tmp_path, "print('no login', file=sys.stderr)\nsys.exit(1)", "fails")
    async with opener(CC_ADAPTER_CLAUDE_BIN=str(failing)) as client:
        failed = await client.call_tool("claude_code", {"prompt": "x"})
    assert failed.is_error and "exited with status 1: no login" in text_of(failed)
    home = tmp_path / "home" / "config.toml"
    home.write_text(home.read_text().replace("timeout_secs = 20", "timeout_secs = 1"))
    hangs = write_script(tmp_path, "time.sleep(100)", "hangs")
    async with opener(CC_ADAPTER_CLAUDE_BIN=str(hangs)) as client:
        slow = await client.call_tool("claude_code", {"prompt": "x"})
    assert slow.is_error and "no answer within 1 s" in text_of(slow)


async def _hanging_call(client: Client, work: Path) -> tuple[asyncio.Future[Any], list[int]]:
    """A call of a CLI that hangs (in ``work``), and the pids of the CLI and its child."""
    call = asyncio.ensure_future(client.call_tool("claude_code", {"prompt": "x", "cwd": "sub"}))
    pids = work / "pids"
    await wait_until(lambda: pids.exists() and len(pids.read_text().split()) == 2, 30)
    found = [int(p) for p in pids.read_text().split()]
    assert all(alive(pid) for pid in found)
    return call, found


async def test_a_cancelled_call_leaves_no_process(opener: Opener, tmp_path: Path) -> None:
    script = write_script(tmp_path, FORKS)
    async with opener(CC_ADAPTER_CLAUDE_BIN=str(script)) as client:
        call, pids = await _hanging_call(client, tmp_path / "work" / "sub")
        call.cancel()
        await wait_until(lambda: not any(alive(pid) for pid in pids), 20)
        ok = await client.list_tools()  # the server is still there
    assert "claude_code" in {tool.name for tool in ok.tools}


async def test_a_closed_client_leaves_no_process(opener: Opener, tmp_path: Path) -> None:
    script = write_script(tmp_path, FORKS)
    async with opener(CC_ADAPTER_CLAUDE_BIN=str(script)) as client:
        call, pids = await _hanging_call(client, tmp_path / "work" / "sub")
    call.cancel()
    await asyncio.gather(call, return_exceptions=True)
    await wait_until(lambda: not any(alive(pid) for pid in pids), 20)


@pytest.mark.parametrize(
    "cwd",
    [
        "../work-evil",
        "{tmp}/work-evil",
        "sub/../../work-evil",
        "link-out",
        "{tmp}/work/link-out",
        "~",
    ],
)
async def test_a_cwd_beside_the_work_dir_is_refused(
    opener: Opener, tmp_path: Path, cwd: str
) -> None:
    """A sibling whose name starts like the work dir's (``work-evil``) is outside it, by a
    link too: a prefix comparison of the paths would let it in."""
    (tmp_path / "work-evil").mkdir()
    (tmp_path / "work" / "link-out").symlink_to(tmp_path / "work-evil")
    script = write_script(tmp_path, COUNTER)
    async with opener(CC_ADAPTER_CLAUDE_BIN=str(script)) as client:
        result = await client.call_tool(
            "claude_code", {"prompt": "x", "cwd": cwd.format(tmp=tmp_path)}
        )
    assert result.is_error and "is not a folder inside the work dir" in text_of(result)
    assert not (tmp_path / "work-evil" / "calls").exists()


@pytest.mark.timeout(npm_clis.INSTALL_TIMEOUT_S)
async def test_real_claude_code_through_mcp(opener: Opener, tmp_path: Path) -> None:
    bin_dir = npm_clis.ensure_clis()

    def reply(request: Any) -> FakeReply:
        if b"tool_result" in request.raw_body:
            return FakeReply(text="Nothing here.", usage={"input_tokens": 30, "output_tokens": 3})
        return FakeReply(tool_calls=[FakeToolCall("Glob", {"pattern": "*"})])

    seen: list[str | None] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(message)

    with FakeLLMServer(default=reply) as server:
        env = npm_clis.claude_env(tmp_path / "claude-home", server, bin_dir)
        async with opener(**env) as client:
            result = await client.call_tool(
                "claude_code", {"prompt": "List the files."}, progress_callback=on_progress
            )
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None
    assert result.structured_content["text"] == "Nothing here."
    assert result.structured_content["usage"]["output_tokens"] >= 3
    assert "tool Glob" in seen
    assert b"List the files." in server.requests[0].raw_body


def test_session_folder_mode_is_private() -> None:
    from openheim.mcp_server.cli_tools import SessionFolders

    folders = SessionFolders()
    one = folders.get("a")
    assert folders.get("a") == one and folders.get("b") != one
    assert stat.S_IMODE(one.stat().st_mode) == 0o700
    assert stat.S_IMODE(one.parent.stat().st_mode) == 0o700


@pytest.mark.timeout(npm_clis.INSTALL_TIMEOUT_S)
@pytest.mark.parametrize(
    ("tool", "env_for"), [("codex", npm_clis.codex_env), ("opencode", npm_clis.opencode_env)]
)
async def test_real_codex_and_opencode_through_mcp(
    opener: Opener, tmp_path: Path, tool: str, env_for: npm_clis.EnvFor
) -> None:
    bin_dir = npm_clis.ensure_clis()
    usage = {"input_tokens": 12, "output_tokens": 4, "prompt_tokens": 12, "completion_tokens": 4}
    with FakeLLMServer(default=FakeReply(text="All done.", usage=usage)) as server:
        env = env_for(tmp_path / "cli-home", server, bin_dir)
        async with opener(**env) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            result = await client.call_tool(tool, {"instruction": "Tidy up.", "session_id": "t"})
    assert tool in tools
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None
    assert result.structured_content["text"] == "All done."
    assert result.structured_content["usage"]["output_tokens"] >= 4
    assert any(b"Tidy up." in r.raw_body for r in server.requests)
