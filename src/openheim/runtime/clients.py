"""HTTP clients lent to the sessions of one ``Runtime``, so they share keep-alive connections.

An ``httpx.AsyncClient`` with its TLS context, cookie jar and connection pool costs each session
tens of objects and kilobytes, and a prompt of a session that has its own client must open a
new connection. Instead, every HTTP provider of a runtime's sessions borrows the client for its
``client_key`` (the endpoint's origin, the timeout, the proxy and CA variables): one client per
key and per event loop, opened by the first borrower and closed by the last. A client is bound
to the loop its connections were opened on, so a runtime driven from two loops (tests do that)
lends each loop its own; a loop that is gone takes its clients' entries with it.

Sharing is safe because the client holds nothing of a provider's own: each request carries its
provider's headers (the API key among them), and the client keeps no cookies
(``providers.http_client.make_client``), so nothing one provider's server sent reaches another's
requests.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import httpx

    from openheim.providers.base import ProviderSettings

_Entry = tuple["httpx.AsyncClient", int]


class ClientPool:
    """``httpx.AsyncClient`` objects lent per (event loop, ``client_key``), counted."""

    def __init__(self) -> None:
        self._loops: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[tuple[object, ...], _Entry]
        ] = weakref.WeakKeyDictionary()

    def borrow(self, settings: ProviderSettings) -> httpx.AsyncClient:
        """The client for ``settings``' endpoint on the running loop, made if no one holds
        it; ``give_back`` it when the provider is closed."""
        from openheim.providers.http_client import client_key, make_client

        lent = self._loops.setdefault(asyncio.get_running_loop(), {})
        key = client_key(settings.timeout_secs, settings.api_base)
        found = lent.get(key)
        if found is None:
            found = (make_client(settings.timeout_secs, settings.api_base), 0)
        lent[key] = (found[0], found[1] + 1)
        return found[0]

    async def give_back(self, client: httpx.AsyncClient) -> None:
        """One borrower is done with ``client``; the last one closes it. A client this pool
        did not lend is left alone."""
        for lent in list(self._loops.values()):
            for key, (held, count) in list(lent.items()):
                if held is not client:
                    continue
                if count > 1:
                    lent[key] = (held, count - 1)
                    return
                del lent[key]
                await held.aclose()
                return

    async def aclose(self) -> None:
        """Close every client still lent on the running loop (the runtime is closing)."""
        lent = self._loops.pop(asyncio.get_running_loop(), {})
        for client, _ in lent.values():
            await client.aclose()

    @property
    def open_clients(self) -> int:
        """How many clients are open now, over every loop."""
        return sum(len(lent) for lent in self._loops.values())


class Lease:
    """The clients one session borrowed, given back together when it closes.

    The session's exit stack enters the lease before the providers are built, so the lease
    exits (and gives the clients back) after every provider that uses them is closed."""

    __slots__ = ("_held", "_pool")

    def __init__(self, pool: ClientPool) -> None:
        self._pool = pool
        self._held: list[httpx.AsyncClient] = []

    def __call__(self, settings: ProviderSettings) -> httpx.AsyncClient:
        """The shared client for ``settings``' endpoint, held until the lease exits."""
        client = self._pool.borrow(settings)
        self._held.append(client)
        return client

    async def __aenter__(self) -> Lease:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        held, self._held = self._held, []
        for client in held:
            await self._pool.give_back(client)
