"""``ScriptedProvider``: a provider that plays back a script, for testing agents without a model.

A script is a queue of steps, one per model call:

* a ``str``: the model answers with that text;
* a ``Reply``: text (optionally as explicit stream chunks), thinking, tool calls, finish, usage;
* an exception instance: the call raises it;
* a callable ``(request) -> step``: reacts to the request (it may be async, and may itself be an
  async generator yielding raw stream items that end with a ``ModelResponse``).

Every request is recorded in ``requests``. A call with no step left raises ``ScriptError``;
``assert_done()`` (or leaving a ``with`` block) raises if steps are left over.
"""

from __future__ import annotations

import inspect
import itertools
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, TypeAlias, cast

from openheim.errors import ScriptError
from openheim.events import TextDelta, ThinkingDelta
from openheim.messages import (
    ContentBlock,
    FinishReason,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    Usage,
)
from openheim.providers.base import ModelRequest, ModelResponse, StreamItem

_ids = itertools.count(1)


def tool_call(
    name: str, arguments: Mapping[str, Any] | None = None, *, id: str | None = None
) -> ToolUseBlock:
    """A tool call for a ``Reply`` (ids are generated when not given)."""
    return ToolUseBlock(id or f"call_{next(_ids)}", name, dict(arguments or {}))


@dataclass(frozen=True)
class Reply:
    """One scripted model response."""

    text: str = ""
    chunks: Sequence[str] | None = None
    """Stream the text in exactly these pieces (their concatenation is the text)."""
    thinking: str = ""
    signature: str | None = None
    tool_calls: Sequence[ToolUseBlock] = ()
    finish: FinishReason | None = None
    """Defaults to ``tool_use`` when there are tool calls, else ``end_turn``."""
    usage: Usage = field(default_factory=lambda: Usage(input_tokens=10, output_tokens=5))

    def response(self, model: str) -> ModelResponse:
        text = "".join(self.chunks) if self.chunks is not None else self.text
        blocks: list[ContentBlock] = []
        if self.thinking or self.signature:
            blocks.append(ThinkingBlock(self.thinking, self.signature))
        if text:
            blocks.append(TextBlock(text))
        blocks.extend(self.tool_calls)
        finish = self.finish or ("tool_use" if self.tool_calls else "end_turn")
        return ModelResponse(Message("assistant", tuple(blocks)), finish, self.usage, model, finish)

    async def stream(self, model: str) -> AsyncIterator[StreamItem]:
        if self.thinking:
            yield ThinkingDelta(self.thinking)
        pieces = self.chunks if self.chunks is not None else ([self.text] if self.text else [])
        for piece in pieces:
            yield TextDelta(piece)
        yield self.response(model)


Step: TypeAlias = "str | Reply | BaseException | Callable[[ModelRequest], Any]"


class ScriptedProvider:
    """A Provider that answers from a script and records every request."""

    def __init__(self, steps: Iterable[Step] = (), *, name: str = "scripted") -> None:
        self.name = name
        self.requests: list[ModelRequest] = []
        self._steps: deque[Step] = deque(steps)

    def add(self, *steps: Step) -> None:
        self._steps.extend(steps)

    @property
    def remaining(self) -> int:
        return len(self._steps)

    def assert_done(self) -> None:
        if self._steps:
            raise ScriptError(
                f"{len(self._steps)} scripted step(s) were never used: {list(self._steps)!r}"
            )

    async def aclose(self) -> None:
        """Nothing to release: the script lives in memory."""

    def __enter__(self) -> ScriptedProvider:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.assert_done()

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        self.requests.append(request)
        if not self._steps:
            last = request.messages[-1].text[:80] if request.messages else ""
            raise ScriptError(
                f"unexpected model call #{len(self.requests)}: the script is used up "
                f"(last message: {last!r})"
            )
        step: Any = self._steps.popleft()
        if callable(step) and not isinstance(step, BaseException):
            step = step(request)
            if inspect.isasyncgen(step):
                async for item in step:
                    yield cast("StreamItem", item)
                return
            if inspect.isawaitable(step):
                step = await _await(step)
        if isinstance(step, BaseException):
            raise step
        reply = Reply(text=step) if isinstance(step, str) else step
        if not isinstance(reply, Reply):
            raise ScriptError(f"a script step must give a str, Reply or exception, not {step!r}")
        async for item in reply.stream(request.model):
            yield item


async def _await(value: Awaitable[Any]) -> Any:
    return await value
