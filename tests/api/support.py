"""Helpers shared by the ``Session`` and ``Runtime`` tests: awaiting, event picking, small tools."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable
from typing import TypeVar

from openheim.api import Session
from openheim.events import Event, Finished, ToolResult
from openheim.messages import Message, ToolResultBlock
from openheim.testing import Reply, tool_call
from openheim.tools.base import ToolContext
from openheim.tools.decorator import tool

T = TypeVar("T")

MUTATING = {"write_file", "edit_file"}


async def soon(awaitable: Awaitable[T]) -> T:
    """Await with a deadline, so a broken test fails instead of hanging."""
    return await asyncio.wait_for(awaitable, timeout=5)


def busy(session: Session) -> bool:
    """``session.busy`` (a call, so that mypy does not narrow the property)."""
    return session.busy


def read_only(session: Session) -> bool:
    return session.read_only


def finished(events: list[Event]) -> Finished:
    assert sum(isinstance(e, Finished) for e in events) == 1
    last = events[-1]
    assert isinstance(last, Finished)
    return last


def results(events: list[Event]) -> list[ToolResult]:
    return [e for e in events if isinstance(e, ToolResult)]


def tool_answer(message: Message) -> ToolResultBlock:
    block = message.content[0]
    assert isinstance(block, ToolResultBlock)
    return block


def secret_key() -> str:
    """A key in no well-known format, so only its registration can redact it."""
    return f"plainkey{uuid.uuid4().hex}"


@tool(read_only=True)
def add(a: int, b: int) -> str:
    """Add two whole numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    return str(a + b)


@tool
def touch(name: str, ctx: ToolContext) -> str:
    """Create an empty file in the session's folder.

    Args:
        name: The file name.
    """
    target = ctx.path(name, write=True)
    target.write_text("")
    return f"touched {target}"


def write_call(path: str = "note.txt", content: str = "hello") -> Reply:
    return Reply(tool_calls=[tool_call("write_file", {"path": path, "content": content})])
