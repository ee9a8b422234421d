"""Who may talk to ``openheim serve``: the bearer token, the browser cookie and the login link.

The token comes from ``OPENHEIM_SERVER_TOKEN``, else from ``[server] token_file``, else from
``data_dir/server-token``: the token kept there by an earlier start (so a browser stays logged
in across restarts), or one generated now and written there (mode 0600) when there is none, when
that file is not the user's own private regular file, or when a new one is asked for
(``new_token``: every login cookie of the old one is refused from then on). A request proves it
with ``Authorization: Bearer TOKEN``, with the cookie the one-time login link sets, or (for a
WebSocket, where a browser cannot set headers) with a subprotocol ``openheim.token.TOKEN``.

The cookie holds an HMAC of the token, not the token: every replica that shares the token
accepts it, and it says nothing about the token itself. Every comparison is constant-time.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from openheim.config.load import Settings
from openheim.errors import ConfigError
from openheim.files.atomic import atomic_write
from openheim.files.hostile import read_regular

if TYPE_CHECKING:
    from openheim.serving.login_codes import SharedLoginCodes

TOKEN_ENV = "OPENHEIM_SERVER_TOKEN"
TOKEN_FILE = "server-token"
MIN_TOKEN_CHARS = 16
MAX_TOKEN_FILE_BYTES = 4096
"""A token file holds one token: a larger file is refused, never read to its end."""
COOKIE = "openheim_auth"
SUBPROTOCOL = "openheim.v1"
TOKEN_PROTOCOL_PREFIX = "openheim.token."


@dataclass
class Auth:
    """The server's token, whether it was generated at this start, the file it is kept in
    when it is the data dir's own, and the login link's one-time code."""

    token: str
    generated: bool
    kept_in: Path | None = None
    login_code: str | None = field(default_factory=lambda: secrets.token_urlsafe(24))
    shared: SharedLoginCodes | None = None
    """With a PostgreSQL store: where every replica's codes are, so any replica takes any."""

    @property
    def cookie_value(self) -> str:
        """What the login cookie holds: an HMAC of the token."""
        return hmac.new(self.token.encode(), b"openheim-cookie", hashlib.sha256).hexdigest()

    def check_token(self, given: str) -> bool:
        return hmac.compare_digest(given.encode(), self.token.encode())

    def share_login_code(self, codes: SharedLoginCodes) -> None:
        """Put this server's login code with the other replicas' in ``codes``."""
        if self.login_code is not None:
            codes.add(self.login_code)
        self.shared = codes

    def use_login_code(self, given: str) -> bool:
        """Whether ``given`` is the login code (or, shared, any replica's); it works once."""
        if self.shared is not None:
            return self.shared.use(given)
        code = self.login_code
        if code is None or not hmac.compare_digest(given.encode(), code.encode()):
            return False
        self.login_code = None
        return True

    def allows(self, headers: Mapping[str, str], protocols: list[str]) -> bool:
        """Whether a request with these headers (lower-case names) and offered WebSocket
        subprotocols proves the token."""
        scheme, _, value = headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and self.check_token(value.strip()):
            return True
        cookie = _cookie(headers.get("cookie", ""), COOKIE)
        if cookie is not None and hmac.compare_digest(cookie.encode(), self.cookie_value.encode()):
            return True
        offered = [p[len(TOKEN_PROTOCOL_PREFIX) :] for p in protocols if _is_token_protocol(p)]
        return any(self.check_token(token) for token in offered)


def _is_token_protocol(protocol: str) -> bool:
    return protocol.startswith(TOKEN_PROTOCOL_PREFIX)


def _cookie(header: str, name: str) -> str | None:
    for part in header.split(";"):
        key, sep, value = part.strip().partition("=")
        if sep and key == name:
            return value
    return None


def load_auth(
    settings: Settings,
    *,
    public: bool,
    new_token: bool = False,
    env: Mapping[str, str] | None = None,
) -> Auth:
    """The token to require. ``public`` (a non-loopback bind) refuses a token of the data dir,
    which is printed on a screen others may see; ``new_token`` replaces the data dir's token
    (refused when the token is given, which openheim does not own)."""
    env = os.environ if env is None else env
    explicit = _explicit_token(settings, env)
    if explicit is not None:
        if new_token:
            raise ConfigError(
                f"--new-token replaces the token kept in the data dir, but the token is given "
                f"({TOKEN_ENV} or [server] token_file)",
                hint="change the given token instead, or unset it to use the data dir's",
            )
        return Auth(explicit, generated=False)
    if public:
        raise ConfigError(
            "binding a non-loopback address needs an explicit token",
            hint=f"set {TOKEN_ENV} or [server] token_file (at least {MIN_TOKEN_CHARS} characters)",
        )
    path = settings.data_dir / TOKEN_FILE
    kept = None if new_token else _kept_token(path)
    if kept is not None:
        return Auth(kept, generated=False, kept_in=path)
    token = secrets.token_urlsafe(32)
    _keep(path, token)
    return Auth(token, generated=True, kept_in=path)


def _keep(path: Path, token: str) -> None:
    """Write ``token`` to ``path``, readable by the user alone from its first byte."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, token.encode(), mode=0o600)
    except OSError as err:
        raise ConfigError(
            f"cannot keep the server's token in {path}: {err.strerror or err}",
            hint=f"remove what is at {path}, or give a token with {TOKEN_ENV}",
        ) from None


def _kept_token(path: Path) -> str | None:
    """The token an earlier start kept at ``path``: only from a regular file (no symlink) of
    this user that no one else may read, holding a valid token; None otherwise (a new one is
    made in its place)."""
    try:
        raw = read_regular(path, MAX_TOKEN_FILE_BYTES, follow_symlinks=False, check=_private)
        token = raw.decode("utf-8").strip()
    except (OSError, ValueError):
        return None
    return token if _valid(token) else None


def _private(info: os.stat_result) -> None:
    if info.st_uid != os.getuid() or info.st_mode & 0o077 or info.st_nlink != 1:
        raise ValueError("it is not a private file of this user")


def _valid(token: str) -> bool:
    return len(token) >= MIN_TOKEN_CHARS and not any(
        c.isspace() or not c.isprintable() for c in token
    )


def _explicit_token(settings: Settings, env: Mapping[str, str]) -> str | None:
    raw = env.get(TOKEN_ENV)
    where = TOKEN_ENV
    if not raw and settings.server.token_file:
        path = Path(settings.server.token_file).expanduser()
        where = f"[server] token_file {path}"
        raw = _read_token_file(path, where)
    if not raw:
        return None
    token = raw.strip()
    if not _valid(token):
        raise ConfigError(
            f"the token from {where} is too short or holds spaces or control characters",
            hint=f"use at least {MIN_TOKEN_CHARS} printable characters, e.g. "
            "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`",
        )
    return token


def _read_token_file(path: Path, where: str) -> str:
    """The token file's text: a regular file of at most ``MAX_TOKEN_FILE_BYTES``, opened
    without blocking (a FIFO) and never read past the limit (``/dev/zero``)."""
    try:
        return read_regular(path, MAX_TOKEN_FILE_BYTES).decode("utf-8")
    except (OSError, ValueError) as err:
        reason = (err.strerror or str(err)) if isinstance(err, OSError) else str(err)
        raise ConfigError(
            f"cannot read {where}: {reason}",
            hint="point token_file at a regular file holding only the token",
        ) from None
