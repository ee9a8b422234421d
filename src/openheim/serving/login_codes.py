"""``serve``'s one-time login codes shared by replicas, in the PostgreSQL store ``store_url``
names: a login link printed by one replica works once, through any replica.

A code is stored as its SHA-256 (a login code is a secret; the table holds nothing that logs
in), for ``LIFETIME`` seconds at most; using it deletes it in the same statement, so two
replicas given the same code at once let only one of them in. A failing database refuses the
code (the token still logs in) and says so in one log line.
"""

from __future__ import annotations

import hashlib
import logging
import time

from openheim.errors import StoreError
from openheim.store import pg_extra, pg_link

log = logging.getLogger(__name__)

LIFETIME = 86_400.0
"""Seconds a shared login code stays usable when nobody uses it."""


def _digest(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()


class SharedLoginCodes:
    """The login codes of every replica on the database at ``url``."""

    def __init__(self, url: str) -> None:
        """Check ``url``, and bring the tables up to date (a one-line error when it fails)."""
        self._url = pg_link.checked(url)
        with pg_link.failures(self._url), pg_link.connect(self._url) as conn:
            pg_extra.migrate(conn, pg_link.redacted(self._url))

    def add(self, code: str) -> None:
        """Make ``code`` usable once through any replica (and forget expired ones)."""
        now = time.time()
        with pg_link.failures(self._url), pg_link.connect(self._url) as conn:
            conn.execute("DELETE FROM server_login_codes WHERE expires < %s", (now,))
            conn.execute(
                "INSERT INTO server_login_codes (digest, expires) VALUES (%s, %s)"
                " ON CONFLICT (digest) DO NOTHING",
                (_digest(code), now + LIFETIME),
            )

    def use(self, given: str) -> bool:
        """Whether ``given`` is a stored code not yet used nor expired; it is used now."""
        try:
            with pg_link.failures(self._url), pg_link.connect(self._url) as conn:
                row = conn.execute(
                    "DELETE FROM server_login_codes WHERE digest = %s RETURNING expires",
                    (_digest(given),),
                ).fetchone()
        except StoreError as err:
            log.warning("login code refused: %s", err)
            return False
        return row is not None and float(row[0]) >= time.time()
