"""The PostgreSQL store's link to its server: the URL checked and redacted, its failures as
one-line errors, and connections that speak the SQL the store shares with SQLite.

A ``store_url`` may carry a password; it never reaches a message, a log or a traceback here: it
is registered with the secret redaction and replaced by ``***`` in every URL shown. Only
``postgresql://`` and ``postgres://`` URLs are taken (libpq's ``key=value`` strings are not).
"""

from __future__ import annotations

import functools
import select
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import psycopg
import psycopg_pool
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool.base import AttemptWithBackoff

from openheim.errors import ConfigError, StoreError
from openheim.redaction.secrets import register_secret
from openheim.store.tables import storable

SCHEMES = ("postgresql", "postgres")
CONNECT_TIMEOUT = 10
"""Seconds to wait for the server to answer before the store gives up, with a clear error."""


def redacted(url: str) -> str:
    """``url`` with its password (in the user part or as ``password=``) replaced by ``***``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "(an unreadable URL)"
    netloc = parts.netloc
    user, at, host = netloc.rpartition("@")
    if at and ":" in user:
        netloc = f"{user.split(':', 1)[0]}:***@{host}"
    query = parts.query
    pairs = parse_qsl(query, keep_blank_values=True)
    if any(key == "password" for key, _ in pairs):
        query = urlencode([(k, "***" if k == "password" else v) for k, v in pairs], safe="/*")
    return f"{parts.scheme}://{netloc}{parts.path}" + (f"?{query}" if query else "")


def checked(url: str) -> str:
    """``url`` when it is a PostgreSQL URL libpq can read; else a ``ConfigError`` saying why.

    Its password is registered as a secret first, so no later message or log shows it. Text
    that is not such a URL is never shown (it may be a password in another syntax).
    """
    url = url.strip()
    _register_password(url)
    scheme, sep, _ = url.partition("://")
    if not sep or scheme.lower() not in SCHEMES:
        raise ConfigError(
            "store_url is not a postgresql:// URL",
            hint="write it as postgresql://USER:PASSWORD@HOST:PORT/DATABASE, or leave store_url"
            " (and OPENHEIM_STORE_URL) unset for the SQLite store in data_dir",
        )
    shown = redacted(url)
    try:
        urlsplit(url).port  # noqa: B018 - reading it checks it
        problem = _number_problem(conninfo_to_dict(url))
    except (ValueError, psycopg.Error) as err:
        problem = _line(err, url)
    if problem is not None:
        raise ConfigError(
            f"store_url {shown} is not a valid PostgreSQL URL: {problem}",
            hint="write it as postgresql://USER:PASSWORD@HOST:PORT/DATABASE",
        )
    return url


WHOLE_NUMBER_OPTIONS = (
    "connect_timeout", "keepalives", "keepalives_idle", "keepalives_interval",
    "keepalives_count", "tcp_user_timeout",
)  # fmt: skip
"""libpq options that take a whole number of 0 or more; libpq itself reads them only when it
connects, so a wrong one would otherwise pass as a URL and fail later as an unreachable store."""


def _number_problem(options: dict[str, Any]) -> str | None:
    """What is wrong with the URL's port (one per host, comma-separated, empty for the default)
    or its number options; ``None`` when they are all numbers. Values are not shown."""
    for port in str(options.get("port") or "").split(","):
        if port and not (port.isascii() and port.isdigit() and 1 <= int(port) <= 65535):
            return "its port is not a number from 1 to 65535"
    for key in WHOLE_NUMBER_OPTIONS:
        value = options.get(key)
        if value is not None and not (str(value).isascii() and str(value).isdigit()):
            return f"its {key} is not a whole number of 0 or more"
    return None


def _register_password(url: str) -> None:
    try:
        parts = urlsplit(url)
        if parts.password:
            register_secret(parts.password)
        for key, value in parse_qsl(parts.query):
            if key == "password" and value:
                register_secret(value)
    except ValueError:
        return


def _line(err: BaseException, url: str) -> str:
    """The first line of a driver error, with no trace of the URL's password."""
    text = (str(err).strip().splitlines() or [type(err).__name__])[0]
    try:
        secret = urlsplit(url).password
    except ValueError:
        secret = None
    return text.replace(secret, "***") if secret else text


@contextmanager
def failures(url: str) -> Iterator[None]:
    """The server's failures (unreachable, gone, out of connections, a login without the rights
    the store needs) as one ``StoreError``; other errors of the SQL are bugs and propagate."""
    try:
        yield
    except (
        psycopg.OperationalError,
        psycopg.InterfaceError,
        psycopg.errors.InsufficientPrivilege,
        psycopg_pool.PoolTimeout,
    ) as err:
        raise StoreError(
            f"the session database at {redacted(url)} failed: {_line(err, url)}",
            hint="check that PostgreSQL runs and store_url (or OPENHEIM_STORE_URL) names it",
        ) from None


class Row:
    """A result row read by column index or by column name, as ``sqlite3.Row`` is."""

    __slots__ = ("_names", "_values")

    def __init__(self, values: Sequence[Any], names: dict[str, int]) -> None:
        self._values = values
        self._names = names

    def __getitem__(self, key: int | str) -> Any:
        return self._values[self._names[key] if isinstance(key, str) else key]


def rows(cursor: psycopg.Cursor[Any]) -> Callable[[Sequence[Any]], Row]:
    """psycopg's row factory for ``Row``."""
    names = {column.name: i for i, column in enumerate(cursor.description or ())}
    return functools.partial(_row, names=names)


