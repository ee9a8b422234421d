"""``EnvelopeProvider``: tool calling for models without it, as fenced JSON in the text.

The wrapper sends the inner provider no native tools. It puts the protocol and the tool list in
the system prompt, the envelope schema on the request (so llama.cpp can constrain decoding), and
history with calls and results as text. The inner ``tool_choice`` then only says whether the
block is optional (``auto``) or mandatory (``required``; a named tool is narrowed in the schema
and instructions); it is ``none`` when no tools are offered, with no schema.

While the reply streams, text is forwarded except the blocks: backticks that might open one are
held back until they are settled, and a block is never shown. At the end the reply is parsed
(see ``openheim.envelope.parse``): warnings become ``Notice`` events, the block's
``assistant_text`` a final ``TextDelta``, and the response carries the calls.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Iterable
from typing import Literal

from openheim.envelope.answer import answer_items, answer_opening, answer_turn
from openheim.envelope.fence import FenceSplitter, Segment, Text, split_text
from openheim.envelope.parse import parse_reply
from openheim.envelope.prompt import protocol_section, render_history, with_protocol
from openheim.envelope.schema import envelope_schema
from openheim.errors import ConfigError
from openheim.events import Notice, TextDelta
from openheim.messages import Message, TextBlock, ThinkingBlock
from openheim.providers.base import ModelRequest, ModelResponse, Provider, StreamItem

NO_TOOLS_NOTICE = "the model wrote an action block although no tools were offered; it was left out"
ENVELOPE_KINDS = frozenset({"llama_cpp", "llama_server", "claude_cli", "codex_cli", "opencode_cli"})
"""Provider kinds that use the envelope protocol unless configured otherwise."""


def protocol_for(kind: str, configured: str | None) -> Literal["native", "envelope"]:
    """The tool protocol for a provider: ``configured`` (the ``tool_protocol`` key) when set,
    else ``envelope`` for local llama.cpp kinds and ``native`` for the rest."""
    if configured == "native":
        return "native"
    if configured == "envelope" or (configured is None and kind in ENVELOPE_KINDS):
        return "envelope"
    if configured is None:
        return "native"
    raise ConfigError(
        f"tool_protocol {configured!r} is not a tool protocol",
        hint='set tool_protocol to "native" or "envelope", or leave it out',
    )


def envelope_request(request: ModelRequest, *, compact: bool = False) -> ModelRequest:
    """The request the inner provider gets (see the module docstring); ``compact`` gives the
    protocol in its short form, for a small model; when such a model must answer from tool
    results, its turn is told again as one message (``openheim.envelope.answer``), with the
    listing's names as ``answer_items`` when its answer is started."""
    if not request.tools or request.tool_choice == "none":
        told = answer_turn(request.messages) if compact else None
        return dataclasses.replace(
            request,
            messages=render_history(told or request.messages),
            tools=(),
            tool_choice="none",
            envelope_schema=None,
            answer_items=answer_items(request.messages) if told else (),
        )
    messages = render_history(request.messages)
    section = protocol_section(request.tools, request.tool_choice, compact=compact)
    return dataclasses.replace(
        request,
        messages=messages,
        system=with_protocol(request.system, section),
        tools=(),
        tool_choice="auto" if request.tool_choice == "auto" else "required",
        envelope_schema=envelope_schema(request.tools, request.tool_choice, required_only=compact),
    )


class EnvelopeProvider:
    """Wraps a provider; same protocol, with tools carried as action envelopes in the text."""

    def __init__(
        self, inner: Provider, *, compact: bool = False, starts_answer: bool = False
    ) -> None:
        """``starts_answer``: ``inner`` continues a last assistant message (see
        ``openheim.envelope.answer``); otherwise a small model's answer is not started for it."""
        self.inner = inner
        self.name = inner.name
        self.compact = compact
        self.starts_answer = starts_answer

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        splitter = FenceSplitter()
        sent = envelope_request(request, compact=self.compact)
        opening = answer_opening(sent.messages) if sent.tool_choice == "none" else ""
        if opening and not self.starts_answer:
            sent = dataclasses.replace(sent, messages=sent.messages[:-1], answer_items=())
            opening = ""
        if opening:
            yield TextDelta(opening)
        async for item in self.inner.stream(sent):
            if isinstance(item, TextDelta):
                for delta in _visible(splitter.feed(item.text)):
                    yield delta
            elif isinstance(item, ModelResponse):
                for delta in _visible(splitter.close()):
                    yield delta
                for final in _respond(item, request, opening):
                    yield final
            else:
                yield item


def _visible(segments: Iterable[Segment]) -> list[TextDelta]:
    return [TextDelta(s.text) for s in segments if isinstance(s, Text)]


def _respond(response: ModelResponse, request: ModelRequest, opening: str) -> list[StreamItem]:
    """The notices, the ``assistant_text`` delta and the response of a finished reply
    (``opening``: the start of an answer that was written for the model)."""
    message = response.message
    if not request.tools or request.tool_choice == "none":
        return _answer(response, opening)
    offered = [t.name for t in request.tools]
    cut = response.finish in ("max_tokens", "repetition")
    parsed = parse_reply(message.text, offered, truncated=cut)
    out: list[StreamItem] = [Notice(w, "warning", "provider") for w in parsed.warnings]
    if parsed.assistant_text:
        out.append(TextDelta(parsed.assistant_text))
    thinking = tuple(b for b in message.content if isinstance(b, ThinkingBlock))
    others = tuple(b for b in message.content if not isinstance(b, TextBlock | ThinkingBlock))
    content = (*thinking, *parsed.content, *others)
    finish = "tool_use" if parsed.calls or message.tool_uses else response.finish
    out.append(dataclasses.replace(response, message=Message(message.role, content), finish=finish))
    return out


def _answer(response: ModelResponse, opening: str) -> list[StreamItem]:
    """A reply when no tools were offered: ``opening`` and its text, any action block left out
    (with a notice), never a call."""
    segments = split_text(opening + response.message.text)
    text = "".join(s.text for s in segments if isinstance(s, Text)).strip()
    out: list[StreamItem] = []
    if any(not isinstance(s, Text) for s in segments):
        out.append(Notice(NO_TOOLS_NOTICE, "warning", "provider"))
    kept = tuple(b for b in response.message.content if not isinstance(b, TextBlock))
    content = (*kept, TextBlock(text)) if text else kept
    message = Message(response.message.role, content)
    out.append(dataclasses.replace(response, message=message))
    return out
