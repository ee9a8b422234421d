"""Summaries of a conversation's older messages, written by a model, for compaction.

The messages are told as plain text (who said what, each tool call and its result, long parts
cut short) and sent in chunks that fit the summarising model's window: each chunk's request
carries the summary so far, so the last answer summarises everything. A summary request that
would overflow is therefore never sent whole.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence

from openheim.errors import ProviderProtocolError
from openheim.messages import Message, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from openheim.providers.base import ModelRequest, Provider, complete
from openheim.providers.context import CHARS_PER_TOKEN

SUMMARY_SYSTEM = (
    "You compact a conversation between a user and an AI agent that works with tools. Write a "
    "summary the agent can continue from instead of the messages: the user's goals and "
    "requests, decisions made, facts learned (file paths, names, values, errors), what was "
    "done and what is still open. Be specific and brief; write only the summary."
)
CHUNK_SHARE = 0.5
"""Share of the summarising model's window one request may fill (the rest: its answer)."""
ANSWER_SHARE = 8
"""The summary may take up to 1/ANSWER_SHARE of the window, at most ``ANSWER_MAX`` tokens."""
ANSWER_MAX = 2048
PART_MAX = 4000
"""Longest tool argument or result told, in characters."""


def _short(text: str, limit: int = PART_MAX) -> str:
    return text if len(text) <= limit else text[:limit] + f" [... {len(text) - limit} more]"


def _lines(message: Message) -> Iterator[str]:
    who = "User" if message.role == "user" else "Assistant"
    for block in message.content:
        if isinstance(block, TextBlock) and block.text.strip():
            yield f"{who}: {block.text}"
        elif isinstance(block, ThinkingBlock) and block.thinking.strip():
            yield f"{who} (thinking): {_short(block.thinking)}"
        elif isinstance(block, ToolUseBlock):
            yield f"Tool call {block.name}: {_short(json.dumps(dict(block.arguments)))}"
        elif isinstance(block, ToolResultBlock):
            mark = " (error)" if block.is_error else ""
            yield f"Tool result{mark}: {_short(block.content)}"


def transcript(messages: Sequence[Message]) -> list[str]:
    """The messages as plain-text pieces, one per message (empty messages left out)."""
    pieces = ["\n".join(_lines(m)) for m in messages]
    return [p for p in pieces if p]


def chunks(pieces: Sequence[str], limit: int) -> list[str]:
    """The pieces joined into chunks of at most ``limit`` characters (a longer piece is cut)."""
    out: list[str] = []
    current = ""
    for piece in pieces:
        piece = _short(piece, limit - 32)  # room for the note of what was cut
        if current and len(current) + len(piece) + 2 > limit:
            out.append(current)
            current = ""
        current = f"{current}\n\n{piece}" if current else piece
    if current:
        out.append(current)
    return out


async def summarise(
    provider: Provider, model: str, prior: str | None, messages: Sequence[Message], window: int
) -> str:
    """A summary of ``prior`` (the summary of what came before, if any) and ``messages``,
    written by ``model`` in requests that fit its ``window`` (in tokens)."""
    answer = min(ANSWER_MAX, max(64, window // ANSWER_SHARE))
    room = int(window * CHUNK_SHARE) * CHARS_PER_TOKEN - len(SUMMARY_SYSTEM)
    summary = prior
    for chunk in chunks(transcript(messages), max(1000, room - answer * CHARS_PER_TOKEN)):
        told = _short(summary, answer * CHARS_PER_TOKEN) if summary else ""  # a model may overrun
        earlier = f"Summary of what came before:\n{told}\n\n" if told else ""
        text = f"{earlier}Messages to summarise:\n\n{chunk}"
        request = ModelRequest(
            model=model,
            messages=(Message.user(text),),
            system=SUMMARY_SYSTEM,
            tool_choice="none",
            max_tokens=answer,
        )
        summary = (await complete(provider, request)).message.text.strip()
        if not summary:
            raise ProviderProtocolError(
                f"the model {model} wrote an empty summary",
                hint="set [compaction] model to a model that follows instructions",
            )
    return summary or ""
