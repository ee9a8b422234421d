"""FakeLLMServer on its own: plain sync clients, scripts, recording, the demo CLI."""

from __future__ import annotations

import errno
import json
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from openheim.messages import Message, ToolResultBlock
from openheim.testing.fake_replies import FakeReply, FakeToolCall, RecordedRequest
from openheim.testing.fake_server import FakeLLMServer, demo_reply, summarise_listing
from tests.providers.conftest import MakeProvider
from tests.providers.support import drain, request


def post(server: FakeLLMServer, body: Any, path: str = "/chat/completions") -> tuple[int, Any]:
    """A blocking JSON POST, as a sync test or another tool would make it."""
    req = urllib.request.Request(
        server.base_url + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer k"},
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_non_streaming_answer_from_a_sync_client() -> None:
    reply = FakeReply(text="Looking.", tool_calls=[FakeToolCall("list_dir", {"path": "."})])
    with FakeLLMServer([reply]) as server:
        status, body = post(
            server, {"model": "m1", "messages": [{"role": "user", "content": "hi"}]}
        )
    assert status == 200
    assert body["model"] == "m1"
    (choice,) = body["choices"]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] == "Looking."
    (call,) = choice["message"]["tool_calls"]
    assert call["function"] == {"name": "list_dir", "arguments": '{"path": "."}'}
    assert call["id"].startswith("call_")
    (recorded,) = server.requests
    assert (recorded.method, recorded.path) == ("POST", "/v1/chat/completions")
    assert recorded.headers["authorization"] == "Bearer k"
    assert recorded.messages == [{"role": "user", "content": "hi"}]
    assert not recorded.wants_stream


def test_callable_replies_see_the_request() -> None:
    def echo(req: RecordedRequest) -> str:
        return "you said " + str(req.messages[-1]["content"])

    with FakeLLMServer([echo, FakeReply(text="second")]) as server:
        first = post(server, {"messages": [{"role": "user", "content": "ping"}]})[1]
        second = post(server, {"messages": []})[1]
        assert server.remaining == 0
        server.assert_done()
    assert first["choices"][0]["message"]["content"] == "you said ping"
    assert second["choices"][0]["message"]["content"] == "second"


def test_default_answers_when_the_queue_is_empty() -> None:
    with FakeLLMServer(["queued"], default="fallback") as server:
        texts = [
            post(server, {"messages": []})[1]["choices"][0]["message"]["content"] for _ in "abc"
        ]
    assert texts == ["queued", "fallback", "fallback"]
    assert server.unexpected_requests == []


def test_script_ran_out_unknown_path_and_failing_callable_are_recorded() -> None:
    def broken(req: RecordedRequest) -> FakeReply:
        raise ValueError("boom")

    with FakeLLMServer([broken]) as server:
        status, body = post(server, {"messages": []})
        assert (status, "ValueError('boom')" in body["error"]["message"]) == (500, True)
        status, body = post(server, {"messages": []})
        assert status == 500 and "script ran out" in body["error"]["message"]
        status, body = post(server, {}, path="/embeddings")
        assert status == 404 and "no route" in body["error"]["message"]
    assert [r.path for r in server.unexpected_requests] == [
        "/v1/chat/completions",
        "/v1/chat/completions",
        "/v1/embeddings",
    ]
    with pytest.raises(AssertionError, match="3 unexpected request"):
        server.assert_done()


def test_unused_replies_fail_assert_done() -> None:
    with FakeLLMServer(["never asked"]) as server:
        pass
    with pytest.raises(AssertionError, match="1 scripted reply"):
        server.assert_done()


def test_models_endpoint_and_wait_for_requests() -> None:
    with FakeLLMServer() as server:
        with urllib.request.urlopen(server.base_url + "/models", timeout=10) as response:
            models = json.loads(response.read())
        assert models["data"][0]["id"] == "fake-model"
        assert len(server.wait_for_requests(1, timeout=5)) == 1
        with pytest.raises(TimeoutError, match="expected 2"):
            server.wait_for_requests(2, timeout=0.05)


