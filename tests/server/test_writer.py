"""``FrameWriter``: frames reach the store's frame log in batches written off the event loop;
``flush`` and ``aclose`` leave nothing behind."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from openheim.server import writer as frame_writer
from openheim.server.writer import FrameWriter
from openheim.store.sqlite import SQLiteStore, open_store

WAIT = 10.0


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    with open_store(tmp_path) as opened:
        yield opened


def _session(store: SQLiteStore) -> str:
    return store.create(cwd="/w", provider="p", model="m").id


async def test_frames_are_written_by_another_thread(store: SQLiteStore) -> None:
    sid = _session(store)
    threads: list[str] = []
    append = store.frames.append

    def noted(batch: Sequence[tuple[str, int, str]]) -> None:
        threads.append(threading.current_thread().name)
        append(batch)

    store.frames.append = noted  # type: ignore[method-assign,assignment]
    out = FrameWriter(store)
    for seq in (1, 2, 3):
        out.add(sid, seq, f"frame {seq}")
    deadline = asyncio.get_running_loop().time() + WAIT
    while store.frames.last(sid) < 3 and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(frame_writer.FLUSH_DELAY)
    assert [text for _, text in store.frames.after(sid, 0)] == ["frame 1", "frame 2", "frame 3"]
    assert threads and all(name.startswith("openheim-frames") for name in threads)
    await out.aclose()


async def test_flush_writes_at_once_after_the_batch_in_progress(store: SQLiteStore) -> None:
    sid = _session(store)
    started, release = threading.Event(), threading.Event()
    append = store.frames.append

    def slow(batch: Sequence[tuple[str, int, str]]) -> None:
        if threading.current_thread() is not threading.main_thread():
            started.set()
            assert release.wait(WAIT)
        append(batch)

    store.frames.append = slow  # type: ignore[method-assign,assignment]
    out = FrameWriter(store)
    out.add(sid, 1, "in the thread")
    out._hand_over()  # the timer's work, now
    assert await asyncio.to_thread(started.wait, WAIT)
    out.add(sid, 2, "flushed")
    threading.Timer(0.1, release.set).start()
    out.flush()  # waits for the thread's batch, then writes its own
    assert [seq for seq, _ in store.frames.after(sid, 0)] == [1, 2]
    await out.aclose()


async def test_with_no_delay_frames_added_during_a_write_go_together_right_after(
    store: SQLiteStore,
) -> None:
    sid = _session(store)
    release = threading.Event()
    batches: list[list[int]] = []
    append = store.frames.append

    def held(batch: Sequence[tuple[str, int, str]]) -> None:
        batches.append([seq for _, seq, _ in batch])
        if len(batches) == 1:
            assert release.wait(WAIT)
        append(batch)

    store.frames.append = held  # type: ignore[method-assign,assignment]
    out = FrameWriter(store, delay=0.0)
    out.add(sid, 1, "alone")
    async with asyncio.timeout(WAIT):
        while not batches:  # the first batch went at once, with no timer
            await asyncio.sleep(0)
    for seq in (2, 3, 4):
        out.add(sid, seq, "queued")
    assert out._timer is None  # nothing waits on a clock: the write in progress sends them
    release.set()
    async with asyncio.timeout(WAIT):
        while store.frames.last(sid) < 4:
            await asyncio.sleep(0.001)
    assert batches == [[1], [2, 3, 4]]
    await out.aclose()


async def test_aclose_waits_for_every_batch(store: SQLiteStore) -> None:
    sid = _session(store)
    out = FrameWriter(store)
    for seq in range(1, 101):
        out.add(sid, seq, "x")
        if seq % 10 == 0:
            out._hand_over()
    out.add(sid, 101, "last, never handed over")
    await out.aclose()
    assert store.frames.last(sid) == 101
    assert len(list(store.frames.after(sid, 0))) == 101


async def test_flush_writes_the_batches_handed_over_but_not_begun(store: SQLiteStore) -> None:
    """A batch the thread has not begun yet (queued behind other work) is in the store once
    ``flush`` returns: a client re-attaching reads every frame published before it."""
    sid = _session(store)
    out = FrameWriter(store)
    out.add(sid, 1, "written by the thread")
    out._hand_over()
    deadline = asyncio.get_running_loop().time() + WAIT
    while store.frames.last(sid) < 1 and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(frame_writer.FLUSH_DELAY)
    busy = threading.Event()
    assert out._thread is not None
    out._thread.submit(busy.wait, WAIT)  # the thread is kept busy: the next batch waits
    out.add(sid, 2, "handed over, not begun")
    out._hand_over()
    out.add(sid, 3, "flushed")
    out.flush()
    stored = [seq for seq, _ in store.frames.after(sid, 0)]
    busy.set()
    await out.aclose()
    assert stored == [1, 2, 3]
    assert [seq for seq, _ in store.frames.after(sid, 0)] == [1, 2, 3]


async def test_a_deleted_session_loses_only_its_own_frames(store: SQLiteStore) -> None:
    """Another process deletes a session while its frames wait: the batch's other frames are
    still stored, and nothing is raised."""
    gone, kept = _session(store), _session(store)
    out = FrameWriter(store)
    out.add(kept, 1, "kept one")
    out.add(gone, 1, "of a deleted session")
    out.add(kept, 2, "kept two")
    store.delete(gone)
    out.flush()
    await out.aclose()
    assert [text for _, text in store.frames.after(kept, 0)] == ["kept one", "kept two"]
    assert store.frames.last(gone) == 0


async def test_a_batch_the_store_fails_is_written_again_in_order(store: SQLiteStore) -> None:
    from openheim.errors import StoreError

    sid = _session(store)
    append = store.frames.append
    failures = [StoreError("the database restarts", hint="wait")]

    def away(batch: Sequence[tuple[str, int, str]]) -> None:
        if failures:
            raise failures.pop()
        append(batch)

    store.frames.append = away  # type: ignore[method-assign,assignment]
    out = FrameWriter(store)
    out.add(sid, 1, "frame 1")
    out.flush()  # fails: kept
    out.add(sid, 2, "frame 2")
    await out.aclose()
    assert [text for _, text in store.frames.after(sid, 0)] == ["frame 1", "frame 2"]


async def test_a_last_batch_the_store_fails_is_written_again_with_no_frame_after_it(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The frame that ends a turn may be the last for a long time: a failed write of it is
    tried again on a timer, not only when another frame comes."""
    from openheim.errors import StoreError

    monkeypatch.setattr(frame_writer, "RETRY_DELAY", 0.01)
    sid = _session(store)
    append = store.frames.append
    failures = [StoreError("the database restarts", hint="wait")] * 3
    stored = asyncio.Event()
    loop = asyncio.get_running_loop()

    def away(batch: Sequence[tuple[str, int, str]]) -> None:
        if failures:
            raise failures.pop()
        append(batch)
        loop.call_soon_threadsafe(stored.set)

    store.frames.append = away  # type: ignore[method-assign,assignment]
    out = FrameWriter(store, delay=0.001)
    out.add(sid, 1, "finished")
    async with asyncio.timeout(WAIT):
        await stored.wait()
    assert [text for _, text in store.frames.after(sid, 0)] == ["finished"]
    assert failures == []
    await out.aclose()
