"""The built-in tools hand file and terminal work to the session's client when it offers it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from openheim.errors import SandboxError, ToolError
from openheim.events import FileDiff, ToolResult
from openheim.loop import Agent
from openheim.messages import Message
from openheim.redaction.secrets import SecretPolicy
from openheim.testing import Reply, ScriptedProvider, tool_call
from openheim.tools.base import ToolContext, ToolSet
from openheim.tools.builtin.files import MAX_READ_BYTES, edit_file, read_file, write_file
from openheim.tools.builtin.shell import execute_command, format_result
from openheim.tools.client_io import ClientIO, CommandResult
from tests.helpers import collect
from tests.tools.support import call, ok

Call = tuple[object, ...]


@dataclass
class FakeClient:
    """An in-memory client: its buffers by absolute path, one canned command result, a log."""

    reads_files: bool = True
    writes_files: bool = True
    runs_commands: bool = True
    files: dict[Path, str] = field(default_factory=dict)
    result: CommandResult = field(default_factory=lambda: CommandResult(0, "ok\n", "", False))
    calls: list[Call] = field(default_factory=list)
    envs: list[dict[str, str]] = field(default_factory=list)

    async def read_text_file(self, path: Path) -> str:
        self.calls.append(("read", path))
        if path not in self.files:
            raise ToolError(f"the client has no {path}", hint="check the path")
        return self.files[path]

    async def write_text_file(self, path: Path, content: str) -> None:
        self.calls.append(("write", path, content))
        self.files[path] = content

    async def run_command(
        self,
        command: str,
        *,
        cwd: Path,
        env: Mapping[str, str],
        time_limit: float,
        call_id: str,
    ) -> CommandResult:
        self.calls.append(("run", command, cwd, time_limit, call_id))
        self.envs.append(dict(env))
        return self.result


def attach(
    ctx: ToolContext, *, reads: bool = True, writes: bool = True, runs: bool = True
) -> FakeClient:
    """Give ``ctx`` a fake client with the given capability flags."""
    client = FakeClient(reads_files=reads, writes_files=writes, runs_commands=runs)
    as_protocol: ClientIO = client  # mypy checks that the fake meets the protocol
    ctx.client = as_protocol
    return client


async def outcome(ctx: ToolContext, **arguments: object) -> str:
    """What read_file shows the model: its text, or its error."""
    try:
        return await ok(read_file, ctx, **arguments)
    except ToolError as err:
        return f"error: {err}"


TEXTS = {
    "long": "".join(f"line {i}: {'x' * 60}\n" for i in range(1, 3001)),
    "no final newline": "a\nb\nc",
    "a line over the cap": "short\n" + "y" * (150 * 1024) + "\nafter\n",
    "empty": "",
}


@pytest.mark.parametrize("name", TEXTS)
@pytest.mark.parametrize(("offset", "limit"), [(1, None), (2, 2), (2999, None), (3, 1)])
async def test_client_reads_show_the_same_window_as_local_reads(
    ctx: ToolContext, work: Path, name: str, offset: int, limit: int | None
) -> None:
    target = work / "f.txt"
    target.write_text(TEXTS[name])
    local = await outcome(ctx, path="f.txt", offset=offset, limit=limit)
    target.unlink()  # from here on only the client has the text
    client = attach(ctx)
    client.files[target] = TEXTS[name]
    assert await outcome(ctx, path="f.txt", offset=offset, limit=limit) == local
    assert client.calls == [("read", target)]


async def test_client_read_uses_the_absolute_path_and_the_cap(ctx: ToolContext, work: Path) -> None:
    client = attach(ctx)
    client.files[work / "sub/big.txt"] = TEXTS["long"]
    (work / "sub").mkdir()
    out = await ok(read_file, ctx, path="./sub/../sub/big.txt")
    assert client.calls == [("read", work / "sub/big.txt")]
    body, note = out.rsplit("\n", 1)
    last = len(body.splitlines())
    assert len(body.encode()) <= MAX_READ_BYTES < len(TEXTS["long"])
    assert (
        note == f"[lines 1-{last} of 3000 shown; call read_file with offset={last + 1} to continue]"
    )
    assert await ok(read_file, ctx, path="sub/big.txt", offset=10, limit=2) == (
        f"line 10: {'x' * 60}\nline 11: {'x' * 60}\n"
        "[lines 10-11 of 3000 shown; call read_file with offset=12 to continue]"
    )


async def test_client_text_is_not_refused_as_binary(ctx: ToolContext, work: Path) -> None:
    client = attach(ctx)
    client.files[work / "odd.txt"] = "nul\0here \ud800\n"
    assert await ok(read_file, ctx, path="odd.txt") == "nul\0here \ufffd\n"


async def test_the_sandbox_refuses_before_the_client_is_asked(ctx: ToolContext, work: Path) -> None:
    client = attach(ctx)
    outside = work.parent / "outside.txt"
    client.files[outside] = "secret plans"
    with pytest.raises(SandboxError):
        await call(read_file, ctx, path="../outside.txt")
    with pytest.raises(SandboxError):
        await call(write_file, ctx, path=str(outside), content="x")
    with pytest.raises(SandboxError):
        await call(edit_file, ctx, path="../outside.txt", old_string="plans", new_string="x")
    assert client.calls == []


async def test_deny_read_refuses_before_the_client_is_asked(ctx: ToolContext, work: Path) -> None:
    ctx.secret_policy = SecretPolicy(["*.secret"])
    client = attach(ctx)
    client.files[work / "api.secret"] = "token"
    with pytest.raises(SandboxError, match="secret pattern"):
        await call(read_file, ctx, path="api.secret")
    with pytest.raises(SandboxError, match="secret pattern"):
        await call(write_file, ctx, path="api.secret", content="x")
    with pytest.raises(SandboxError, match="secret pattern"):
        await call(edit_file, ctx, path="api.secret", old_string="token", new_string="x")
    assert client.calls == []


async def test_write_goes_through_the_client(ctx: ToolContext, work: Path) -> None:
    client = attach(ctx)
    (work / "f.txt").write_text("old\n")
    out = await call(write_file, ctx, path="f.txt", content="new\n")
    assert out.content == "wrote 4 bytes to f.txt (replaced)"
    assert out.diff == FileDiff(str(work / "f.txt"), "old\n", "new\n")
    assert (work / "f.txt").read_text() == "old\n"
    created = await call(write_file, ctx, path="sub/new.txt", content="hello")
    assert created.content == "wrote 5 bytes to sub/new.txt (created)"
    assert created.diff == FileDiff(str(work / "sub/new.txt"), None, "hello")
    assert not (work / "sub").exists()
    assert client.calls == [
        ("write", work / "f.txt", "new\n"),
        ("write", work / "sub/new.txt", "hello"),
    ]


async def test_edit_goes_through_the_client(ctx: ToolContext, work: Path) -> None:
    client = attach(ctx)
    target = work / "f.py"
    client.files[target] = "a = 1\nb = 2\n"
    out = await call(edit_file, ctx, path="f.py", old_string="a = 1", new_string="a = 10")
    assert out.content == "replaced 1 occurrence in f.py"
    assert out.diff == FileDiff(str(target), "a = 1\nb = 2\n", "a = 10\nb = 2\n")
    assert client.calls == [("read", target), ("write", target, "a = 10\nb = 2\n")]
    assert not target.exists()


async def test_edit_reads_the_buffer_and_writes_the_disk(ctx: ToolContext, work: Path) -> None:
    client = attach(ctx, writes=False)
    target = work / "f.py"
    target.write_text("v = 0  # saved\n")
    client.files[target] = "v = 1  # unsaved\n"
    out = await call(edit_file, ctx, path="f.py", old_string="v = 1", new_string="v = 2")
    assert out.diff == FileDiff(str(target), "v = 1  # unsaved\n", "v = 2  # unsaved\n")
    assert target.read_text() == "v = 2  # unsaved\n"
    assert client.calls == [("read", target)]


async def test_a_client_offering_nothing_is_not_used(ctx: ToolContext, work: Path) -> None:
    client = attach(ctx, reads=False, writes=False, runs=False)
    target = work / "f.txt"
    client.files[target] = "the client's text\n"
    created = await call(write_file, ctx, path="f.txt", content="one\n")
    assert created.diff == FileDiff(str(target), None, "one\n")
    edited = await call(edit_file, ctx, path="f.txt", old_string="one", new_string="two")
    assert edited.diff == FileDiff(str(target), "one\n", "two\n")
    assert await ok(read_file, ctx, path="f.txt") == "two\n"
    ran = await ok(execute_command, ctx, command="cat f.txt")
    assert ran == "exit code: 0\n--- stdout ---\ntwo\n--- stderr ---\n(empty)"
    assert client.calls == []


async def test_commands_run_in_the_client_terminal(ctx: ToolContext, work: Path) -> None:
    client = attach(ctx)
    client.result = CommandResult(-9, "partial\n", "", timed_out=True)
    out = await call(execute_command, replace(ctx, call_id="call_7"), command="make", timeout=7)
    assert client.calls == [("run", "make", work, 7, "call_7")]
    assert client.envs == [dict(ctx.env)]
    assert out.is_error
    assert out.content == format_result(client.result, 7)
    assert out.content.startswith(
        "timed out after 7 s: the command and every process it started were killed; "
        "the output so far is below"
    )
    assert "--- stdout ---\npartial\n--- stderr ---" in out.content


async def test_command_arguments_are_checked_before_the_client(ctx: ToolContext) -> None:
    client = attach(ctx)
    with pytest.raises(ToolError, match="timeout must be between"):
        await call(execute_command, ctx, command="make", timeout=0)
    with pytest.raises(ToolError, match="command is empty"):
        await call(execute_command, ctx, command="  ")
    assert client.calls == []
    client.result = CommandResult(2, "", "no rule\n", timed_out=False)
    failed = await call(execute_command, ctx, command="make")
    assert failed.is_error
    assert failed.content.startswith("exit code: 2\n")


async def test_the_loop_carries_the_diff_and_the_call_id(ctx: ToolContext, work: Path) -> None:
    client = attach(ctx)
    target = work / "f.py"
    client.files[target] = "x = 1\n"
    calls = [
        tool_call("edit_file", {"path": "f.py", "old_string": "1", "new_string": "2"}, id="c_e"),
        tool_call("execute_command", {"command": "pytest"}, id="c_run"),
    ]
    provider = ScriptedProvider([Reply(tool_calls=calls), "done"])
    agent = Agent(provider, "m", tools=ToolSet([edit_file, execute_command]), context=ctx)
    events = await collect(agent.run([Message.user("fix it")]))
    edit, run = (e for e in events if isinstance(e, ToolResult))
    assert (edit.id, edit.status, edit.content) == (
        "c_e",
        "completed",
        "replaced 1 occurrence in f.py",
    )
    assert edit.diff == FileDiff(str(target), "x = 1\n", "x = 2\n")
    assert (run.id, run.status, run.diff) == ("c_run", "completed", None)
    assert client.calls[-1] == ("run", "pytest", work, 120, "c_run")
    assert ctx.call_id == ""  # each call got a copy of the context
