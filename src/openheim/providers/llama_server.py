"""Provider kind ``llama_server``: a llama.cpp server that openheim starts, watches and stops.

Unlike ``llama_cpp`` (the model inside this process), the model runs in a child server spoken to
over OpenAI chat completions, so a crash in the native code cannot take openheim down and the
official ``llama-server`` (the fastest build, GPU offload) can be used. What runs (the command
and its flags) is decided in ``llama_server_command``.

* The server starts on first use, in its own process group, logging to
  ``data_dir/logs/llama-server-<provider>.log``, with the scrubbed child environment. It is ready
  once ``/health`` stops saying 503 (llama-server reports loading there; servers without it answer
  404) and ``/v1/models`` answers; a server that exits or misses ``startup_timeout`` is an error
  quoting its last log lines.
* Ports: none configured picks a free one; a configured port that is taken is handled by
  ``port_policy``: ``fail``, ``reuse`` (a server already answering there, which openheim then
  neither restarts nor stops) or ``next-free``.
* A server that dies (its process exited, or the connection to it failed) is restarted once per
  call and the request resent, as long as nothing of the answer was streamed yet; dying again in
  the same call is an error.
* ``aclose`` stops it; an exit hook stops it if ``aclose`` never runs (Ctrl-C included).
* A streamed answer without usage (``llama_cpp.server`` sends none) gets the server's own token
  counts (``server_usage``).
"""

from __future__ import annotations

import asyncio
import re
import ssl
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx

from openheim.errors import ConfigError, ProviderUnavailable, StreamCut
from openheim.events import Notice
from openheim.process.child_env import child_env
from openheim.providers.base import ModelRequest, ProviderSettings, StreamItem
from openheim.providers.llama_cpp import INSTALL_HINT
from openheim.providers.llama_server_command import check_settings, server_argv
from openheim.providers.local_models import find_model
from openheim.providers.openai_chat import OpenAIChatProvider
from openheim.providers.server_process import (
    ServerProcess,
    ephemeral_port,
    next_free_port,
    port_is_free,
)
from openheim.providers.server_usage import with_counted_usage

PROBE_TIMEOUT = 2.0
"""Seconds one readiness request may take (a busy ``llama_cpp.server`` answers late)."""
_CONNECTION_LOST = (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError)


def create(
    settings: ProviderSettings, http_client: httpx.AsyncClient | None = None
) -> LlamaServerProvider:
    """The registry's factory for kind ``llama_server``."""
    return LlamaServerProvider(settings, http_client)


@dataclass(frozen=True, slots=True)
class _Server:
    """A server in use: where it listens, the model it reports, and the adapter talking to it."""

    root: str
    model: str
    chat: OpenAIChatProvider
    process: ServerProcess | None
    """None for a server found on the port (``reuse``): openheim did not start it."""

    def exited(self) -> bool:
        return self.process is not None and self.process.exit_code() is not None


