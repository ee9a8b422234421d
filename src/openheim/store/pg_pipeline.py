"""The PostgreSQL store's write transactions in pipeline mode: a round trip per result read.

psycopg's own ``transaction()`` waits for the server at each BEGIN, SAVEPOINT and block end.
Here the store's transaction control is sent as plain statements in the connection's pipeline
(``pg_link.Link``), so a write's statements travel together and the server is waited for only
where a result is read and at the commit: an append costs two round trips (its two reads,
asked together; then its inserts, its update and the commit), a batch of frames one.

A savepoint (one write of a batch, ``store.batches``) has every statement of its own answered
before it ends, so a failing statement fails that write, which is rolled back alone; the
others of the batch are committed. A failure clears the pipeline's abort (a sync, whose errors
are those of the failure already raised) before the rollback is sent.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

import psycopg
from psycopg.pq import TransactionStatus

from openheim.store.pg_link import Link

_OPEN = (TransactionStatus.INTRANS, TransactionStatus.INERROR)


@contextmanager
def transaction(conn: psycopg.Connection[Any], lock: int | None) -> Iterator[Link]:
    """A transaction on ``conn``, committed at the end, holding the advisory lock ``lock``
    unless it is ``None``."""
    try:
        with conn.pipeline() as pipe:
            link = Link(conn, pipe)
            conn.execute("BEGIN")
            if lock is not None:
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock,))
            with _undone(link, "ROLLBACK"):
                yield link
            conn.execute("COMMIT")  # answered when the pipeline ends, with any error before it
    finally:
        if conn.info.transaction_status in _OPEN:  # the commit was refused: end it here
            with suppress(psycopg.Error):
                conn.rollback()


@contextmanager
def savepoint(link: Link) -> Iterator[Link]:
    """A savepoint of the transaction ``link`` is in; its statements answered at its end."""
    link.depth += 1
    name = f"write_{link.depth}"
    try:
        link.raw.execute(f"SAVEPOINT {name}")
        with _undone(link, f"ROLLBACK TO SAVEPOINT {name}", f"RELEASE SAVEPOINT {name}"):
            yield link
            link.sync()
        link.raw.execute(f"RELEASE SAVEPOINT {name}")
    finally:
        link.depth -= 1


@contextmanager
def _undone(link: Link, *undo: str) -> Iterator[None]:
    """On a failure of the block, its answers awaited (their errors are the failure's), then
    ``undo`` sent; the block's own error is raised."""
    try:
        yield
    except BaseException:
        with suppress(psycopg.Error):
            link.sync()
            for statement in undo:
                link.raw.execute(statement)
        raise
