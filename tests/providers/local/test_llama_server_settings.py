"""The llama.cpp server's port policies (fail, next free, reuse), its flags and settings checks."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from openheim.errors import ConfigError
from openheim.process.child_env import child_env
from openheim.providers import llama_server as llama_server_module
from openheim.providers.llama_server import LlamaServerProvider
from openheim.providers.llama_server_command import server_argv
from openheim.providers.local_models import shipped_model_path
from openheim.providers.server_process import ServerProcess, ephemeral_port
from tests.providers.local.llama_server_support import (
    HOST,
    PYTHON_SERVER,
    answer_of,
    children,
    drain,
    no_process_left_behind,  # noqa: F401  (autouse: every test must reap what it started)
    settings,
    wait_until,
)

pytest.importorskip("uvicorn", reason="needs the local extra: llama-cpp-python[server]")


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A loopback port held by a plain listening socket that never answers."""
    with socket.socket() as holder:
        holder.bind((HOST, 0))
        holder.listen()
        yield holder.getsockname()[1]


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[tuple[int, ServerProcess]]:
    """A llama_cpp.server started by the test itself, not by a provider."""
    port = ephemeral_port(HOST)
    model = str(shipped_model_path())
    argv = [
        *PYTHON_SERVER,
        "--model",
        model,
        "--host",
        HOST,
        "--port",
        str(port),
        "--n_ctx",
        "1024",
    ]
    process = ServerProcess(argv, env=child_env(), log_path=tmp_path / "own.log", cwd=tmp_path)

    def answers() -> bool:
        assert process.exit_code() is None, process.log_tail()
        try:
            return httpx.get(f"http://{HOST}:{port}/v1/models", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    wait_until(answers, "the test's own server answers", within=60)
    yield port, process
    asyncio.run(process.stop())


async def test_fail_policy_names_the_taken_port(tmp_path: Path, taken_port: int) -> None:
    provider = LlamaServerProvider(settings(tmp_path, port=taken_port, port_policy="fail"))
    with pytest.raises(ConfigError, match=f"port {taken_port} on {HOST} is already in use"):
        await provider.start()
    assert not provider.log_path.exists()  # no server was started


async def test_next_free_policy_serves_on_another_port(tmp_path: Path, taken_port: int) -> None:
    provider = LlamaServerProvider(settings(tmp_path, port=taken_port))
    try:
        await provider.start()
        assert provider.api_base is not None
        port = int(provider.api_base.rsplit(":", 1)[1].split("/")[0])
        assert port > taken_port
        async with httpx.AsyncClient() as client:
            assert (await client.get(f"{provider.api_base}/models")).status_code == 200
    finally:
        await provider.aclose()


async def test_reuse_policy_talks_to_the_running_server(
    tmp_path: Path, own_server: tuple[int, ServerProcess]
) -> None:
    port, process = own_server
    before = children()
    provider = LlamaServerProvider(settings(tmp_path, port=port, port_policy="reuse"))
    try:
        assert answer_of(await drain(provider)).strip()
        assert provider.pid is None and provider.api_base == f"http://{HOST}:{port}/v1"
        assert children() == before and process.pid in before  # no second server spawned
    finally:
        await provider.aclose()
    assert process.exit_code() is None  # a reused server is not ours to stop


async def test_reuse_policy_refuses_a_port_held_by_something_else(
    tmp_path: Path, taken_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(llama_server_module, "PROBE_TIMEOUT", 0.2)
    provider = LlamaServerProvider(settings(tmp_path, port=taken_port, port_policy="reuse"))
    with pytest.raises(ConfigError, match=f"port {taken_port} .* does not answer"):
        await provider.start()
    await provider.aclose()


def test_each_server_flavour_gets_its_own_flags(tmp_path: Path) -> None:
    model = shipped_model_path()
    assert model is not None
    native = settings(tmp_path, server_command=("/opt/llama-server",), n_threads=3)
    assert server_argv(native, model, 8099) == [
        "/opt/llama-server", "-m", str(model), "--alias", "SmolLM2-135M-Instruct",
        "--host", HOST, "--port", "8099", "-c", "1024", "-t", "3",
    ]  # fmt: skip
    python = server_argv(settings(tmp_path, n_threads=3), model, 8099)
    assert python[3:] == [
        "--model", str(model), "--model_alias", "SmolLM2-135M-Instruct",
        "--host", HOST, "--port", "8099", "--n_ctx", "1024", "--n_threads", "3",
    ]  # fmt: skip


def test_invalid_settings_are_refused_before_anything_runs(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="port_policy 'sometimes'"):
        LlamaServerProvider(settings(tmp_path, port_policy="sometimes"))
    with pytest.raises(ConfigError, match="port 70000"):
        LlamaServerProvider(settings(tmp_path, port=70000))


async def test_a_missing_model_is_a_config_error(tmp_path: Path) -> None:
    provider = LlamaServerProvider(settings(tmp_path, model_path=str(tmp_path / "none.gguf")))
    with pytest.raises(ConfigError, match="no local GGUF model"):
        await provider.start()