class LlamaServerProvider:
    """A Provider backed by a managed llama.cpp server; see the module docstring."""

    def __init__(
        self, settings: ProviderSettings, http_client: httpx.AsyncClient | None = None
    ) -> None:
        check_settings(settings)
        self.name = settings.name
        self.settings = settings
        self.restarts = 0
        self._client = http_client
        self._owns_client = http_client is None
        self._server: _Server | None = None
        self._lock = asyncio.Lock()

    @property
    def pid(self) -> int | None:
        """The server process openheim started; None before the first start, after ``aclose``
        and for a reused server."""
        server = self._server
        return server.process.pid if server and server.process else None

    @property
    def api_base(self) -> str | None:
        """The server's OpenAI-compatible base URL once it is up."""
        return f"{self._server.root}/v1" if self._server else None

    @property
    def log_path(self) -> Path:
        """Where the server's output goes (appended across starts, rotated when large)."""
        safe = re.sub(r"[^\w.-]", "_", self.name)
        return self.settings.data_dir / "logs" / f"llama-server-{safe}.log"

    async def start(self) -> None:
        """Start the server now rather than on the first request."""
        await self._server_for_call()

    async def aclose(self) -> None:
        """Stop the server (unless it was reused) and close the HTTP client openheim made."""
        async with self._lock:
            server, self._server = self._server, None
            if server is not None:
                await _retire(server)
            if self._owns_client and self._client is not None:
                await self._client.aclose()
                self._client = None

    async def stream(self, request: ModelRequest) -> AsyncGenerator[StreamItem, None]:
        """Stream one completion from the server, restarting it once if it died."""
        server, restarted = await self._server_for_call()
        if restarted:
            yield self._restart_notice(server)
        while True:
            yielded = False
            try:
                call = replace(request, model=server.model or request.model)
                async with aclosing(server.chat.stream(call)) as items:
                    async for item in items:
                        yielded = True
                        yield await with_counted_usage(
                            self._http(), server.root, server.chat, call, item
                        )
                return
            except (ProviderUnavailable, StreamCut) as error:
                if yielded or not _lost(server, error):
                    raise
                if restarted:
                    raise self._died_again(server, error) from error
            server = await self._restart(server)
            restarted = True
            yield self._restart_notice(server)

    async def _server_for_call(self) -> tuple[_Server, bool]:
        """The running server, started now if there is none; True if a dead one was replaced."""
        async with self._lock:
            server = self._server
            if server is None:
                self._server = await self._launch()
                return self._server, False
            if server.exited():
                return await self._replace(server), True
            return server, False

    async def _restart(self, dead: _Server) -> _Server:
        """Replace a server that failed a request (unless a concurrent call already did)."""
        async with self._lock:
            current = self._server
            if current is not None and current is not dead:
                return current
            return await self._replace(dead)

    async def _replace(self, dead: _Server) -> _Server:
        self._server = None
        await _retire(dead)
        self.restarts += 1
        self._server = await self._launch()
        return self._server

    async def _launch(self) -> _Server:
        """Find the port, then reuse the server there or start one and wait until it is ready."""
        port, reuse = self._choose_port()
        root = f"http://{_url_host(self.settings.host)}:{port}"
        if reuse:
            served = await self._probe(root)
            if served is None:
                raise self._not_a_server(port)
            return self._connect(root, served, None)
        process = ServerProcess(
            server_argv(self.settings, self.model_path(), port),
            env={"OMP_WAIT_POLICY": "PASSIVE", **child_env()},
            log_path=self.log_path,
            cwd=self.settings.data_dir,
        )
        try:
            served = await self._wait_ready(process, root)
        except BaseException:
            await process.stop()
            raise
        return self._connect(root, served, process)

    def _connect(self, root: str, served: str, process: ServerProcess | None) -> _Server:
        chat_settings = replace(
            self.settings, kind="openai_compatible", api_base=f"{root}/v1", model=served
        )
        chat = OpenAIChatProvider(chat_settings, self._http())
        return _Server(root, served, chat, process)

    def _choose_port(self) -> tuple[int, bool]:
        """The port to use, and whether a server already there is to be reused."""
        host, wanted = self.settings.host, self.settings.port
        if wanted is None:
            return ephemeral_port(host), False
        if port_is_free(host, wanted):
            return wanted, False
        if self.settings.port_policy == "next-free":
            return next_free_port(host, wanted), False
        if self.settings.port_policy == "reuse":
            return wanted, True
        raise ConfigError(
            f"provider {self.name!r}: port {wanted} on {host} is already in use "
            "(port_policy is 'fail')",
            hint="stop the program listening there, set another port, or set port_policy to "
            "'next-free' (take the next free port) or 'reuse' (use the server already there)",
        )

    def model_path(self) -> Path:
        """The GGUF file to serve: ``model_path``, else ``model``, else the shipped default."""
        wanted = self.settings.model_path or self.settings.model
        path = find_model(wanted, self.settings.data_dir)
        if path is None:
            raise ConfigError(
                f"provider {self.name!r}: no local GGUF model {wanted!r} found",
                hint="set model_path to a .gguf file, add one with `openheim models add`, or "
                f"{INSTALL_HINT} for the built-in SmolLM2",
            )
        return path

    async def _wait_ready(self, process: ServerProcess, root: str) -> str:
        """Poll until the server answers; the model it reports. Raises if it exits or stalls."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settings.startup_timeout
        delay = 0.02
        while (code := process.exit_code()) is None:
            served = await self._probe(root)
            if served is not None:
                return served
            if loop.time() >= deadline:
                await process.stop()
                raise self._startup_error(
                    process,
                    f"did not answer {root}/v1/models within {self.settings.startup_timeout:g} s",
                    "a large model may need longer: raise startup_timeout",
                )
            await asyncio.sleep(min(delay, max(0.0, deadline - loop.time())))
            delay = min(delay * 2, 0.25)
        raise self._startup_error(
            process,
            f"exited with code {code} before it was ready",
            "fix what the log reports (model_path, n_ctx, server_command), then try again",
        )

    async def _probe(self, root: str) -> str | None:
        """The model name once the server at ``root`` is ready ("" if it names none), else
        None."""
        client = self._http()
        try:
            health = await client.get(f"{root}/health", timeout=PROBE_TIMEOUT)
            if health.status_code not in (200, 404):
                return None
            models = await client.get(f"{root}/v1/models", timeout=PROBE_TIMEOUT)
            if models.status_code != 200:
                return None
            return _first_model(models.json())
        except (httpx.HTTPError, ValueError):
            return None

    def _http(self) -> httpx.AsyncClient:
        """The client for the server: ignores proxy variables, as the server is local."""
        if self._client is None:
            self._client = httpx.AsyncClient(
                verify=ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT),  # plain http: no CAs needed
                trust_env=False,
                timeout=httpx.Timeout(self.settings.timeout_secs),
            )
        return self._client

    def _startup_error(self, process: ServerProcess, what: str, hint: str) -> ProviderUnavailable:
        error = ProviderUnavailable(
            f"provider {self.name!r}: the llama.cpp server {what}; {_quoted_log(process)}",
            hint=f"{hint}; the full log is {process.log_path}",
            provider=self.name,
        )
        error.retryable = False  # starting it again fails the same way
        return error

    def _died_again(self, server: _Server, cause: Exception) -> ProviderUnavailable:
        code = server.process.exit_code() if server.process else None
        status = "stopped answering" if code is None else f"exited with code {code}"
        log = _quoted_log(server.process) if server.process else "it was not started by openheim"
        error = ProviderUnavailable(
            f"provider {self.name!r}: the llama.cpp server {status} again right after a restart "
            f"({cause.__class__.__name__}: {cause}); {log}",
            hint=f"the model may not fit in memory: lower n_ctx or use a smaller model; the log "
            f"is {self.log_path}",
            provider=self.name,
        )
        error.retryable = False
        return error

    def _not_a_server(self, port: int) -> ConfigError:
        return ConfigError(
            f"provider {self.name!r}: port {port} on {self.settings.host} is taken by a program "
            "that does not answer GET /v1/models like a llama.cpp server (port_policy is 'reuse')",
            hint="stop that program, set another port, or set port_policy to 'next-free'",
        )

    def _restart_notice(self, server: _Server) -> Notice:
        return Notice(
            f"the llama.cpp server of provider {self.name!r} stopped; restarted it at "
            f"{server.root} (log: {self.log_path})",
            level="warning",
            kind="provider",
        )


async def _retire(server: _Server) -> None:
    """Stop using a server: close its adapter and stop its process (if openheim started it)."""
    await server.chat.aclose()
    if server.process is not None:
        await server.process.stop()


def _lost(server: _Server, error: Exception) -> bool:
    """Whether a failed request means the server is gone (not merely slow)."""
    return server.exited() or isinstance(error.__cause__, _CONNECTION_LOST)


def _url_host(host: str) -> str:
    """The host to connect to: loopback for a wildcard address, IPv6 in brackets."""
    host = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
    return f"[{host}]" if ":" in host else host


def _first_model(data: Any) -> str:
    """The id of the first model in a ``/v1/models`` answer, or "" when it lists none."""
    models = data.get("data") if isinstance(data, dict) else None
    if isinstance(models, list) and models and isinstance(models[0], dict):
        found = models[0].get("id")
        return found if isinstance(found, str) else ""
    return ""


def _quoted_log(process: ServerProcess) -> str:
    lines = process.log_tail()
    if not lines:
        return "it wrote nothing to its log"
    return "its last log lines: " + " | ".join(lines)
