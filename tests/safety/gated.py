"""Run scripted tool calls through the agent loop behind a real policy gate, in a real work dir,
with the built-in file tools or the staging tools; record what the resolver was asked."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeAlias, cast

from openheim.approval import (
    Allow,
    ApprovalGate,
    ApprovalRequest,
    Ask,
    Deny,
    Resolver,
    Verdict,
)
from openheim.config.schema import ApprovalMode
from openheim.events import Event, ToolResult
from openheim.loop import Agent
from openheim.messages import Message, ToolResultBlock
from openheim.process.child_env import child_env
from openheim.providers.base import ModelRequest
from openheim.safety.policy import PolicyGate
from openheim.safety.risk import RiskAssessor
from openheim.safety.rules import RuleSet, parse_rule
from openheim.safety.staging import StagedApplyGate, StagingArea, staging_tools
from openheim.testing import Reply, ScriptedProvider, tool_call
from openheim.tools.base import ToolContext, ToolSet
from openheim.tools.builtin import builtin_tools
from openheim.tools.sandbox import PathSandbox
from tests.helpers import collect

Mode: TypeAlias = Literal["auto", "ask headless", "ask approving"]
MODES: tuple[Mode, ...] = ("auto", "ask headless", "ask approving")


@dataclass
class Asker:
    """A resolver that answers every question the same way and keeps what it was asked."""

    allow: bool = True
    asked: list[tuple[ApprovalRequest, Ask]] = field(default_factory=list)

    async def __call__(self, request: ApprovalRequest, ask: Ask) -> Allow | Deny:
        self.asked.append((request, ask))
        return Allow() if self.allow else Deny("the test said no")


class PreviewAsking:
    """A gate that asks about every preview call and leaves the rest to ``inner``."""

    def __init__(self, inner: ApprovalGate) -> None:
        self.inner = inner

    async def check(self, request: ApprovalRequest) -> Verdict:
        if request.tool.startswith("preview_"):
            return Ask("show the preview?")
        return await self.inner.check(request)


@dataclass
class Outcome:
    events: list[Event]
    asked: list[tuple[ApprovalRequest, Ask]]

    @property
    def results(self) -> list[ToolResult]:
        return [e for e in self.events if isinstance(e, ToolResult)]


def apply_token(request: ModelRequest) -> Reply:
    """A scripted step: apply the token the last preview returned."""
    last = request.messages[-1].content[0]
    assert isinstance(last, ToolResultBlock)
    token = re.search(r"chg_[0-9a-f]+", last.content)
    assert token, last.content
    return Reply(tool_calls=[tool_call("apply_file_change", {"token": token[0]})])


async def attempt(
    work: Path,
    mode: Mode | ApprovalMode,
    steps: Sequence[Any],
    *,
    rules: Sequence[str] = (),
    staged: bool = False,
    resolver: Resolver | None = None,
    ask_previews: bool = False,
) -> Outcome:
    """Play ``steps`` (then "done") through the loop; ``mode`` names the policy and the asker."""
    box_mode = cast("ApprovalMode", mode.split()[0])  # "ask headless" -> ask
    asker = Asker() if mode == "ask approving" else None
    # no deny-read policy: .envrc would be refused as a secret before approval mattered
    ctx = ToolContext(PathSandbox(work), work, child_env(), secret_policy=None)
    gate: ApprovalGate = PolicyGate(
        box_mode,
        RuleSet(tuple(parse_rule(r) for r in rules)),
        ctx.sandbox,
        risk=RiskAssessor(ctx.sandbox, temp_dirs=[]),
    )
    tools = builtin_tools(allow_shell=False)
    if ask_previews:
        gate = PreviewAsking(gate)
    if staged:
        area = StagingArea("test")
        gate = StagedApplyGate(gate, area)
        tools = ToolSet([*tools, *staging_tools(area)])
    provider = ScriptedProvider([*steps, "done"])
    agent = Agent(provider, "m", tools=tools, gate=gate, resolver=resolver or asker, context=ctx)
    events = await collect(agent.run([Message.user("go")]))
    return Outcome(events, asker.asked if asker else [])


def write(path: str, content: str = "planted\n") -> Reply:
    return Reply(tool_calls=[tool_call("write_file", {"path": path, "content": content})])


def preview(path: str, content: str = "planted\n") -> Reply:
    return Reply(tool_calls=[tool_call("preview_write_file", {"path": path, "content": content})])
