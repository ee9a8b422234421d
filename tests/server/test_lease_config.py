"""``[server] lease_timeout_secs``: how soon a dead replica's sessions are free elsewhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from openheim.config.load import Overrides, Settings, load_settings
from openheim.errors import ConfigError
from openheim.runtime.store_writes import Heartbeat
from openheim.server.launch import build
from openheim.testing import FakeLLMServer
from tests.server.support import write_config


def _settings(home: Path, work: Path, extra: str) -> Settings:
    with FakeLLMServer() as llm:
        write_config(home, llm, extra)
    return load_settings(Overrides(work_dir=str(work)), cwd=work, env={"OPENHEIM_HOME": str(home)})


def test_the_server_heartbeats_to_the_timeout_it_is_given(
    home: Path, work: Path, pg_url: str
) -> None:
    settings = _settings(home, work, f'store_url = "{pg_url}"\n[server]\nlease_timeout_secs = 4')
    context, _ = build(settings, public=False)
    store = context.store
    try:
        lease = store.acquire(store.create(cwd="/", provider="p", model="m").id)
        every = Heartbeat(lease, store).every
        lease.release()
    finally:
        context.runtime.shared.give_back(store)
    assert lease.timeout == 4 and every == pytest.approx(4 / 3)


@pytest.mark.parametrize("value", ["0", "-1", "7200", '"soon"'])
def test_a_bad_lease_timeout_is_refused_in_one_line(home: Path, work: Path, value: str) -> None:
    with pytest.raises(ConfigError) as refused:
        _settings(home, work, f"[server]\nlease_timeout_secs = {value}")
    message = refused.value.message
    assert "server" in message and "\n" not in message
