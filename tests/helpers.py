"""Shared helpers for the test suite."""

from __future__ import annotations

from collections.abc import AsyncIterator

from openheim.events import Event


async def collect(events: AsyncIterator[Event]) -> list[Event]:
    """Drain an event stream into a list."""
    return [e async for e in events]
