"""The MCP server of ``openheim mcp serve``: its tools, and serving them on stdio.

Tools: ``openheim`` (a prompt through our own agent), ``agent__NAME`` for each agent profile
(with the profile's description), the JSON-schema tools, and ``claude_code``, ``codex`` and
``opencode`` where those CLIs are installed (``cli_tools``). Each tool hands its arguments to
the runtime (``prompt``) or to ``schemas``; tool errors come back as ``isError`` results. The
JSON-schema tools are annotated read-only (``readOnlyHint``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.stdio import stdio_server
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import Field

from openheim._version import __version__
from openheim.events import Notice
from openheim.mcp_server.cli_tools import add_cli_tools
from openheim.mcp_server.elicit import resolver_for
from openheim.mcp_server.parse_errors import AnsweredReads
from openheim.mcp_server.prompt import Progress, PromptCall, PromptRunner
from openheim.mcp_server.schemas import (
    configured_schema,
    example_result,
    submit_result,
    validate_result,
)
from openheim.runtime import Runtime, subagents

log = logging.getLogger(__name__)

TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,120}")
"""The agent profile names that can be part of a tool name (MCP tool names are this charset)."""

OPENHEIM_HELP = (
    "Run a task with the openheim agent and return its final answer, stop reason and session "
    "id. Pass session_id to continue a stored session."
)

Prompt = Annotated[str, Field(description="the task, as you would type it to the agent")]
SessionId = Annotated[
    str | None, Field(description="continue this stored session (id or unique prefix)")
]
Cwd = Annotated[
    str | None, Field(description="the session's folder; must be inside the configured work dir")
]
Model = Annotated[str | None, Field(description="a model of the configured provider")]
AgentName = Annotated[str | None, Field(description="run this agent profile as the agent")]
Schema = Annotated[
    dict[str, Any] | None,
    Field(description="the JSON schema (an object); default: the server's configured schema"),
]
Data = Annotated[Any, Field(description="the JSON value to check against the schema")]
READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
"""The JSON-schema tools only compute: a client may run them without asking (Codex asks
before any tool not marked read-only)."""


def build_server(runtime: Runtime, runner: PromptRunner) -> MCPServer:
    """The server with every tool, over ``runtime``; ``runner`` runs the prompt tools (the
    caller closes it when the server stops)."""
    server = MCPServer("openheim", version=__version__, instructions=OPENHEIM_HELP)
    _add_prompt_tool(server, runner)
    _add_agent_tools(server, runner)
    _add_schema_tools(server, configured_schema(runtime.settings))
    add_cli_tools(server, runtime.settings, _progress)
    return server


def _progress(ctx: Context) -> Progress:
    async def report(count: float, line: str) -> None:
        await ctx.report_progress(count, None, line)

    return report


def _add_prompt_tool(server: MCPServer, runner: PromptRunner) -> None:
    async def openheim(
        prompt: Prompt,
        ctx: Context,
        session_id: SessionId = None,
        agent: AgentName = None,
        model: Model = None,
        cwd: Cwd = None,
    ) -> CallToolResult:
        call = PromptCall(prompt, session_id, agent, model, cwd)
        return await runner(call, _progress(ctx), resolver_for(ctx))

    server.add_tool(openheim, name="openheim", description=OPENHEIM_HELP)


def _add_agent_tools(server: MCPServer, runner: PromptRunner) -> None:
    """One ``agent__NAME`` tool per agent profile whose name fits a tool name."""
    notices: list[Notice] = []
    for name, profile in sorted(subagents.profiles_for(runner.runtime.settings, notices).items()):
        if not TOOL_NAME.fullmatch(name):
            log.warning("agent profile %r has no tool: its name is not a valid tool name", name)
            continue
        description = profile.description or f"Run a task with the {name} agent."
        server.add_tool(_agent_tool(runner, name), name=f"agent__{name}", description=description)
    for notice in notices:
        log.warning("%s", notice.message)


def _agent_tool(runner: PromptRunner, name: str) -> Callable[..., Awaitable[CallToolResult]]:
    async def agent_tool(
        prompt: Prompt, ctx: Context, session_id: SessionId = None, cwd: Cwd = None
    ) -> CallToolResult:
        call = PromptCall(prompt, session_id, name, None, cwd)
        return await runner(call, _progress(ctx), resolver_for(ctx))

    return agent_tool


def _add_schema_tools(server: MCPServer, configured: dict[str, Any] | None) -> None:
    """The JSON-schema tools; a call without ``schema`` uses ``[mcp_server] schema``."""

    def validate_json(data: Data, schema: Schema = None) -> CallToolResult:
        return validate_result(configured if schema is None else schema, data)

    def json_example(schema: Schema = None) -> CallToolResult:
        return example_result(configured if schema is None else schema)

    def submit(data: Data, schema: Schema = None) -> CallToolResult:
        return submit_result(configured if schema is None else schema, data)

    server.add_tool(
        validate_json,
        description="Check a JSON value against a JSON schema; every error with its path.",
        annotations=READ_ONLY,
    )
    server.add_tool(
        json_example,
        description="An example JSON value shaped like a schema.",
        annotations=READ_ONLY,
    )
    server.add_tool(
        submit,
        description="Submit the final JSON result: accepted and handed back when it is valid "
        "against the schema, else every error to fix.",
        annotations=READ_ONLY,
    )


async def serve_stdio(runtime: Runtime) -> None:
    """Serve the tools on this process's stdin and stdout until the client closes them; a
    line that cannot be read is answered with a JSON-RPC error (``AnsweredReads``).

    This is ``MCPServer.run_stdio_async`` with the read stream wrapped: the SDK offers no
    other hook for what its transport could not decode."""
    runner = PromptRunner(runtime)
    lowlevel = build_server(runtime, runner)._lowlevel_server
    try:
        async with stdio_server() as (read, write):
            options = lowlevel.create_initialization_options()
            await lowlevel.run(AnsweredReads(read, write), write, options)
    finally:
        await runner.aclose()
