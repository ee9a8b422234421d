"""``Mailbox``: items in order, a waiting reader woken by a put, a cancelled read losing nothing,
and one reader only."""

from __future__ import annotations

import asyncio

import pytest

from openheim.mailbox import Mailbox


async def test_items_come_out_in_order_and_a_waiting_reader_is_woken() -> None:
    box: Mailbox[int] = Mailbox()
    box.put(1)
    box.put(2)
    assert len(box) == 2 and await box.get() == 1 and await box.get() == 2
    reader = asyncio.create_task(box.get())
    await asyncio.sleep(0)
    assert not reader.done()
    box.put(3)
    assert await asyncio.wait_for(reader, 5) == 3
    with pytest.raises(IndexError):
        box.get_nowait()


async def test_a_cancelled_read_loses_nothing_and_a_second_reader_is_refused() -> None:
    box: Mailbox[str] = Mailbox()
    reader = asyncio.create_task(box.get())
    await asyncio.sleep(0)
    with pytest.raises(RuntimeError, match="one reader"):
        await box.get()
    reader.cancel()
    with pytest.raises(asyncio.CancelledError):
        await reader
    box.put("kept")
    assert await box.get() == "kept"
    box.put("a")
    box.clear()
    assert len(box) == 0
