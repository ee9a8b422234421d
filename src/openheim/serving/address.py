"""The address an HTTP server of openheim listens on, and its listening socket."""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass

from openheim.errors import ConfigError


@dataclass(frozen=True)
class Address:
    """A host and port to listen on; ``loopback`` when only this machine can connect."""

    host: str
    port: int

    @property
    def loopback(self) -> bool:
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False


def bind(address: Address) -> socket.socket:
    """A listening socket on ``address`` (ConfigError when it cannot be had)."""
    family = socket.AF_INET6 if ":" in address.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((address.host, address.port))
    except OSError as err:
        sock.close()
        raise ConfigError(
            f"cannot listen on {address.host}:{address.port}: {err.strerror or err}",
            hint="pick another --port, or stop what uses this one",
        ) from None
    sock.listen(2048)
    sock.setblocking(False)
    return sock
