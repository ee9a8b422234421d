"""The tool abstraction: a JSON schema, a typed argument model, capabilities and an async call."""

from __future__ import annotations

import fnmatch
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from pathlib import Path
from typing import Any

from openheim.child_env import child_env
from openheim.errors import ArgumentError, ConfigError
from openheim.events import FileDiff
from openheim.messages import ImageBlock
from openheim.providers.base import ToolSpec
from openheim.secrets import SecretPolicy
from openheim.tools.client_io import ClientIO
from openheim.tools.sandbox import PathSandbox
from openheim.tools.shell_sandbox import ShellSandbox
from openheim.typed import TypeCheckError, from_mapping, json_schema

MAX_RESULT_BYTES = 128 * 1024


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


class Tool(ABC):
    """Base class; subclasses set ``name``, ``description``, ``capabilities`` and ``args_model``."""

    name: str
    description: str
    capabilities: Capabilities
    args_model: type[Any]

    @cached_property
    def parameters(self) -> dict[str, Any]:
        return json_schema(self.args_model)

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


class ToolSet:
    """An ordered set of tools by name."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for t in tools:
            self.add(t)

    def add(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ConfigError(
                f"two tools are named {tool.name!r}",
                hint="rename one of them (a custom tool, or an MCP server's prefix)",
            )
        self._tools[tool.name] = tool

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

    @property
    def specs(self) -> tuple[ToolSpec, ...]:
        return tuple(t.spec for t in self._tools.values())

    def select(self, patterns: Sequence[str]) -> ToolSet:
        """The tools whose names match any fnmatch pattern (``["read_*", "search"]``)."""
        return ToolSet(
            t for t in self._tools.values() if any(fnmatch.fnmatchcase(t.name, p) for p in patterns)
        )

    def unmatched(self, patterns: Sequence[str]) -> list[str]:
        """The fnmatch patterns that match no tool of this set (a mistyped name, say)."""
        return [p for p in patterns if not any(fnmatch.fnmatchcase(n, p) for n in self._tools)]
