"""``openheim acp`` driven by the official SDK's client: initialize, new sessions, prompts,
permissions, cancellation, modes and the model option. Every message the agent sends is
validated against the official schema (``acp_agent`` fails the test otherwise)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from acp.helpers import (
    embedded_text_resource,
    image_block,
    resource_block,
    resource_link_block,
    text_block,
)

from openheim.acp.permissions import OPTIONS
from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from tests.acp.harness import HOLD, Agent, RecordingClient, acp_agent
from tests.processes import Sleeper, wait_until

MODELS = '\nmodels = ["fake-model", "other-model"]\ncontext_window = 32000\n'


def write(name: str, content: str = "hello\n") -> FakeReply:
    return FakeReply(tool_calls=[FakeToolCall("write_file", {"path": name, "content": content})])


def tool_messages(server: FakeLLMServer, index: int) -> list[str]:
    messages = server.requests[index].messages
    return [str(m["content"]) for m in messages if m.get("role") == "tool"]


async def test_initialize_advertises_only_what_works(home: Path, work: Path) -> None:
    async with acp_agent(home, work, None) as agent:
        init = await agent.start()
    wire = init.model_dump(by_alias=True, exclude_none=True)
    assert wire["protocolVersion"] == 1
    assert wire["agentInfo"]["name"] == "openheim" and wire["agentInfo"]["version"]
    caps = wire["agentCapabilities"]
    assert caps["loadSession"] is True
    assert caps["promptCapabilities"] == {"image": True, "audio": False, "embeddedContext": True}
    assert caps["mcpCapabilities"] == {"http": True, "sse": False, "acp": False}
    assert set(caps["sessionCapabilities"]) == {"list", "resume", "close"}


async def test_new_session_offers_modes_model_and_skills(home: Path, work: Path) -> None:
    skills = home / "skills"
    skills.mkdir()
    (skills / "review.md").write_text("---\ndescription: Review a change\n---\nBe thorough.\n")
    async with acp_agent(home, work, None, extra=MODELS) as agent:
        await agent.start()
        response = await agent.conn.new_session(cwd=str(work))
        with pytest.raises(RequestError) as relative:
            await agent.conn.new_session(cwd="work")
        with pytest.raises(RequestError) as outside:
            await agent.conn.new_session(cwd=str(home))
        commands = await _wait_for(agent.client, "available_commands_update")
    assert response.modes is not None
    assert response.modes.current_mode_id == "code"
    assert [m.id for m in response.modes.available_modes] == ["code", "architect"]
    options = {o.id: o for o in response.config_options or []}
    assert options["model"].category == "model"
    assert options["model"].current_value == "fake-model"
    assert [o.value for o in options["model"].options] == ["fake-model", "other-model"]
    assert (relative.value.code, outside.value.code) == (-32602, -32602)
    assert "inside" in str(outside.value.data)
    assert [c.name for c in commands.available_commands] == ["compact", "pin", "undo", "review"]


async def _wait_for(client: RecordingClient, kind: str) -> Any:
    """The first update of ``kind``; the agent sends it right after its response."""
    for _ in range(200):
        found = client.of_kind(kind)
        if found:
            return found[0]
        await asyncio.sleep(0.01)
    raise AssertionError(f"no {kind} update arrived")


async def test_permission_granted_rejected_and_always(home: Path, work: Path) -> None:
    replies: list[FakeReply | str] = [
        write("granted.txt"),
        write("rejected.txt"),
        "first turn done",
        write("always.txt"),
        write("again.txt"),
        "second turn done",
    ]
    client = RecordingClient(answers=["allow_once", "reject_once", "allow_always"])
    with FakeLLMServer(replies) as server:
        async with acp_agent(home, work, server, client) as agent:
            await agent.start()
            sid = await agent.new()
            first = await agent.conn.prompt(session_id=sid, prompt=[text_block("write two")])
            second = await agent.conn.prompt(session_id=sid, prompt=[text_block("write more")])
    assert (first.stop_reason, second.stop_reason) == ("end_turn", "end_turn")
    assert (work / "granted.txt").read_text() == "hello\n"
    assert not (work / "rejected.txt").exists()
    assert "rejected" in tool_messages(server, 2)[-1]
    assert (work / "always.txt").exists() and (work / "again.txt").exists()
    asked = [r.raw_input["path"] for r in client.permission_requests]
    assert asked == ["granted.txt", "rejected.txt", "always.txt"]
    assert client.permission_requests[0].title == "Write granted.txt"


async def test_reject_always_is_not_asked_again(home: Path, work: Path) -> None:
    replies: list[FakeReply | str] = [write("a.txt"), write("a.txt"), "gave up"]
    client = RecordingClient(answers=["reject_always"])
    with FakeLLMServer(replies) as server:
        async with acp_agent(home, work, server, client) as agent:
            await agent.start()
            sid = await agent.new()
            await agent.conn.prompt(session_id=sid, prompt=[text_block("write")])
    assert not (work / "a.txt").exists()
    assert len(client.permission_requests) == 1
    assert "will reject calls like it" in tool_messages(server, 1)[-1]
    kinds = [(o.option_id, o.kind) for o in OPTIONS]
    assert kinds == [(k, k) for k in ("allow_once", "allow_always", "reject_once", "reject_always")]


async def test_tool_calls_stream_as_updates_with_diffs(home: Path, work: Path) -> None:
    (work / "a.txt").write_text("old line\n")
    edit = FakeToolCall(
        "edit_file", {"path": "a.txt", "old_string": "old", "new_string": "new"}, id="call-1"
    )
    replies: list[FakeReply | str] = [
        FakeReply(tool_calls=[edit]),
        FakeReply(text="Edited.", reasoning="thinking..."),
    ]
    client = RecordingClient(answers=["allow_once"])
    with FakeLLMServer(replies) as server:
        async with acp_agent(home, work, server, client, extra=MODELS) as agent:
            await agent.start()
            sid = await agent.new()
            await agent.conn.prompt(session_id=sid, prompt=[text_block("edit a.txt please")])
    kinds = client.kinds(sid)
    assert kinds.index("tool_call") < kinds.index("tool_call_update")
    assert "agent_thought_chunk" in kinds and "usage_update" in kinds
    start = client.of_kind("tool_call")[0]
    assert (start.tool_call_id, start.kind, start.status) == ("call-1", "edit", "pending")
    assert start.locations[0].path == str(work / "a.txt")
    done = client.of_kind("tool_call_update")[-1]
    assert done.status == "completed"
    diff = next(c for c in done.content if c.type == "diff")
    assert (diff.path, diff.old_text, diff.new_text) == (
        str(work / "a.txt"),
        "old line\n",
        "new line\n",
    )
    title = client.of_kind("session_info_update")[0].title
    assert title == "edit a.txt please"
    usage = client.of_kind("usage_update")[-1]
    assert usage.size == 32000 and usage.used > 0
    assert client.text(sid) == "Edited."


async def test_usage_reports_the_window_the_fitter_uses_when_none_is_configured(
    home: Path, work: Path
) -> None:
    with FakeLLMServer(["Hi."]) as server:
        async with acp_agent(home, work, server) as agent:  # no context_window in config
            await agent.start()
            sid = await agent.new()
            await agent.conn.prompt(session_id=sid, prompt=[text_block("hello")])
    usage = agent.client.of_kind("usage_update")[-1]
    assert usage.size == 128_000 and usage.used > 0  # an unknown model: the default window


async def test_cancel_kills_a_long_command(home: Path, work: Path) -> None:
    sleeper = Sleeper(120)
    command = f"exec {sleeper.command}"
    call = FakeToolCall("execute_command", {"command": command, "timeout": 300})
    client = RecordingClient(answers=["allow_once"])
    with FakeLLMServer([FakeReply(tool_calls=[call]), "never"]) as server:
        async with acp_agent(home, work, server, client, args=("--allow-shell",)) as agent:
            await agent.start()
            sid = await agent.new()
            turn = asyncio.create_task(
                agent.conn.prompt(session_id=sid, prompt=[text_block("sleep")])
            )
            await wait_until(sleeper.running, 20)  # the command runs after approval
            await agent.conn.cancel(session_id=sid)
            response = await asyncio.wait_for(turn, 30)
            await wait_until(lambda: not sleeper.running())
    assert response.stop_reason == "cancelled"
    assert len(server.requests) == 1
    done = client.of_kind("tool_call_update")[-1]
    assert done.status == "failed" and done.raw_output["status"] == "cancelled"


async def held_turn(agent: Agent) -> tuple[str, asyncio.Task[Any]]:
    """A session whose prompt waits on a permission request that is never answered."""
    await agent.start()
    sid = await agent.new()
    turn = asyncio.create_task(agent.conn.prompt(session_id=sid, prompt=[text_block("write")]))
    await asyncio.wait_for(agent.client.asked.wait(), 30)
    return sid, turn


async def test_cancel_abandons_an_open_permission_request(home: Path, work: Path) -> None:
    client = RecordingClient(answers=[HOLD])
    with FakeLLMServer([write("held.txt"), "never"]) as server:
        async with acp_agent(home, work, server, client) as agent:
            sid, turn = await held_turn(agent)
            await agent.conn.cancel(session_id=sid)
            response = await asyncio.wait_for(turn, 30)
    assert response.stop_reason == "cancelled"
    assert not (work / "held.txt").exists()
    assert len(server.requests) == 1


async def test_a_second_prompt_is_refused_while_one_runs(home: Path, work: Path) -> None:
    client = RecordingClient(answers=[HOLD])
    with FakeLLMServer([write("held.txt"), "never"]) as server:
        async with acp_agent(home, work, server, client) as agent:
            sid, turn = await held_turn(agent)
            with pytest.raises(RequestError) as busy:
                await agent.conn.prompt(session_id=sid, prompt=[text_block("again")])
            await agent.conn.cancel(session_id=sid)
            await asyncio.wait_for(turn, 30)
    assert busy.value.code == -32600
    data = busy.value.data or {}
    assert data["reason"] == "session_busy" and data["pid"] == agent.process.pid


async def test_architect_mode_offers_read_only_tools(home: Path, work: Path) -> None:
    with FakeLLMServer(["planned", "coded"]) as server:
        async with acp_agent(home, work, server) as agent:
            await agent.start()
            sid = await agent.new()
            await agent.conn.set_session_mode(session_id=sid, mode_id="architect")
            await agent.conn.prompt(session_id=sid, prompt=[text_block("plan")])
            await agent.conn.set_session_mode(session_id=sid, mode_id="code")
            await agent.conn.prompt(session_id=sid, prompt=[text_block("code")])
            with pytest.raises(RequestError) as bad:
                await agent.conn.set_session_mode(session_id=sid, mode_id="yolo")
    planned = {t["function"]["name"] for t in server.requests[0].body["tools"]}
    coded = {t["function"]["name"] for t in server.requests[1].body["tools"]}
    assert "read_file" in planned and "write_file" not in planned and "edit_file" not in planned
    assert {"write_file", "edit_file"} <= coded
    assert bad.value.code == -32602


async def test_model_config_option_switches_the_model(home: Path, work: Path) -> None:
    with FakeLLMServer(["one", "two"]) as server:
        async with acp_agent(home, work, server, extra=MODELS) as agent:
            await agent.start()
            sid = await agent.new()
            await agent.conn.prompt(session_id=sid, prompt=[text_block("first")])
            changed = await agent.conn.set_config_option(
                config_id="model", session_id=sid, value="other-model"
            )
            await agent.conn.prompt(session_id=sid, prompt=[text_block("second")])
            with pytest.raises(RequestError) as unknown:
                await agent.conn.set_config_option(
                    config_id="model", session_id=sid, value="no-such-model"
                )
    assert [r.body["model"] for r in server.requests] == ["fake-model", "other-model"]
    current = {o.id: o.current_value for o in changed.config_options}
    assert current["model"] == "other-model"
    assert unknown.value.code == -32602


async def test_meta_picks_the_model_and_skills(home: Path, work: Path) -> None:
    skills = home / "skills"
    skills.mkdir()
    (skills / "style.md").write_text("---\ndescription: House style\n---\nAlways rhyme.\n")
    with FakeLLMServer(["ok"]) as server:
        async with acp_agent(home, work, server, extra=MODELS) as agent:
            await agent.start()
            response = await agent.conn.new_session(
                cwd=str(work), model="other-model", skills=["style"]
            )
            await agent.conn.prompt(session_id=response.session_id, prompt=[text_block("hi")])
    body = server.requests[0].body
    assert body["model"] == "other-model"
    assert "Always rhyme." in body["messages"][0]["content"]


async def test_a_skill_runs_as_a_slash_command(home: Path, work: Path) -> None:
    skills = home / "skills"
    skills.mkdir()
    (skills / "haiku.md").write_text("---\ndescription: Write a haiku\n---\nUse 5-7-5.\n")
    with FakeLLMServer(["ok"]) as server:
        async with acp_agent(home, work, server) as agent:
            await agent.start()
            sid = await agent.new()
            await agent.conn.prompt(session_id=sid, prompt=[text_block("/haiku about rain")])
    sent = str(server.requests[0].messages[-1]["content"])
    assert "Use 5-7-5." in sent and sent.endswith("about rain")


async def test_policy_decisions_never_reach_the_client(home: Path, work: Path) -> None:
    client = RecordingClient()
    with FakeLLMServer([write("denied.txt"), "ok"]) as server:
        async with acp_agent(home, work, server, client, args=("--approve", "deny")) as agent:
            await agent.start()
            sid = await agent.new()
            await agent.conn.prompt(session_id=sid, prompt=[text_block("write")])
    assert client.permission_requests == []
    assert not (work / "denied.txt").exists()
    assert "denied" in tool_messages(server, 1)[-1]


async def test_auto_for_edits_writes_unasked_and_asks_the_editor_about_a_command(
    home: Path, work: Path
) -> None:
    shell = FakeReply(tool_calls=[FakeToolCall("execute_command", {"command": "echo x > b"})])
    client = RecordingClient()  # rejects what it is asked
    args = ("--approve", "edits", "--allow-shell")
    with FakeLLMServer([write("a.txt"), shell, "ok"]) as server:
        async with acp_agent(home, work, server, client, args=args) as agent:
            await agent.start()
            sid = await agent.new()
            await agent.conn.prompt(session_id=sid, prompt=[text_block("write, then run")])
    assert (work / "a.txt").read_text() == "hello\n"
    assert [r.raw_input["command"] for r in client.permission_requests] == ["echo x > b"]
    assert not (work / "b").exists()


async def test_images_and_embedded_resources_reach_the_model(home: Path, work: Path) -> None:
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"  # any base64
    prompt: list[Any] = [
        text_block("what is this?"),
        image_block(png, "image/png"),
        resource_block(embedded_text_resource("file:///tmp/spec.md", "The spec says 42.")),
        resource_link_block("notes", "file:///tmp/notes.txt"),
    ]
    with FakeLLMServer(["a pixel"]) as server:
        async with acp_agent(home, work, server) as agent:
            await agent.start()
            sid = await agent.new()
            await agent.conn.prompt(session_id=sid, prompt=prompt)
    parts = server.requests[0].messages[-1]["content"]
    kinds = [p["type"] for p in parts]
    assert kinds == ["text", "image_url", "text", "text"]
    assert parts[1]["image_url"]["url"] == f"data:image/png;base64,{png}"
    assert "The spec says 42." in parts[2]["text"] and "/tmp/notes.txt" in parts[3]["text"]


async def test_a_failed_or_malformed_permission_answer_denies(home: Path, work: Path) -> None:
    replies: list[FakeReply | str] = [write("a.txt"), write("b.txt"), "gave up"]
    client = RecordingClient(answers=["error", "garbage"])
    with FakeLLMServer(replies) as server:
        async with acp_agent(home, work, server, client) as agent:
            await agent.start()
            sid = await agent.new()
            response = await agent.conn.prompt(session_id=sid, prompt=[text_block("write")])
    assert response.stop_reason == "end_turn"
    assert not (work / "a.txt").exists() and not (work / "b.txt").exists()
    assert "could not be asked" in tool_messages(server, 1)[-1]
    assert "could not be asked" in tool_messages(server, 2)[-1]
