"""Shared HTTP plumbing: the client factory, Retry-After parsing, error texts, redaction."""

from __future__ import annotations

import ssl
from email.utils import formatdate
from pathlib import Path

import certifi
import httpx
import pytest

from openheim.errors import ConfigError
from openheim.providers.http import parse_retry_after, redact, server_message
from openheim.providers.http_client import TRANSPORT_ENV, client_key, make_client, ssl_context

NOW = 1_700_000_000.0


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("7", 7.0),
        (" 1.5 ", 1.5),
        ("0", 0.0),
        ("-3", 0.0),
        (formatdate(NOW + 30, usegmt=True), 30.0),
        (formatdate(NOW - 30, usegmt=True), 0.0),
        ("soon", None),
        ("nan", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_retry_after(value: str | None, expected: float | None) -> None:
    assert parse_retry_after(value, now=NOW) == expected


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('{"error": {"message": "bad key", "type": "auth"}}', "bad key"),
        ('{"error": "model \\"x\\" not found"}', 'model "x" not found'),
        ('{"detail": [{"loc": ["body"], "msg": "field required"}]}', "field required"),
        ('{"message": "plain"}', "plain"),
        ('[{"error": {"code": 400, "message": "gemini style"}}]', "gemini style"),
        ("<html>oops</html>", None),
        ('{"unrelated": 1}', None),
    ],
)
def test_server_message_shapes(body: str, expected: str | None) -> None:
    assert server_message(body) == expected


def test_redact() -> None:
    assert (
        redact("key sk-abc used; sk-abc again", "sk-abc") == "key [redacted] used; [redacted] again"
    )
    assert redact("nothing to hide", None) == "nothing to hide"


def test_ssl_context_adds_the_cert_file_to_the_system_store(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    system = ssl_context().cert_store_stats()["x509_ca"]
    monkeypatch.setenv("SSL_CERT_FILE", certifi.where())
    context = ssl_context()
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    bundle = ssl.create_default_context(cafile=certifi.where()).cert_store_stats()["x509_ca"]
    assert context.cert_store_stats()["x509_ca"] >= max(system, bundle)


@pytest.mark.parametrize("content", [None, "not a certificate"])
def test_unusable_cert_file_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, content: str | None
) -> None:
    path = tmp_path / "ca.pem"
    if content is not None:
        path.write_text(content)
    monkeypatch.setenv("SSL_CERT_FILE", str(path))
    with pytest.raises(ConfigError, match="SSL_CERT_FILE") as caught:
        make_client(10)
    assert "unset" in (caught.value.hint or "")


async def test_client_bounds_connect_and_idle_reads_not_the_whole_response() -> None:
    client = make_client(42)
    try:
        assert client.timeout == httpx.Timeout(42)
        assert client.timeout.read == 42 and client.timeout.connect == 42
        assert client.trust_env
    finally:
        await client.aclose()


async def test_a_model_client_keeps_and_reads_no_cookie() -> None:
    async with make_client(5.0, "http://127.0.0.1:9/v1") as client:
        client.cookies = {"a": "1"}
        request = httpx.Request("GET", "http://127.0.0.1:9/v1")
        response = httpx.Response(200, headers={"Set-Cookie": "b=2; Path=/"}, request=request)
        client.cookies.extract_cookies(response)
        assert not client.cookies
        assert "cookie" not in client.build_request("GET", "http://127.0.0.1:9/v1").headers


@pytest.mark.parametrize(
    ("value", "own"),
    [(None, True), ("", True), ("openheim", True), (" OpenHeim ", True), ("httpx", False)],
)
async def test_the_transport_switch_picks_openheims_or_httpxs_own(
    monkeypatch: pytest.MonkeyPatch, value: str | None, own: bool
) -> None:
    from openheim.providers.transport import AsyncioTransport

    monkeypatch.delenv(TRANSPORT_ENV, raising=False)
    if value is not None:
        monkeypatch.setenv(TRANSPORT_ENV, value)
    for api_base in ("http://127.0.0.1:9/v1", "https://models.example.test/v1"):
        async with make_client(5.0, api_base) as client:
            chosen = client._transport
            assert isinstance(chosen, AsyncioTransport) is own, api_base
            assert isinstance(chosen, httpx.AsyncHTTPTransport) is not own, api_base
            assert client.trust_env is ("127.0.0.1" not in api_base)


def test_clients_of_the_two_transports_are_not_shared(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TRANSPORT_ENV, raising=False)
    default = client_key(5.0, "http://127.0.0.1:9/v1")
    monkeypatch.setenv(TRANSPORT_ENV, "httpx")
    assert client_key(5.0, "http://127.0.0.1:9/v1") != default


@pytest.mark.parametrize("value", ["h2", "httpcore", "1"])
def test_an_unknown_transport_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv(TRANSPORT_ENV, value)
    with pytest.raises(ConfigError) as caught:
        make_client(5.0, "http://127.0.0.1:9/v1")
    assert str(caught.value) == (
        f"{TRANSPORT_ENV}={value!r} is not a transport "
        f"(set {TRANSPORT_ENV} to openheim (the default) or httpx)"
    )
