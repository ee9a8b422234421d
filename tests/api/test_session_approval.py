"""Approval callbacks and resolvers deciding a ``Session``'s mutating tool calls."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openheim.approval import Allow, ApprovalRequest, Ask, Deny
from openheim.testing import Reply, tool_call
from tests.api.conftest import MakeRuntime, Scripted
from tests.api.support import finished, results, tool_answer, write_call


@pytest.mark.parametrize("style", ["sync", "async"])
@pytest.mark.parametrize("answer", [True, False])
async def test_approval_callback_decides_mutating_calls(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path, style: str, answer: bool
) -> None:
    asked: list[ApprovalRequest] = []

    def sync_callback(request: ApprovalRequest) -> bool:
        asked.append(request)
        return answer

    async def async_callback(request: ApprovalRequest) -> bool:
        asked.append(request)
        return answer

    callback: Any = sync_callback if style == "sync" else async_callback
    scripted.provider.add(write_call(), "done")
    async with await make_runtime(approval=callback).new_session() as session:
        result = await session.prompt("write")
    assert len(asked) == 1
    request = asked[0]
    assert (request.tool, dict(request.arguments)) == (
        "write_file",
        {"path": "note.txt", "content": "hello"},
    )
    assert not request.read_only
    assert Path(request.cwd) == work
    (outcome,) = results(result.events)
    if answer:
        assert outcome.status == "completed"
        assert (work / "note.txt").read_text() == "hello"
        assert finished(result.events).denied == 0
    else:
        assert outcome.status == "denied"
        assert outcome.content.startswith("denied")
        assert not (work / "note.txt").exists()
        assert finished(result.events).denied == 1
        assert tool_answer(scripted.requests[1].messages[-1]).is_error


async def test_approval_callback_may_answer_allow_or_deny_with_a_reason(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path
) -> None:
    def callback(request: ApprovalRequest) -> Allow | Deny:
        if request.arguments["path"] == "ok.txt":
            return Allow()
        return Deny("not that file, use ok.txt")

    scripted.provider.add(write_call("bad.txt"), write_call("ok.txt"), "done")
    async with await make_runtime(approval=callback).new_session() as session:
        result = await session.prompt("write")
    refused, written = results(result.events)
    assert refused.status == "denied"
    assert "not that file, use ok.txt" in refused.content
    assert "not that file" in tool_answer(scripted.requests[1].messages[-1]).content
    assert written.status == "completed"
    assert (work / "ok.txt").is_file()
    assert not (work / "bad.txt").exists()


async def test_approval_callback_sees_why_a_call_is_risky(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    asked: list[ApprovalRequest] = []

    def callback(request: ApprovalRequest) -> bool:
        asked.append(request)
        return False

    risky = tool_call("execute_command", {"command": "git push --force"})
    scripted.provider.add(Reply(tool_calls=[risky]), "refused")
    runtime = make_runtime(approval=callback, allow_shell=True)
    async with await runtime.new_session() as session:
        await session.prompt("clean up")
    assert len(asked) == 1 and asked[0].tool == "execute_command"
    assert asked[0].reasons == ("`git push --force` can overwrite commits on the remote",)


async def test_approval_callback_is_not_asked_about_read_only_tools(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path
) -> None:
    (work / "a.txt").write_text("content of a")
    asked: list[ApprovalRequest] = []

    def callback(request: ApprovalRequest) -> bool:
        asked.append(request)
        return False

    scripted.provider.add(Reply(tool_calls=[tool_call("read_file", {"path": "a.txt"})]), "ok")
    async with await make_runtime(approval=callback).new_session() as session:
        result = await session.prompt("read")
    assert asked == []
    (outcome,) = results(result.events)
    assert outcome.status == "completed"
    assert "content of a" in outcome.content


async def test_a_session_resolver_replaces_the_runtime_callback(
    scripted: Scripted, make_runtime: MakeRuntime, work: Path
) -> None:
    by_callback: list[str] = []
    by_resolver: list[str] = []

    def callback(request: ApprovalRequest) -> bool:
        by_callback.append(request.tool)
        return False

    async def resolver(request: ApprovalRequest, ask: Ask) -> Allow | Deny:
        by_resolver.append(request.tool)
        return Allow()

    scripted.provider.add(write_call(), "ok")
    runtime = make_runtime(approval=callback)
    async with await runtime.new_session(resolver=resolver) as session:
        await session.prompt("write")
    assert (by_callback, by_resolver) == ([], ["write_file"])
    assert (work / "note.txt").is_file()
