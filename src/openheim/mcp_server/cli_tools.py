"""The coding-agent CLI tools of ``openheim mcp serve``: ``claude_code``, ``codex``, ``opencode``.

Each runs its CLI (``openheim.cliagents``) once, non-interactively and contained as an agent,
on the call's ``prompt`` (or ``instruction``). A tool is offered only when its CLI's program is
found. The CLI works in one of two folders:

- ``cwd``: a folder inside the configured work dir (a relative one is taken inside it);
- else the private folder (mode 0700) of ``session_id``, made on its first use and kept while
  the server runs, so a later call with the same id sees the files of the earlier ones. A call
  with neither gets a new session id, returned with the result.

Progress notifications name what the CLI does (a tool, a command) while it runs; the result
carries the final text, the session id and the usage. A failure or a timeout is an ``isError``
result. A cancelled call, or a client that disconnects, stops the CLI with its process group.
"""

from __future__ import annotations

import atexit
import logging
import re
import shutil
import tempfile
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Final

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, TextContent
from pydantic import Field

from openheim.cliagents.argv import AGENT
from openheim.cliagents.parse import CliOutcome, CliProgress
from openheim.cliagents.process import DEFAULT_TIMEOUT
from openheim.cliagents.run import CliRequest, run_cli
from openheim.cliagents.spec import SPECS, CliName, find_binary
from openheim.config.load import Settings
from openheim.errors import ConfigError, ProviderError
from openheim.mcp_server.prompt import Progress, error_result

log = logging.getLogger(__name__)

TOOLS: Final[dict[str, tuple[CliName, str]]] = {
    "claude_code": ("claude", "Claude Code"),
    "codex": ("codex", "Codex"),
    "opencode": ("opencode", "OpenCode"),
}
SESSION_ID: Final = re.compile(r"[A-Za-z0-9_.:-]{1,128}")

Prompt = Annotated[str | None, Field(description="the task for the coding agent")]
Instruction = Annotated[str | None, Field(description="the task (another name for prompt)")]
SessionId = Annotated[
    str | None,
    Field(description="reuse this session's private folder (files of earlier calls are there)"),
]
Cwd = Annotated[
    str | None, Field(description="work in this folder instead; must be inside the work dir")
]


@dataclass(frozen=True)
class CliCall:
    """The arguments of one CLI tool call."""

    prompt: str | None = None
    instruction: str | None = None
    session_id: str | None = None
    cwd: str | None = None


class SessionFolders:
    """Private working folders by session id, removed when the server's process ends."""

    def __init__(self) -> None:
        self._root: Path | None = None
        self._folders: dict[str, Path] = {}

    def get(self, session_id: str) -> Path:
        if self._root is None:
            self._root = Path(tempfile.mkdtemp(prefix="openheim-mcp-cli-"))
            atexit.register(shutil.rmtree, self._root, True)
        folder = self._folders.get(session_id)
        if folder is None:
            folder = self._folders[session_id] = Path(tempfile.mkdtemp(dir=self._root))
        return folder


class CliToolRunner:
    """Runs the CLI tool calls of one server."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.folders = SessionFolders()

    async def __call__(
        self, cli: CliName, binary: str, call: CliCall, progress: Progress
    ) -> CallToolResult:
        task = call.prompt if call.prompt is not None else call.instruction
        if not task or not task.strip():
            return error_result("the prompt is empty: pass the task as `prompt`")
        try:
            folder, session_id = self._folder(call)
        except ValueError as err:
            return error_result(str(err))
        config = self.settings.cli_agents
        request = CliRequest(
            SPECS[cli],
            binary,
            task,
            folder,
            AGENT,
            timeout=config.timeout_secs or DEFAULT_TIMEOUT,
            env_allow=tuple(config.env_allow),
        )
        try:
            outcome = await _drive(request, progress)
        except ProviderError as err:
            return error_result(str(err))
        return _result(outcome, session_id)

    def _folder(self, call: CliCall) -> tuple[Path, str | None]:
        """The CLI's folder and the session id it belongs to (None for a ``cwd``)."""
        if call.cwd is not None:
            if call.session_id is not None:
                raise ValueError("pass session_id or cwd, not both")
            return _inside_work_dir(self.settings.work_dir, call.cwd), None
        session_id = call.session_id or uuid.uuid4().hex
        if not SESSION_ID.fullmatch(session_id):
            raise ValueError(
                "session_id may hold only letters, digits and _ . : - (1 to 128 of them)"
            )
        return self.folders.get(session_id), session_id


def _inside_work_dir(work_dir: Path, raw: str) -> Path:
    root = work_dir.resolve()
    path = (root / Path(raw).expanduser()).resolve()
    if not path.is_relative_to(root) or not path.is_dir():
        raise ValueError(f"cwd {raw!r} is not a folder inside the work dir {root}")
    return path


async def _drive(request: CliRequest, progress: Progress) -> CliOutcome:
    """Run the CLI to its end, reporting each thing it does as progress."""
    outcome = CliOutcome()
    count = 0
    async for item in run_cli(request):
        if isinstance(item, CliProgress):
            count += 1
            await progress(count, item.line)
        elif isinstance(item, CliOutcome):
            outcome = item
    return outcome


def _result(outcome: CliOutcome, session_id: str | None) -> CallToolResult:
    usage = outcome.usage.to_dict()
    structured: dict[str, Any] = {
        "text": outcome.text,
        "session_id": session_id,
        "cli_session_id": outcome.session_id,
        "usage": usage,
        "cost_usd": outcome.cost_usd,
    }
    tokens = f"{usage.get('input_tokens', 0)} in, {usage.get('output_tokens', 0)} out"
    footer = f"\n\n[session id: {session_id or 'none (cwd)'}; tokens: {tokens}]"
    return CallToolResult(
        content=[TextContent(type="text", text=outcome.text + footer)],
        structured_content=structured,
    )


ProgressOf = Callable[[Context], Progress]


def add_cli_tools(server: MCPServer, settings: Settings, progress_of: ProgressOf) -> None:
    """Register the tool of each CLI whose program is found."""
    runner = CliToolRunner(settings)
    for tool, (cli, title) in TOOLS.items():
        spec = SPECS[cli]
        try:
            binary = find_binary(spec)
        except ConfigError as err:
            log.warning("no %s tool: %s", tool, err)
            continue
        if binary is None:
            log.info("no %s tool: %s is not on PATH and %s is not set", tool, cli, spec.bin_env)
            continue
        description = (
            f"Run {title} non-interactively on a task, contained: it may read and edit files "
            "in its folder but runs no shell command and reaches no network tool. Pass "
            "session_id to keep working in the same private folder, or cwd for a folder "
            "inside the work dir."
        )
        server.add_tool(_tool(runner, cli, binary, progress_of), name=tool, description=description)


def _tool(
    runner: CliToolRunner, cli: CliName, binary: str, progress_of: ProgressOf
) -> Callable[..., Awaitable[CallToolResult]]:
    async def cli_tool(
        ctx: Context,
        prompt: Prompt = None,
        instruction: Instruction = None,
        session_id: SessionId = None,
        cwd: Cwd = None,
    ) -> CallToolResult:
        call = CliCall(prompt, instruction, session_id, cwd)
        return await runner(cli, binary, call, progress_of(ctx))

    return cli_tool
