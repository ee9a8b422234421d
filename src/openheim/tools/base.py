"""The tool abstraction: a JSON schema, a typed argument model, capabilities and an async call."""

from __future__ import annotations

import asyncio
import fnmatch
import logging
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Coroutine, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol

from openheim.errors import ArgumentError, ConfigError, ToolError
from openheim.events import FileDiff
from openheim.formats.typed import TypeCheckError, from_mapping, json_schema
from openheim.messages import ImageBlock, ToolUseBlock
from openheim.process.child_env import child_env
from openheim.providers.base import ToolSpec
from openheim.redaction.secrets import SecretPolicy
from openheim.tools.client_io import ClientIO
from openheim.tools.sandbox import PathSandbox
from openheim.tools.shell_sandbox import ShellSandbox

log = logging.getLogger(__name__)

MAX_RESULT_BYTES = 128 * 1024
_SCHEMAS: weakref.WeakKeyDictionary[type[Any], dict[str, Any]] = weakref.WeakKeyDictionary()
"""Each argument model's JSON schema (see ``Tool.parameters``)."""


class ToolKind(StrEnum):
    """What a tool does, in the Agent Client Protocol's terms (drives icons and approvals)."""

    READ = "read"
    EDIT = "edit"
    DELETE = "delete"
    MOVE = "move"
    SEARCH = "search"
    EXECUTE = "execute"
    THINK = "think"
    FETCH = "fetch"
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class Capabilities:
    """``read_only`` tools may run concurrently and are allowed in read-only mode."""

    read_only: bool
    kind: ToolKind = ToolKind.OTHER


class FileWatch(Protocol):
    """Told about every file a tool writes, before and after (the runtime keeps checkpoints
    for undo and runs ``file_write`` hooks); ``path`` is the resolved path in the sandbox."""

    async def before_write(self, path: Path) -> None: ...

    async def written(self, path: Path) -> None: ...


@dataclass(slots=True)
class ToolContext:
    """What a running tool may use: the sandbox, the session cwd and the child environment."""

    sandbox: PathSandbox
    cwd: Path
    env: Mapping[str, str] = field(default_factory=child_env)
    """The environment of child processes: the parent's, without secrets (``child_env``)."""
    secret_policy: SecretPolicy | None = field(default_factory=SecretPolicy.from_config)
    """Deny-read globs: files no tool reads or writes (None: no file is held back)."""
    client: ClientIO | None = None
    """File and terminal access offered by the session's client (an ACP editor), if any."""
    call_id: str = ""
    """The id of the tool call being run (the loop sets it for each call)."""
    shell_sandbox: ShellSandbox = field(default_factory=ShellSandbox)
    """How shell commands are confined (default: in the OS sandbox where there is one)."""
    watch: FileWatch | None = None
    """Told before and after each file a tool writes (None: no one is watching)."""

    async def before_write(self, path: Path) -> None:
        """Call before writing ``path``: its prior content may be kept for undo."""
        if self.watch is not None:
            await self.watch.before_write(path)

    async def written(self, path: Path) -> None:
        """Call after writing ``path`` (a write that failed is not reported: the writes are
        atomic, so the file is as it was)."""
        if self.watch is not None:
            await self.watch.written(path)

    def path(self, raw: str, *, write: bool = False) -> Path:
        """Resolve a path argument inside the sandbox; a file matching the secret policy is
        refused, a folder may still be listed (raises SandboxError)."""
        resolved = self.sandbox.resolve(raw, self.cwd, write=write)
        if self.secret_policy is not None:
            self.secret_policy.check(resolved, self.display(resolved))
        return resolved

    def is_secret(self, path: Path) -> bool:
        """Whether a file met on a walk matches the secret policy (its name may be shown)."""
        policy = self.secret_policy
        return policy is not None and policy.match(path, self.display(path)) is not None

    def display(self, path: Path) -> str:
        """A path as the model should see it: relative to the work dir when inside it."""
        return self.sandbox.display(path)


@dataclass(frozen=True, slots=True)
class ToolOutput:
    content: str
    is_error: bool = False
    images: tuple[ImageBlock, ...] = ()
    diff: FileDiff | None = None
    """For a file edit: the text before and after, for surfaces that show diffs."""

    @classmethod
    def failure(cls, message: str) -> ToolOutput:
        """An error result: what went wrong, for the model to read."""
        return cls(message, is_error=True)


class Tool(ABC):
    """Base class; subclasses set ``name``, ``description``, ``capabilities`` and ``args_model``.

    It holds no instance fields itself (empty ``__slots__``), so a subclass with slots of its
    own (``FunctionTool``, made per session) needs no per-instance dict."""

    __slots__ = ()
    name: str
    description: str
    capabilities: Capabilities
    args_model: type[Any]

    @cached_property
    def parameters(self) -> dict[str, Any]:
        """The JSON schema of ``args_model``, made once per model class (every session builds
        its own tool objects over the same classes); callers only read it."""
        schema = _SCHEMAS.get(self.args_model)
        if schema is None:
            schema = _SCHEMAS[self.args_model] = json_schema(self.args_model)
        return schema

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.parameters)

    def parse(self, arguments: Mapping[str, Any]) -> Any:
        """Validate raw arguments into ``args_model`` (raises ArgumentError)."""
        try:
            return from_mapping(self.args_model, arguments)
        except TypeCheckError as err:
            raise ArgumentError(
                f"invalid arguments for {self.name}: {err}",
                hint=f"call {self.name} again with arguments matching its schema",
            ) from None

    @abstractmethod
    async def call(self, args: Any, ctx: ToolContext) -> ToolOutput:
        """Run with validated arguments; raise ToolError for failures the model should see."""


