"""Helpers shared by the ``Session`` tests."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from openheim.api import Session
from openheim.events import Event, Finished, ToolResult
from openheim.messages import Message, ToolResultBlock

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
