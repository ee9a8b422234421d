"""Opening a stored session reads and writes the store on its writing thread, never on the
event loop: a server opening many sessions at once, or a store across the network, would
otherwise hold every stream it serves up for each round trip."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from tests.api.conftest import MakeRuntime, Scripted

WATCHED = ("create", "get", "update", "messages")
"""The store's calls an opening makes (and the compaction log's ``latest`` and ``pins``)."""


def watch(target: Any, names: tuple[str, ...], seen: list[tuple[str, bool]]) -> None:
    """Record, for each call of ``target``'s ``names``, whether it ran on the loop's thread."""
    for name in names:
        original: Callable[..., Any] = getattr(target, name)

        def recorded(*args: Any, _name: str = name, _call: Any = original, **kw: Any) -> Any:
            seen.append((_name, threading.current_thread() is threading.main_thread()))
            return _call(*args, **kw)

        setattr(target, name, recorded)


async def test_opening_and_resuming_a_session_leave_the_store_to_its_thread(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    runtime = make_runtime()
    first = await runtime.new_session()
    scripted.provider.add("the answer")
    await first.prompt("hi")
    await first.close()
    store = runtime.shared.borrow_store(runtime.settings.data_dir, runtime.settings.store_url)
    seen: list[tuple[str, bool]] = []
    watch(store, WATCHED, seen)
    watch(store.compactions, ("latest", "pins"), seen)
    fresh = await runtime.new_session()
    resumed = await runtime.resume_session(str(first.id))
    assert len(resumed.history) == 2
    assert {name for name, _ in seen} >= {"create", "get", "messages", "latest", "pins"}
    assert [name for name, on_loop in seen if on_loop] == []
    await fresh.close()
    await resumed.close()
    runtime.shared.give_back(store)
    await runtime.aclose()