def test_not_started_server_has_no_url() -> None:
    with pytest.raises(RuntimeError, match="not started"):
        _ = FakeLLMServer().base_url


def tool_request(content: str) -> RecordedRequest:
    messages = [
        {"role": "user", "content": "what is here?"},
        {"role": "assistant", "content": None, "tool_calls": []},
        {"role": "tool", "tool_call_id": "c", "content": content},
    ]
    return RecordedRequest("POST", "/v1/chat/completions", {}, {"messages": messages})


def test_demo_calls_list_dir_then_summarises() -> None:
    first = demo_reply(RecordedRequest("POST", "/", {}, {"messages": [{"role": "user"}]}))
    assert [(c.name, c.arguments) for c in first.tool_calls] == [("list_dir", {"path": "."})]
    second = demo_reply(tool_request("a.txt\nsrc/\n\nREADME.md\n"))
    assert second.tool_calls == ()
    assert second.text == "The work directory contains 3 entries: a.txt, src/, README.md."


@pytest.mark.parametrize(
    ("output", "summary"),
    [
        ("", "The work directory is empty."),
        ("only.txt", "The work directory contains 1 entry: only.txt."),
        ("Error: not a directory", "The list_dir tool failed: not a directory"),
    ],
)
def test_summarise_listing(output: str, summary: str) -> None:
    assert summarise_listing(output) == summary


async def test_demo_cli_serves_a_conversation_until_sigterm(
    tmp_path: Path, make_provider: MakeProvider
) -> None:
    port_file = tmp_path / "port"
    command = [sys.executable, "-m", "openheim.testing.fake_server", "--demo"]
    command += ["--port", "0", "--port-file", str(port_file)]
    with subprocess.Popen(command, stderr=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stderr is not None
            banner = proc.stderr.readline()  # printed after the port file is in place
            port = int(port_file.read_text())
            assert f"http://127.0.0.1:{port}/v1" in banner
            provider = make_provider(api_base=f"http://127.0.0.1:{port}/v1")
            _, first = await drain(provider, request())
            (call,) = first.message.tool_uses
            assert (call.name, call.arguments) == ("list_dir", {"path": "."})
            history = (
                Message.user("hi"),
                first.message,
                Message("user", (ToolResultBlock(call.id, "a.txt\nb.txt"),)),
            )
            _, second = await drain(provider, request(*history))
            assert second.message.text == "The work directory contains 2 entries: a.txt, b.txt."
            _, again = await drain(provider, request())
            assert again.message.tool_uses[0].name == "list_dir"  # a new conversation
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=10) == 0
            assert "Warning" not in proc.stderr.read()
        finally:
            if proc.poll() is None:
                proc.kill()


def test_cli_without_a_script_explains_itself() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "openheim.testing.fake_server"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2
    assert "pass --demo or at least one --reply" in result.stderr


def test_a_burst_of_connections_waits_in_the_listen_queue() -> None:
    """200 clients connecting before the server accepts any all get through the handshake
    (a backlog of 5 would leave most of them in SYN retries of a second and more)."""
    import select
    import socket
    import time

    from openheim.testing import fake_server

    httpd = fake_server._HTTPServer(("127.0.0.1", 0), FakeLLMServer())  # not serving yet
    clients = [socket.socket() for _ in range(200)]
    try:
        for client in clients:
            client.setblocking(False)
            assert client.connect_ex(httpd.server_address) in (0, errno.EINPROGRESS)
        pending, deadline = set(clients), time.monotonic() + 0.5
        while pending and time.monotonic() < deadline:
            _, ready, _ = select.select([], list(pending), [], 0.05)
            pending -= {c for c in ready if c.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0}
        assert not pending, f"{len(pending)} of 200 connections were not accepted by the kernel"
    finally:
        for client in clients:
            client.close()
        httpd.server_close()
