"""The managed llama.cpp server, for real: ``python -m llama_cpp.server`` serving SmolLM2 on
loopback, killed, restarted, stopped; port policies; servers that never become ready.

Tests that need a model-free server use a tiny fake (``FAKE_SERVER``) that answers readiness
probes and can be told to die on a chat request.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import httpx
import pytest

from openheim.child_env import child_env
from openheim.errors import ConfigError, ProviderUnavailable
from openheim.events import Notice
from openheim.messages import Message
from openheim.providers import create_provider
from openheim.providers import llama_server as llama_server_module
from openheim.providers.base import ModelRequest, ModelResponse, ProviderSettings, StreamItem
from openheim.providers.llama_server import LlamaServerProvider, server_argv
from openheim.providers.local_models import shipped_model_path
from openheim.providers.server_process import ServerProcess, ephemeral_port

pytest.importorskip("uvicorn", reason="needs the local extra: llama-cpp-python[server]")

HOST = "127.0.0.1"
PYTHON_SERVER = (sys.executable, "-m", "llama_cpp.server")
FAKE_SERVER = """
import http.server, json, os, pathlib, sys
mode, marker = sys.argv[1], pathlib.Path(sys.argv[2])
port = int(sys.argv[sys.argv.index("--port") + 1])
class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass
    def reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def do_GET(self):
        self.reply(200, {"data": [{"id": "fake-model"}]})
    def do_POST(self):
        self.rfile.read(int(self.headers["content-length"]))
        if mode == "always" or not marker.exists():
            marker.touch()
            print("fake server dying on purpose", flush=True)
            os._exit(3)
        message = {"role": "assistant", "content": "survived"}
        self.reply(200, {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})
print("fake server listening", flush=True)
http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
"""


def settings(data_dir: Path, **extra: object) -> ProviderSettings:
    base: dict[str, object] = {
        "n_ctx": 1024,
        "temperature": 0.0,
        "server_command": PYTHON_SERVER,
        "data_dir": data_dir,
        "startup_timeout": 60.0,
    }
    return ProviderSettings(
        "local",
        "llama_server",
        "",
        "SmolLM2-135M-Instruct",
        **{**base, **extra},  # type: ignore[arg-type]
    )


def ask(text: str = "What is 2 + 2?") -> ModelRequest:
    return ModelRequest(
        "SmolLM2-135M-Instruct", (Message.user(text),), max_tokens=12, temperature=0.0
    )


async def drain(provider: LlamaServerProvider) -> list[StreamItem]:
    return [item async for item in provider.stream(ask())]


def answer_of(items: list[StreamItem]) -> str:
    response = items[-1]
    assert isinstance(response, ModelResponse)
    return response.message.text


def wait_until(condition: Callable[[], bool], what: str, within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.01)


def state_of(pid: int) -> str | None:
    """A process's state letter (``Z`` for a zombie), or None once it is gone entirely."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[0]


def waitable(pid: int) -> bool:
    """Whether a child of this process has ended and awaits reaping (checked without reaping)."""
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def processes() -> Iterator[tuple[int, str, int, int]]:
    """Every process: pid, state, parent pid, process group."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state, ppid, pgrp = stat.read_text().rsplit(")", 1)[1].split()[:3]
        except OSError:
            continue
        yield int(stat.parent.name), state, int(ppid), int(pgrp)


def children() -> set[int]:
    """Processes whose parent is this test process, zombies included."""
    return {pid for pid, _, ppid, _ in processes() if ppid == os.getpid()}


def assert_gone(pid: int) -> None:
    """The process was reaped (no zombie) and nothing of its group runs on."""
    assert state_of(pid) is None
    assert [p for p, state, _, pgrp in processes() if pgrp == pid and state != "Z"] == []


@pytest.fixture(autouse=True)
def no_process_left_behind() -> Iterator[None]:
    """Every test must stop (and reap) every process it started, whatever happened."""
    before = children()
    yield
    assert children() <= before


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A loopback port held by a plain listening socket that never answers."""
    with socket.socket() as holder:
        holder.bind((HOST, 0))
        holder.listen()
        yield holder.getsockname()[1]


@pytest.fixture
async def provider(tmp_path: Path) -> AsyncIterator[LlamaServerProvider]:
    made = create_provider(settings(tmp_path))
    assert isinstance(made, LlamaServerProvider)
    yield made
    await made.aclose()


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


EXIT_SCRIPT = """
import asyncio, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # even if the test runner ignores it
from pathlib import Path
from openheim.providers.base import ProviderSettings
from openheim.providers.llama_server import LlamaServerProvider, server_argv
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
