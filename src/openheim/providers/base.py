"""The provider protocol: one streaming method; everything else drains it.

A provider turns a ``ModelRequest`` into a stream of ``TextDelta`` / ``ThinkingDelta`` items
(and, from the retry and fallback wrappers, ``RetryNotice`` / ``Notice``) that ends with exactly
one ``ModelResponse`` holding the complete assistant message.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Literal, Protocol, TypeAlias, TypeVar, runtime_checkable

from openheim.errors import ProviderProtocolError
from openheim.events import (
    ContextCompacted,
    ContextTrimmed,
    Notice,
    RetryNotice,
    TextDelta,
    ThinkingDelta,
)
from openheim.messages import FinishReason, Message, Usage

_Item = TypeVar("_Item")


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What the model sees of a tool: its name, description and JSON schema of its arguments."""

    name: str
    description: str
    parameters: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class NamedTool:
    """``tool_choice`` that forces one named tool."""

    name: str


ToolChoice: TypeAlias = Literal["auto", "none", "required"] | NamedTool


ENVELOPE_FENCE = "openheim-agent"
"""The info string of the fenced block that carries actions in the envelope tool protocol."""


@dataclass(frozen=True, slots=True)
class ModelRequest:
    model: str
    messages: tuple[Message, ...]
    system: str | None = None
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: ToolChoice = "auto"
    max_tokens: int | None = None
    temperature: float | None = None
    envelope_schema: Mapping[str, Any] | None = None
    """JSON schema of the action envelope, when tools travel as fenced JSON in the text (the
    envelope protocol): providers that can constrain decoding (llama.cpp) use it so every reply
    parses; others ignore it."""
    answer_items: tuple[str, ...] = ()
    """When the request ends with a started answer that lists them (a folder's entries), the
    items the reply may go on with: providers that can constrain decoding (llama.cpp) hold it to
    some of them, in their order, each once, joined by ``, `` and ended by ``.`` (see
    ``openheim.providers.llama_grammars``); others ignore it."""


@dataclass(frozen=True, slots=True)
class ModelResponse:
    """The complete result of one model call; always the last item of a stream."""

    message: Message
    finish: FinishReason
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    raw_finish: str | None = None
    """The provider's own finish reason, before mapping."""
    type: Literal["response"] = "response"


StreamItem: TypeAlias = (
    TextDelta
    | ThinkingDelta
    | RetryNotice
    | ContextTrimmed
    | ContextCompacted
    | Notice
    | ModelResponse
)


def is_content(item: StreamItem) -> bool:
    """Whether a stream item is model output (as opposed to a notice about the call)."""
    return isinstance(item, TextDelta | ThinkingDelta | ModelResponse)


@runtime_checkable
class Provider(Protocol):
    """A model backend. ``stream`` must end with one ``ModelResponse`` or raise ProviderError;
    ``aclose`` releases what the provider holds (HTTP clients, processes, files) and is called
    once, when the session that created it closes."""

    name: str

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]: ...

    async def aclose(self) -> None: ...


async def complete(provider: Provider, request: ModelRequest) -> ModelResponse:
    """The non-streaming call: drain ``stream`` and return its response."""
    response: ModelResponse | None = None
    async for item in provider.stream(request):
        if isinstance(item, ModelResponse):
            response = item
    if response is None:
        raise ProviderProtocolError(
            f"provider {provider.name!r} ended its stream without a response",
            hint="the provider implementation is broken; report it",
            provider=provider.name,
        )
    return response


@dataclass(frozen=True, slots=True)
class ProviderSettings:
    """Everything needed to build a provider, resolved from config, environment and flags."""

    name: str
    kind: str
    api_base: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    timeout_secs: float = 120.0
    max_tokens: int | None = None
    context_window: int | None = None
    thinking: str | int | None = None
    """``"adaptive"``, ``"off"`` or a thinking token budget (providers that think)."""
    reasoning_effort: str | None = None
    """OpenAI reasoning models: ``minimal``, ``low``, ``medium`` or ``high``."""
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    max_retries: int = 3
    fallback: tuple[str, ...] = ()
    tool_protocol: str | None = None
    """``native`` or ``envelope``; None picks the kind's default."""
    data_dir: Path = field(default_factory=lambda: Path.home() / ".openheim")
    model_path: str | None = None
    """Local kinds: a GGUF file (else ``model`` names one, else the shipped default)."""
    n_ctx: int | None = None
    n_threads: int | None = None
    seed: int | None = None
    temperature: float | None = None
    server_command: tuple[str, ...] = ()
    """``llama_server``: the server program and leading arguments; empty picks ``llama-server``
    on PATH, else ``python -m llama_cpp.server``."""
    host: str = "127.0.0.1"
    port: int | None = None
    """``llama_server``: the port to serve on; None picks a free one."""
    port_policy: str = "next-free"
    """``llama_server``, when ``port`` is taken: ``fail``, ``reuse`` or ``next-free``."""
    startup_timeout: float = 120.0
    """``llama_server``: seconds a starting server gets to answer ``/v1/models``."""
    small: bool = False
    """A small model: it gets the compact system prompt and tool descriptions."""
    tool_rounds: int | None = None
    """Rounds of tool calls per prompt after which the model is asked for its answer, with no
    tools offered (None: no such limit; ``max_iterations`` still applies)."""
    tool_choice: Literal["auto", "required"] = "auto"
    """The first model call's tool choice in each prompt, when the surface asks for none
    (``run --tool-choice`` wins): ``required`` makes the first reply a tool call."""
    prefix_cache_mb: int = 256
    """``llama_cpp``: the most megabytes of evaluated prompt prefixes kept on disk (0: none)."""
    cli_path: str | None = None
    """``*_cli`` kinds: the CLI's program (else its variable, else ``PATH``)."""
    cli_env_allow: tuple[str, ...] = ()
    """``*_cli`` kinds: more variables (names or globs) passed to the CLI."""


class closing_stream(Generic[_Item]):
    """``async with closing_stream(provider.stream(...)) as items``: the stream, closed when the
    block ends, also when it ends by a cancel. An async generator left suspended is closed only
    by the event loop as it shuts down, all at once with the others of its chain, where one of
    them can find its inner generator already closed and fail."""

    def __init__(self, stream: AsyncIterator[_Item]) -> None:
        self.stream = stream

    async def __aenter__(self) -> AsyncIterator[_Item]:
        return self.stream

    async def __aexit__(self, *exc: object) -> None:
        close = getattr(self.stream, "aclose", None)
        if close is not None:
            await close()
