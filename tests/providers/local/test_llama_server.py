"""The managed llama.cpp server, for real: ``python -m llama_cpp.server`` serving SmolLM2 on
loopback, killed, restarted, stopped; servers that die or never become ready.

Tests that need a model-free server use a tiny fake (``FAKE_SERVER``) that answers readiness
probes and can be told to die on a chat request.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from openheim.errors import ProviderUnavailable
from openheim.events import Notice
from openheim.process.child_env import child_env
from openheim.providers import create_provider
from openheim.providers.llama_server import LlamaServerProvider
from openheim.providers.local_models import shipped_model_path
from openheim.providers.server_process import ServerProcess
from tests.providers.local.llama_server_support import (
    FAKE_SERVER,
    HOST,
    answer_of,
    assert_gone,
    drain,
    no_process_left_behind,  # noqa: F401  (autouse: every test must reap what it started)
    settings,
    state_of,
    wait_until,
    waitable,
)

pytest.importorskip("uvicorn", reason="needs the local extra: llama-cpp-python[server]")


@pytest.fixture
async def provider(tmp_path: Path) -> AsyncIterator[LlamaServerProvider]:
    made = create_provider(settings(tmp_path))
    assert isinstance(made, LlamaServerProvider)
    yield made
    await made.aclose()


async def test_answers_restarts_after_a_kill_and_stops_on_close(
    provider: LlamaServerProvider,
) -> None:
    assert not provider.log_path.exists()  # nothing starts before the first request
    first = await drain(provider)
    assert answer_of(first).strip()
    old = provider.pid
    assert old is not None and state_of(old) not in (None, "Z")
    assert provider.api_base is not None and provider.api_base.startswith(f"http://{HOST}:")
    assert "Uvicorn running" in provider.log_path.read_text()

    os.killpg(old, signal.SIGKILL)
    wait_until(lambda: waitable(old), "the killed server can be reaped")
    second = await drain(provider)
    assert answer_of(second).strip()
    assert any(isinstance(item, Notice) and "restarted" in item.message for item in second)
    new = provider.pid
    assert new is not None and new != old and provider.restarts == 1
    assert_gone(old)  # the dead one was reaped, not left a zombie

    await provider.aclose()
    assert provider.pid is None
    assert_gone(new)


async def test_a_server_that_dies_on_a_request_is_restarted_and_the_request_resent(
    tmp_path: Path,
) -> None:
    script = tmp_path / "fake.py"
    script.write_text(FAKE_SERVER)
    command = (sys.executable, str(script), "once", str(tmp_path / "died"))
    provider = LlamaServerProvider(settings(tmp_path, server_command=command))
    try:
        await provider.start()
        first = provider.pid
        items = await drain(provider)
        assert answer_of(items) == "survived"
        assert provider.restarts == 1 and provider.pid not in (None, first)
        assert first is not None
        assert_gone(first)
    finally:
        await provider.aclose()


async def test_a_second_death_in_one_call_is_an_error_quoting_the_log(tmp_path: Path) -> None:
    script = tmp_path / "fake.py"
    script.write_text(FAKE_SERVER)
    command = (sys.executable, str(script), "always", str(tmp_path / "died"))
    provider = LlamaServerProvider(settings(tmp_path, server_command=command))
    try:
        with pytest.raises(ProviderUnavailable) as caught:
            await drain(provider)
        assert "again right after a restart" in str(caught.value)
        assert "fake server dying on purpose" in str(caught.value)
        assert not caught.value.retryable and provider.restarts == 1
    finally:
        await provider.aclose()


async def test_a_server_that_exits_at_startup_is_quoted(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"this is not a model\n")
    provider = LlamaServerProvider(settings(tmp_path, model_path=str(bogus)))
    with pytest.raises(ProviderUnavailable) as caught:
        await provider.start()
    message = str(caught.value)
    assert "exited with code 1 before it was ready" in message
    assert f"Failed to load model from file: {bogus}" in message
    assert str(provider.log_path) in message and not caught.value.retryable


async def test_a_server_that_never_gets_ready_is_stopped_and_quoted(tmp_path: Path) -> None:
    forever = "import time; print('warming up forever', flush=True); time.sleep(600)"
    command = (sys.executable, "-c", forever)
    provider = LlamaServerProvider(settings(tmp_path, server_command=command, startup_timeout=0.5))
    with pytest.raises(ProviderUnavailable) as caught:
        await provider.start()
    assert "within 0.5 s" in str(caught.value) and "warming up forever" in str(caught.value)
    assert "startup_timeout" in str(caught.value.hint)


EXIT_SCRIPT = """
import asyncio, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # even if the test runner ignores it
from pathlib import Path
from openheim.providers.base import ProviderSettings
from openheim.providers.llama_server import LlamaServerProvider
KEPT = []
async def main():
    fake, marker, data = sys.argv[1:4]
    command = (sys.executable, fake, "once", marker)
    settings = ProviderSettings(
        "local", "llama_server", "", "x", model_path=sys.argv[4], n_ctx=512,
        server_command=command, data_dir=Path(data),
    )
    KEPT.append(LlamaServerProvider(settings))  # still referenced at exit: the exit hook's job
    await KEPT[0].start()
    print(KEPT[0].pid, flush=True)
    await asyncio.sleep(600)
asyncio.run(main())
"""


def test_ctrl_c_without_aclose_leaves_no_server_behind(tmp_path: Path) -> None:
    import subprocess

    (tmp_path / "fake.py").write_text(FAKE_SERVER)
    (tmp_path / "exit.py").write_text(EXIT_SCRIPT)
    argv = [sys.executable, str(tmp_path / "exit.py"), str(tmp_path / "fake.py")]
    argv += [str(tmp_path / "died"), str(tmp_path), str(shipped_model_path())]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, text=True) as script:
        assert script.stdout is not None
        pid = int(script.stdout.readline())
        try:
            assert state_of(pid) not in (None, "Z")
            script.send_signal(signal.SIGINT)
            assert script.wait(timeout=20) != 0
            assert_gone(pid)  # killed and reaped by the exiting interpreter
        finally:
            script.kill()
            script.wait()
            if state_of(pid) is not None:
                os.killpg(pid, signal.SIGKILL)


async def test_stop_kills_the_whole_group_even_when_it_ignores_sigterm(tmp_path: Path) -> None:
    stubborn = "trap '' TERM; sleep 600 & echo $!; wait"
    log = tmp_path / "stubborn.log"
    process = ServerProcess(["sh", "-c", stubborn], env=child_env(), log_path=log, cwd=tmp_path)
    wait_until(lambda: bool(process.log_tail()), "the group's second process is up")
    sleeper = int(process.log_tail()[-1])
    assert state_of(sleeper) not in (None, "Z")
    await process.stop(grace=0.2)
    assert process.exit_code() == -signal.SIGKILL
    assert_gone(process.pid)
    assert state_of(sleeper) in (None, "Z")  # killed; reaping it is init's job, not ours