def cap_output(text: str, limit: int = MAX_RESULT_BYTES) -> str:
    """Cut ``text`` to ``limit`` UTF-8 bytes at a line boundary, with a truncation note."""
    data = text.encode("utf-8", "surrogateescape")
    if len(data) <= limit:
        return text
    head = data[:limit]
    cut = head.rfind(b"\n")
    if cut > limit // 2:
        head = head[: cut + 1]
    kept = head.decode("utf-8", "ignore")
    return (
        f"{kept}\n[output truncated: showed {len(head)} of {len(data)} bytes; "
        "narrow the request (a smaller range, a more specific pattern) to see the rest]"
    )


@dataclass(frozen=True, slots=True)
class BoundCall:
    """A tool call whose tool was found and whose arguments were validated: ready to run."""

    call: ToolUseBlock
    tool: Tool
    args: Any

    @property
    def read_only(self) -> bool:
        return self.tool.capabilities.read_only

    async def run(self, ctx: ToolContext) -> ToolOutput:
        """Run the tool with ``ctx`` for this call; a failure becomes an error output the model
        can read (an unexpected exception is also logged), a long output is capped."""
        name = self.call.name
        try:
            output = await self.tool.call(self.args, replace(ctx, call_id=self.call.id))
        except ToolError as err:
            return ToolOutput.failure(str(err))
        except Exception as err:
            log.warning("tool %s raised", name, exc_info=True)
            return ToolOutput.failure(f"tool {name} failed: {type(err).__name__}: {err}")
        return replace(output, content=cap_output(output.content))


async def run_batched(
    calls: Sequence[BoundCall], execute: Callable[[BoundCall], Coroutine[Any, Any, None]]
) -> None:
    """``execute`` every call in call order: consecutive read-only calls concurrently, a
    mutating call alone, after the calls before it and before the calls after it."""
    batch: list[BoundCall] = []
    for bound in calls:
        if bound.read_only:
            batch.append(bound)
            continue
        await _run_together(batch, execute)
        batch = []
        await execute(bound)
    await _run_together(batch, execute)


async def _run_together(
    batch: list[BoundCall], execute: Callable[[BoundCall], Coroutine[Any, Any, None]]
) -> None:
    if len(batch) == 1:
        await execute(batch[0])
    elif batch:
        async with asyncio.TaskGroup() as group:
            for bound in batch:
                group.create_task(execute(bound))


class ToolSet:
    """An ordered set of tools by name."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._specs: tuple[ToolSpec, ...] | None = None
        for t in tools:
            self.add(t)

    def add(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ConfigError(
                f"two tools are named {tool.name!r}",
                hint="rename one of them (a custom tool, or an MCP server's prefix)",
            )
        self._tools[tool.name] = tool
        self._specs = None

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def kind_of(self, name: str) -> ToolKind:
        """The kind of the tool called ``name``; ``other`` for a name not in the set."""
        tool = self._tools.get(name)
        return tool.capabilities.kind if tool is not None else ToolKind.OTHER

    def bind(self, call: ToolUseBlock) -> BoundCall | ToolOutput:
        """The call bound to its tool with validated arguments, or the error output the model
        should read instead: the provider could not parse the call, the tool is unknown (the
        output names the available ones), or the arguments are not a JSON object or do not
        match the tool's schema."""
        if call.error is not None:
            return ToolOutput.failure(call.error)
        tool = self._tools.get(call.name)
        if tool is None:
            names = ", ".join(self._tools) or "none"
            return ToolOutput.failure(f"unknown tool {call.name!r}; available tools: {names}")
        if call.raw_arguments is not None:
            return ToolOutput.failure(
                f"arguments for {call.name} are not a JSON object: {call.raw_arguments[:200]!r}; "
                "send the arguments as one JSON object matching the tool's schema"
            )
        try:
            args = tool.parse(call.arguments)
        except ToolError as err:
            return ToolOutput.failure(str(err))
        return BoundCall(call, tool, args)

    @property
    def specs(self) -> tuple[ToolSpec, ...]:
        """What the model sees of each tool, made once per set and kept (every model call
        sends them; a tool's name, description and schema are fixed once it is made)."""
        if self._specs is None:
            self._specs = tuple(t.spec for t in self._tools.values())
        return self._specs

    def select(self, patterns: Sequence[str]) -> ToolSet:
        """The tools whose names match any fnmatch pattern (``["read_*", "search"]``)."""
        return ToolSet(
            t for t in self._tools.values() if any(fnmatch.fnmatchcase(t.name, p) for p in patterns)
        )

    def unmatched(self, patterns: Sequence[str]) -> list[str]:
        """The fnmatch patterns that match no tool of this set (a mistyped name, say)."""
        return [p for p in patterns if not any(fnmatch.fnmatchcase(n, p) for n in self._tools)]
