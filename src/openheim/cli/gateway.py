"""``openheim gateway``: the chat gateways of ``[gateway]`` in config.toml (``--telegram``,
``--discord``, ``--whatsapp`` pick some; all configured ones by default) until Ctrl-C; and the
passphrase grants: ``--grants`` lists them, ``--revoke PLATFORM:SENDER`` takes one back."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import Coroutine
from typing import Any

from openheim.config.load import Settings, load_settings
from openheim.errors import ConfigError
from openheim.events import notice_line
from openheim.term import exit_codes

PLATFORMS = ("telegram", "discord", "whatsapp")


def add_gateway(gateway: argparse.ArgumentParser) -> None:
    for name in PLATFORMS:
        gateway.add_argument(f"--{name}", action="store_true", help=f"serve {name}")
    gateway.add_argument("--grants", action="store_true", help="list passphrase grants")
    gateway.add_argument("--revoke", metavar="PLATFORM:SENDER", help="take a grant back")


def gateway_command(args: argparse.Namespace) -> int:
    settings = load_settings()
    sys.stderr.writelines(f"{notice_line(notice)}\n" for notice in settings.notices)
    if args.grants or args.revoke:
        return _grants(settings, args.revoke)
    try:
        from openheim.gateway.service import serve
        from openheim.gateway.setup import chosen_platforms
    except ImportError as err:
        raise ConfigError(
            f"openheim gateway needs the server extra ({err.name} is missing)",
            hint="pip install 'openheim[server]'",
        ) from None
    names = chosen_platforms(settings.gateway, [n for n in PLATFORMS if getattr(args, n)])
    asyncio.run(_serve(serve(settings, names, os.environ, ready=(ready := asyncio.Event())), ready))
    return exit_codes.OK


async def _serve(serving: Coroutine[Any, Any, None], ready: asyncio.Event) -> None:
    """Run ``serving``, saying on stderr once it is ready (after its checks passed)."""
    task = asyncio.create_task(serving)
    waiter = asyncio.create_task(ready.wait())
    try:
        await asyncio.wait([task, waiter], return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
    if ready.is_set():
        sys.stderr.write("openheim gateway: serving (Ctrl-C stops)\n")
    await task


def _grants(settings: Settings, revoke: str | None) -> int:
    from openheim.gateway.state import open_state

    state = open_state(settings.data_dir, settings.store_url)
    try:
        if revoke is None:
            for platform, sender, at in state.grants():
                when = time.strftime("%Y-%m-%d %H:%M", time.localtime(at))
                sys.stdout.write(f"{platform}:{sender}  granted {when}\n")
            return exit_codes.OK
        platform, _, sender = revoke.partition(":")
        if platform not in PLATFORMS or not sender:
            raise ConfigError(
                f"--revoke {revoke!r} is not PLATFORM:SENDER",
                hint="e.g. --revoke telegram:123456789 (see --grants)",
            )
        if not state.revoke(platform, sender):
            raise ConfigError(f"{revoke} has no grant", hint="see openheim gateway --grants")
        sys.stdout.write(f"revoked {revoke}\n")
        return exit_codes.OK
    finally:
        state.close()
