"""The hand-over between a run's task and the consumer of its events.

A run works in a task of its own, so that cancelling it never leaves the consumer's generator in
a broken state. Each event is handed over as a rendezvous: the run goes on only once the
consumer asks for the next event, so what a surface shows always matches what has happened (a
tool never starts before its ``ToolCall`` was handled) and a slow consumer slows the run instead
of queueing without bound.

Text and thinking deltas are the exception: they only show what the model said and start
nothing, so the run goes on reading the model's stream while up to ``DELTA_LEAD`` of them wait
for the consumer. Each delta then costs the run one wake-up instead of two (the second would
only walk down to the socket and find it empty), which is most of a streaming server's work;
any other event still waits for every delta before it to be taken.

A consumer whose readers only pass deltas on may also set a ``tap``: a delta emitted while the
consumer waits for the next event, with none queued, goes to the tap at once, in the run's
task, instead of through the queue and every generator between them (one task wake-up less).
The tap may refuse one (it returns False); that delta is queued as usual.

Cancelling the run (the ``cancel`` event, or closing the generator) cancels its task once. The
task takes the cancellation back (``Task.uncancel``) and runs its repair, whose events, like the
closing events of every run, are queued without waiting: the consumer may be gone, and nothing
happens after them that the consumer would have to see first. So the closing events carry no
cancellation point, and a cancel that arrives while they are read cannot break the stream.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence

from openheim.events import Event, Finished, TextDelta, ThinkingDelta
from openheim.mailbox import Mailbox

DELTA_LEAD = 64
"""Deltas the run may have handed over that the consumer has not yet taken."""

Closing = Sequence[Event]
"""The events that end a run; the last one is ``Finished``."""

Tap = Callable[[TextDelta | ThinkingDelta], bool]
"""Takes a delta straight from the run (see ``Handover.tap``); False when it does not."""


class _Crash:
    """Carries an exception from the run task to the consumer, which raises it."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


_Item = tuple["Event | _Crash", "asyncio.Future[None] | None"]


class Handover:
    """The run's side of the hand-over: ``emit`` each event, in order."""

    def __init__(self) -> None:
        self._queue: Mailbox[_Item] = Mailbox()
        self.cancelled = False
        """True once the run was cancelled: from then on events are queued, not handed over."""
        self.tap: Tap | None = None
        """Takes the deltas emitted while the consumer waits with none queued (set by a
        consumer that would only pass them on; see the module docstring)."""

    async def emit(self, event: Event) -> None:
        """Hand ``event`` over and wait until the consumer asks for the next one."""
        if self.cancelled:
            self._post(event)
            return
        if isinstance(event, TextDelta | ThinkingDelta):
            tap, queue = self.tap, self._queue
            if tap is not None and not queue and queue.waiting and tap(event):
                return
            if len(queue) < DELTA_LEAD:
                queue.put((event, None))
                return
        taken = asyncio.get_running_loop().create_future()
        self._queue.put((event, taken))
        await taken

    def _post(self, item: Event | _Crash) -> None:
        self._queue.put((item, None))

    async def run(
        self,
        work: Callable[[], Awaitable[Closing]],
        repair: Callable[[], Awaitable[Closing]],
        *,
        cancel: asyncio.Event | None = None,
        settled: asyncio.Event | None = None,
    ) -> AsyncGenerator[Event, None]:
        """The events of ``work``, run in a task of its own, up to its ``Finished``; when the
        task is cancelled, ``repair`` closes the run instead.

        ``cancel`` cancels the task when set; ``settled`` is set once the task is done (the
        history is final, whether or not the consumer reads on). Closing the generator cancels
        the task and waits for it."""
        task = asyncio.create_task(self._drive(work, repair))
        if settled is not None:
            task.add_done_callback(lambda _: settled.set())
        watcher = asyncio.create_task(cancel.wait()) if cancel is not None else None
        if watcher is not None:
            watcher.add_done_callback(lambda _: task.cancel())
        try:
            while True:
                item, taken = await self._queue.get()
                if isinstance(item, _Crash):
                    raise item.error
                yield item
                if isinstance(item, Finished):
                    return
                if taken is not None and not taken.done():
                    taken.set_result(None)
        finally:
            if watcher is not None:
                watcher.cancel()
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def _drive(
        self, work: Callable[[], Awaitable[Closing]], repair: Callable[[], Awaitable[Closing]]
    ) -> None:
        try:
            try:
                closing = await work()
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if task is not None:
                    task.uncancel()
                self.cancelled = True
                closing = await repair()
        except BaseException as err:  # handed to the consumer, which re-raises it
            self._post(_Crash(err))
            return
        for event in closing:
            self._post(event)
