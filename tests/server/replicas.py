"""Three real ``openheim serve`` processes on one PostgreSQL store, behind a real HAProxy.

Each replica is its own "machine": its own ``OPENHEIM_HOME`` (data dir), the same work dir,
the same token (``OPENHEIM_SERVER_TOKEN``) and the same ``OPENHEIM_STORE_URL``. HAProxy, from
Debian (``scripts/system-deps``), listens on a loopback port with the configuration
``haproxy_config`` writes (the one docs/deploy.md shows): round-robin, WebSocket upgrades kept
open as tunnels, ``GET /healthz`` as the health check, a refused connection retried on another
replica, and each answer naming the replica that gave it in ``X-Replica``. With ``hosts``,
each replica also has a host name of its own (a UTS namespace of its own, ``unshare``), so
the others take its prompt leases for another machine's: stale once not refreshed for
``[server] lease_timeout_secs``, not as soon as its pid is gone.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.cli.test_cli import env_for
from tests.server.support import TOKEN, Endpoint, write_config

WAIT = 30.0
"""Seconds a replica or HAProxy may take to come up."""
REPLICAS = 3


def haproxy_program() -> str:
    """``$OPENHEIM_HAPROXY``, else haproxy on PATH, else Debian's ``/usr/sbin/haproxy``."""
    found = os.environ.get("OPENHEIM_HAPROXY") or shutil.which("haproxy") or "/usr/sbin/haproxy"
    assert os.access(found, os.X_OK), "haproxy is missing: run scripts/system-deps"
    return found


def haproxy_config(bind: str, servers: Sequence[str], tls: str | None = None) -> str:
    """The HAProxy configuration of a fleet: listening on ``bind`` (with TLS from the
    certificate file ``tls``, plain HTTP redirected to it, when given), spreading connections
    round-robin over ``servers`` (``HOST:PORT`` each)."""
    listen = f"    bind {bind}\n"
    if tls is not None:
        listen = (
            f"    bind {bind} ssl crt {tls} alpn http/1.1\n"
            "    bind :80\n"
            "    http-request redirect scheme https unless { ssl_fc }\n"
            "    http-request set-header X-Forwarded-Proto https if { ssl_fc }\n"
        )
    rows = "".join(
        f"    server replica{n} {address} check inter 500ms fall 2 rise 1\n"
        for n, address in enumerate(servers, start=1)
    )
    return (
        "global\n"
        "    maxconn 4096\n"
        "\n"
        "defaults\n"
        "    mode http\n"
        "    option http-server-close\n"
        "    option forwardfor\n"
        "    option redispatch 1\n"
        "    retries 2\n"
        "    timeout connect 2s\n"
        "    timeout client 60s\n"
        "    timeout server 60s\n"
        "    timeout tunnel 1h\n"
        "\n"
        "frontend openheim\n"
        f"{listen}"
        "    default_backend replicas\n"
        "\n"
        "backend replicas\n"
        "    balance roundrobin\n"
        "    option httpchk GET /healthz\n"
        "    http-check expect string ok\n"
        "    http-response set-header X-Replica %[srv_name]\n"
        f"{rows}"
    )


@dataclass
class Fleet:
    """The replicas (their processes, by HAProxy's server name) and HAProxy's base URL."""

    url: str
    replicas: dict[str, subprocess.Popen[str]]

    @property
    def ws_url(self) -> str:
        return self.url.replace("http://", "ws://")

    def kill(self, name: str) -> None:
        """SIGKILL the replica ``name`` (and whatever it started) and reap it."""
        process = self.replicas[name]
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=WAIT)


@contextlib.contextmanager
def fleet(
    tmp: Path,
    work: Path,
    llm: Endpoint,
    store_url: str,
    extra: str = "",
    *,
    hosts: bool = False,
) -> Iterator[Fleet]:
    """Three replicas on ``store_url`` (``extra`` at the top of each one's config; with
    ``hosts``, each on a host name of its own) and HAProxy in front, all stopped at the end."""
    started: list[subprocess.Popen[str]] = []
    try:
        addresses = []
        for n in range(1, REPLICAS + 1):
            home = tmp / f"replica{n}"
            home.mkdir()
            write_config(home, llm, extra)
            process = _replica(home, work, store_url, f"replica{n}" if hosts else None)
            started.append(process)
            addresses.append(_address(process))
        port = _free_port()
        config = tmp / "haproxy.cfg"
        config.write_text(haproxy_config(f"127.0.0.1:{port}", addresses))
        checked = subprocess.run(
            [haproxy_program(), "-c", "-q", "-f", str(config)],
            capture_output=True,
            text=True,
            timeout=WAIT,
            check=False,
        )
        assert checked.returncode == 0, checked.stderr
        proxy = subprocess.Popen(
            [haproxy_program(), "-db", "-f", str(config)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        started.append(proxy)
        url = f"http://127.0.0.1:{port}"
        _until_all_answer(url, proxy)
        names = [f"replica{n}" for n in range(1, REPLICAS + 1)]
        yield Fleet(url, dict(zip(names, started, strict=False)))
    finally:
        for process in reversed(started):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=WAIT)


def _replica(home: Path, work: Path, store_url: str, host: str | None) -> subprocess.Popen[str]:
    env = env_for(home, OPENHEIM_SERVER_TOKEN=TOKEN, OPENHEIM_STORE_URL=store_url)
    serve = [sys.executable, "-m", "openheim", "serve", "--port", "0", "--work-dir", str(work)]
    return subprocess.Popen(
        serve if host is None else _on_host(host, serve),
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )


RENAMED = (
    "import os, socket, sys; socket.sethostname(sys.argv[1]); os.execv(sys.argv[2], sys.argv[2:])"
)
"""Set the host name ``argv[1]``, then become the command ``argv[2:]`` (the same pid)."""


def _on_host(host: str, command: list[str]) -> list[str]:
    """``command`` run with the host name ``host`` in a UTS namespace of its own (as root; in a
    user namespace of its own too otherwise)."""
    unshare = shutil.which("unshare")
    assert unshare is not None, "unshare (util-linux) is missing"
    own = ["--uts"] if os.geteuid() == 0 else ["--user", "--map-root-user", "--uts"]
    return [unshare, *own, sys.executable, "-c", RENAMED, host, *command]


def _address(process: subprocess.Popen[str]) -> str:
    """The ``127.0.0.1:PORT`` a replica announces on its first line."""
    assert process.stdout is not None
    line = process.stdout.readline()
    found = re.search(r"http://(127\.0\.0\.1:\d+)/", line)
    assert found is not None, f"the replica said {line!r} (exit code {process.poll()})"
    return found.group(1)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _until_all_answer(url: str, proxy: subprocess.Popen[str]) -> None:
    """Wait until HAProxy answers ``/healthz`` from every replica in turn."""
    seen: set[str] = set()
    deadline = time.monotonic() + WAIT
    while len(seen) < REPLICAS:
        assert time.monotonic() < deadline, f"replicas answering through HAProxy: {seen}"
        assert proxy.poll() is None, proxy.stderr.read() if proxy.stderr else ""
        with contextlib.suppress(httpx.HTTPError):
            answer = httpx.get(f"{url}/healthz", timeout=2)
            if answer.status_code == 200 and answer.text == "ok\n":
                seen.add(answer.headers["x-replica"])
                continue
        time.sleep(0.05)
