"""URL checks shared by config and providers (stdlib only, cheap to import)."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit


def is_loopback(url: str) -> bool:
    """Whether ``url`` points at this machine (``localhost``, 127.0.0.0/8, ``::1``)."""
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
