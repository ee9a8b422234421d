"""Two real ``openheim gateway`` processes on one PostgreSQL store against the fake Telegram:
one polls, the other stands by; SIGKILL the leader in the middle of a turn and the other takes
over within the lease, answers the interrupted message once, and goes on."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import psycopg

from openheim.gateway.state import open_state
from openheim.testing import FakeLLMServer, FakeReply
from tests.cli.test_cli import configure, env_for, openheim
from tests.gateway.fake_telegram import TOKEN, FakeTelegram
from tests.gateway.loopback import WAIT, serving
from tests.gateway.support import write_config

LEASE = 2.0


async def _start(home: Path, work: Path, pg_url: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "openheim", "--log-level", "info", "gateway",
        cwd=work, env=env_for(home, TELEGRAM_BOT_TOKEN=TOKEN, OPENHEIM_STORE_URL=pg_url),
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE, start_new_session=True,
    )  # fmt: skip


async def _said(process: asyncio.subprocess.Process, text: str) -> list[str]:
    """The stderr lines of ``process`` up to the first that holds ``text`` (bounded)."""
    assert process.stderr is not None
    lines: list[str] = []
    async with asyncio.timeout(WAIT * 2):
        while not lines or text not in lines[-1]:
            line = await process.stderr.readline()
            assert line, f"the gateway ended before saying {text!r}: {lines}"
            lines.append(line.decode())
    return lines


async def _stop(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        process.kill()
    await asyncio.wait_for(process.wait(), WAIT)


async def test_the_other_replica_takes_over_a_killed_leader_once(
    home: Path, work: Path, pg_url: str
) -> None:
    fake = FakeTelegram()
    stalled = FakeReply(text="an answer cut short", hang_at=2)
    replies: list[FakeReply | str] = [stalled, "answered by the other replica", "and the next one"]
    table = f'[gateway]\nleader_lease_secs = {LEASE}\n[gateway.telegram]\napi_base = "{{url}}"\n'
    table += 'allowed_users = ["111"]\n'
    async with serving(fake.app()) as url:
        with FakeLLMServer(replies) as llm:
            write_config(home, llm, table.format(url=url))
            leader = await _start(home, work, pg_url)
            standby = None
            try:
                await _said(leader, "telegram: this gateway leads and polls")
                standby = await _start(home, work, pg_url)
                await _said(standby, "telegram: another gateway polls; standing by")
                await fake.message(111, "a question")
                await asyncio.to_thread(llm.wait_for_requests, 1, WAIT * 2)
                assert fake.most_polls == 1  # exactly one poller while both ran
                leader.kill()
                killed = time.monotonic()
                took_over = await _said(standby, "telegram: this gateway leads and polls")
                assert time.monotonic() - killed <= LEASE + LEASE / 3 + 2.0  # expiry, a try, slack
                assert "1 message(s) left unanswered last time" in "".join(
                    took_over + await _said(standby, "left unanswered")
                )
                sent = await fake.wait_sent(1, timeout=WAIT * 2)
                await fake.message(111, "a follow-up")
                sent = await fake.wait_sent(2, timeout=WAIT * 2)
            finally:
                for process in (leader, standby):
                    if process is not None:
                        await _stop(process)
    assert [m.text for m in sent] == ["answered by the other replica", "and the next one"]
    assert len(llm.requests) == 3  # the interrupted turn, its one retry, the follow-up


def test_grants_are_listed_and_revoked_in_the_shared_store(
    home: Path, work: Path, pg_url: str
) -> None:
    configure(home, None)
    state = open_state(home, pg_url)
    state.grant("telegram", "222")
    state.close()
    listed = openheim("gateway", "--grants", home=home, cwd=work, OPENHEIM_STORE_URL=pg_url)
    assert listed.returncode == 0 and listed.stdout.startswith("telegram:222  granted ")
    revoked = openheim(
        "gateway", "--revoke", "telegram:222", home=home, cwd=work, OPENHEIM_STORE_URL=pg_url
    )
    assert (revoked.returncode, revoked.stdout) == (0, "revoked telegram:222\n")
    after = open_state(home, pg_url)
    assert not after.granted("telegram", "222")
    after.close()
    assert not (home / "gateway.db").exists()


async def test_a_database_outage_stops_the_gateway_in_one_line_and_loses_nothing(
    home: Path, work: Path, pg_url: str
) -> None:
    fake = FakeTelegram()
    table = f'[gateway]\nleader_lease_secs = {LEASE}\n[gateway.telegram]\napi_base = "{{url}}"\n'
    table += 'allowed_users = ["111"]\n'
    async with serving(fake.app()) as url:
        with FakeLLMServer(["answered after the outage"]) as llm:
            write_config(home, llm, table.format(url=url))
            first = await _start(home, work, pg_url)
            try:
                await _said(first, "telegram: this gateway leads and polls")
                database = urlsplit(pg_url).path.lstrip("/")
                maintenance = urlsplit(pg_url)._replace(path="/postgres").geturl()
                with psycopg.connect(maintenance, autocommit=True) as admin:
                    _outage(admin, database, allow=False)
                    try:
                        await fake.message(111, "sent while the database is down")
                        _, err = await asyncio.wait_for(first.communicate(), WAIT * 3)
                    finally:
                        _outage(admin, database, allow=True)
            finally:
                await _stop(first)
            second = await _start(home, work, pg_url)
            try:
                sent = await fake.wait_sent(1, timeout=WAIT * 2)
            finally:
                await _stop(second)
    lines = err.decode().splitlines()
    retries = [line for line in lines if "trying again in" in line]
    assert first.returncode == 1 and "Traceback" not in err.decode()
    assert [r.rsplit(" ", 2)[-2] for r in retries] == ["0.5", "1.0", "2.0", "4.0"]
    assert lines[-1].startswith("openheim: error: the session database at ")
    assert [m.text for m in sent] == ["answered after the outage"]  # delivered again


def _outage(admin: psycopg.Connection[tuple[object, ...]], database: str, *, allow: bool) -> None:
    """Refuse (or allow again) every new connection to ``database``, and end the open ones."""
    admin.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS {str(allow).lower()}')
    if not allow:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
            (database,),
        )
