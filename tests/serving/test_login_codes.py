"""The login codes replicas share in the PostgreSQL store: each works once, not after its
lifetime, and is kept only as its digest."""

from __future__ import annotations

import psycopg
import pytest

from openheim.serving import login_codes
from openheim.serving.login_codes import SharedLoginCodes


def test_a_code_works_once_and_only_its_digest_is_kept(pg_url: str) -> None:
    codes, other = SharedLoginCodes(pg_url), SharedLoginCodes(pg_url)
    codes.add("the-code-0123456789")
    with psycopg.connect(pg_url) as conn:
        kept = conn.execute("SELECT digest FROM server_login_codes").fetchall()
    assert len(kept) == 1 and "the-code" not in kept[0][0]
    assert not other.use("the-code-012345678")  # a prefix is not the code
    assert other.use("the-code-0123456789")
    assert not codes.use("the-code-0123456789")


def test_an_expired_code_is_refused(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    codes = SharedLoginCodes(pg_url)
    monkeypatch.setattr(login_codes, "LIFETIME", -1.0)
    codes.add("an-old-code")
    assert not codes.use("an-old-code")


def test_a_database_gone_refuses_the_code_in_one_log_line(
    pg_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    codes = SharedLoginCodes(pg_url)
    codes.add("a-code")
    codes._url = pg_url.replace("host=", "host=/nonexistent")  # the server no longer answers
    assert not codes.use("a-code")
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("openheim")]
    assert len(lines) == 1 and lines[0].startswith("login code refused: ")
