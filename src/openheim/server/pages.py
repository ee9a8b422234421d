"""The login page, the one HTML page the server renders itself: the token form with a message
(why a login failed, or why a request was refused), escaped, so that a refusal a person meets in
a browser reads as a page with the form to try again, not as raw JSON."""

from __future__ import annotations

import html
from functools import cache
from pathlib import Path

STATIC = Path(__file__).parent / "static"
PAGE_PATHS = frozenset({"/", "/login", "/login/"})
"""The paths a browser navigates to: a refusal there is answered with the login page."""


@cache
def _template() -> str:
    return (STATIC / "login.html").read_text(encoding="utf-8")


def login_page(message: str) -> bytes:
    """The login page showing ``message`` (plain text; empty for none), as UTF-8."""
    return _template().replace("{{message}}", html.escape(message)).encode()