def _row(values: Sequence[Any], names: dict[str, int]) -> Row:
    return Row(values, names)


@functools.lru_cache(maxsize=256)
def _translated(sql: str) -> str:
    """The store's ``?`` placeholders as psycopg's ``%s`` (a literal ``%`` doubled)."""
    return sql.replace("%", "%%").replace("?", "%s")


def _param(value: Any) -> Any:
    """A text parameter PostgreSQL can hold: NUL and lone surrogates become U+FFFD (in each
    text of a list too: an array parameter)."""
    if isinstance(value, str):
        return storable(value).replace("\x00", "\ufffd")
    if isinstance(value, list):
        return [_param(item) for item in value]
    return value


class Link:
    """A connection of the pool as the store's ``Connection``: ``?`` placeholders, clean text.

    In a write transaction the connection is in pipeline mode (``pipe``): a statement is sent
    without waiting for its answer, and the round trip is made when a result is read
    (``fetchone``, ``rowcount``) or the write ends (``sync``), so a write costs a round trip
    per result it reads instead of one per statement (the lock, savepoints, inserts, commit).
    """

    def __init__(self, conn: psycopg.Connection[Any], pipe: psycopg.Pipeline | None = None) -> None:
        self.raw = conn
        self.pipe = pipe
        self.depth = 0
        """Savepoints open (``pg_pipeline.savepoint``)."""

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Result:
        cursor = self.raw.execute(_translated(sql), [_param(p) for p in parameters])
        return Result(cursor, self)

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Result:
        cursor = self.raw.cursor()
        cursor.executemany(_translated(sql), [[_param(p) for p in row] for row in parameters])
        return Result(cursor, self)

    def sync(self) -> None:
        """Wait for the answers to every statement sent so far; raise the first one's error.
        No round trip when every one is answered already (by reading a result)."""
        if self.pipe is not None and (self.pipe.result_queue or self.pipe.command_queue):
            self.pipe.sync()


class Result:
    """A statement's cursor whose ``rowcount`` and ``description`` wait for the statement's
    answer first."""

    __slots__ = ("_cursor", "_link")

    def __init__(self, cursor: psycopg.Cursor[Any], link: Link) -> None:
        self._cursor = cursor
        self._link = link

    @property
    def rowcount(self) -> int:
        self._link.sync()
        return self._cursor.rowcount

    @property
    def description(self) -> list[psycopg.Column] | None:
        """The result's columns (``None`` for a statement that returns no rows)."""
        self._link.sync()
        return self._cursor.description

    def fetchone(self) -> Any:
        return self._cursor.fetchone()

    def fetchall(self) -> list[Any]:
        return self._cursor.fetchall()


def connect(url: str) -> psycopg.Connection[Any]:
    """One autocommit connection to ``url`` (the store's pool opens more alike)."""
    return psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT, row_factory=rows)


RECONNECT_FIRST = 0.25
RECONNECT_MAX = 1.0
"""Seconds between two tries to open a connection while the server is away: from
``RECONNECT_FIRST``, doubling up to ``RECONNECT_MAX``. psycopg_pool's own wait starts at a
second and doubles without end, so once the server was back after an outage of some seconds
the store went on failing for as long again."""


class _Reconnecting(AttemptWithBackoff):
    INITIAL_DELAY = RECONNECT_FIRST

    def update_delay(self, now: float) -> None:
        super().update_delay(now)
        self.delay = min(self.delay, RECONNECT_MAX)


class LivePool(psycopg_pool.ConnectionPool[psycopg.Connection[Any]]):
    """A pool that gives out only connections the server has not closed, checked with no round
    trip: an idle connection has nothing to read, so one whose socket is readable has been
    cut (a server restart, an administrator's kill) or holds a notice, and an empty query
    tells which. A cut one is dropped and the next taken at once: psycopg_pool's own check
    costs a round trip per checkout and waits a growing back-off (1 s, 2 s, ...) after each
    failed one, so after a restart one read could wait out every dead connection in turn.
    While the server is away it tries to connect again at most ``RECONNECT_MAX`` apart."""

    def _add_connection(self, attempt: AttemptWithBackoff | None, growing: bool = False) -> None:
        """psycopg_pool's, with ``_Reconnecting``'s waits between the tries."""
        super()._add_connection(attempt or _Reconnecting(timeout=self.reconnect_timeout), growing)

    @contextmanager
    def connection(self, timeout: float | None = None) -> Iterator[psycopg.Connection[Any]]:
        for _ in range(self.max_size):
            with super().connection(timeout) as conn:
                if _alive(conn):
                    yield conn
                    return
                conn.close()  # the pool drops it when it comes back, and opens another
        with super().connection(timeout) as conn:  # all cut: this one fails as it is used
            yield conn


def _alive(conn: psycopg.Connection[Any]) -> bool:
    """Whether ``conn`` is usable; see ``LivePool``."""
    if conn.closed:
        return False
    try:
        poller = select.poll()
        poller.register(conn.pgconn.socket, select.POLLIN)
        if not poller.poll(0):
            return True
        conn.execute("")
    except (OSError, psycopg.Error):
        return False
    return True


def pool(url: str, size: int) -> LivePool:
    """A pool of up to ``size`` such connections, opened with one at hand."""
    opened = LivePool(
        url,
        min_size=1,
        max_size=size,
        kwargs={"autocommit": True, "row_factory": rows, "connect_timeout": CONNECT_TIMEOUT},
        timeout=CONNECT_TIMEOUT,
        open=False,
        name="openheim-store",
    )
    opened.open(wait=True, timeout=CONNECT_TIMEOUT)
    return opened
