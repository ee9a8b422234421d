"""Fallback chain: when a provider is unavailable, the next one takes the same request.

A provider falls through when it fails before forwarding any content with an availability error
(unreachable, timed out, a cut stream, an overloaded or failing server, a bad key or a missing
model) after its own retries. A malformed request, a context overflow or a broken wire format
would fail the same way elsewhere, so they are raised at once. Each switch is announced with a
``Notice``.

Signatures (Anthropic's thinking signatures, Gemini's ``thoughtSignature``) are opaque data only
the model that made them can check; another provider refuses the request that carries them. So
the chain marks every signature in a response with the member that made it (``signed_by``) and
sends each member only its own: a foreign signature is removed, which turns that reasoning into
unsigned thinking that each wire format already handles (Anthropic drops it, Gemini sends it as a
thought, OpenAI never sends thinking). Signatures older than the chain (no ``signed_by``) count as
the primary's, whose session made them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Sequence
from typing import TypeAlias

from openheim.errors import (
    ContextOverflow,
    ProviderError,
    ProviderHTTPError,
    ProviderProtocolError,
    StreamCut,
)
from openheim.events import Notice
from openheim.messages import ContentBlock, Message, TextBlock, ThinkingBlock, ToolUseBlock
from openheim.providers.base import (
    ModelRequest,
    ModelResponse,
    Provider,
    StreamItem,
    closing_stream,
    is_content,
)

_FALL_THROUGH_STATUSES = frozenset({401, 403, 404})


def falls_through(error: ProviderError) -> bool:
    """Whether another provider could succeed where this one failed."""
    if isinstance(error, ContextOverflow):
        return False
    if isinstance(error, ProviderHTTPError):
        return error.retryable or error.status in _FALL_THROUGH_STATUSES
    if isinstance(error, ProviderProtocolError):
        return isinstance(error, StreamCut)
    return True


class FallbackProvider:
    """Tries ``(provider, model)`` pairs in order; the first pair is the primary."""

    def __init__(self, chain: Sequence[tuple[Provider, str]]) -> None:
        if not chain:
            raise ValueError("a fallback chain needs at least one provider")
        self.chain = list(chain)
        self.name = chain[0][0].name

    async def aclose(self) -> None:
        for provider, _ in self.chain:
            await provider.aclose()

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        for index, (provider, model) in enumerate(self.chain):
            attempt = request if index == 0 else dataclasses.replace(request, model=model)
            signer = f"{provider.name}/{attempt.model}"
            own = tuple(only_own_signatures(m, signer, index == 0) for m in attempt.messages)
            attempt = dataclasses.replace(attempt, messages=own)
            forwarded = False
            try:
                async with closing_stream(provider.stream(attempt)) as stream:
                    async for item in stream:
                        forwarded = forwarded or is_content(item)
                        if isinstance(item, ModelResponse):
                            item = dataclasses.replace(item, message=signed(item.message, signer))
                        yield item
                return
            except ProviderError as err:
                last = index == len(self.chain) - 1
                if forwarded or last or not falls_through(err):
                    raise
                following = self.chain[index + 1][0].name
                yield Notice(
                    f"provider {provider.name!r} failed ({err.message}); "
                    f"falling back to {following!r}",
                    "warning",
                    "provider",
                )


Signable: TypeAlias = TextBlock | ThinkingBlock | ToolUseBlock


def signed(message: Message, signer: str) -> Message:
    """``message`` with ``signed_by`` set to ``signer`` on every block that carries a signature."""
    return Message(message.role, tuple(_sign(block, signer) for block in message.content))


def _sign(block: ContentBlock, signer: str) -> ContentBlock:
    if isinstance(block, Signable) and block.signature and block.signed_by is None:
        return dataclasses.replace(block, signed_by=signer)
    return block


def only_own_signatures(message: Message, signer: str, primary: bool) -> Message:
    """``message`` without the signatures that ``signer`` did not make (unmarked ones are the
    primary's)."""
    return Message(message.role, tuple(_own(block, signer, primary) for block in message.content))


def _own(block: ContentBlock, signer: str, primary: bool) -> ContentBlock:
    if not isinstance(block, Signable) or not block.signature:
        return block
    if block.signed_by == signer or (block.signed_by is None and primary):
        return block
    return dataclasses.replace(block, signature=None, signed_by=None)
