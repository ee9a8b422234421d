"""End to end: secrets through ``openheim run`` against FakeLLMServer on loopback.

Each test reproduces an attack: a secret file attached with ``@``, a key streamed in pieces,
a shell command reading openheim's environment or a ``.env`` password.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
from pathlib import Path

import pytest

from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from openheim.testing.fake_replies import RecordedRequest
from tests.cli.test_cli import configure, openheim


@pytest.fixture
def work(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


@pytest.mark.parametrize(
    ("name", "pattern"), [(".env", ".env*"), (".env.local", ".env*"), ("deploy.pem", "*.pem")]
)
def test_a_secret_file_is_not_attached(home: Path, work: Path, name: str, pattern: str) -> None:
    (work / name).write_text("DB_PASSWORD=correct-horse-battery\n")
    (work / "innocent.txt").symlink_to(work / name)
    with FakeLLMServer([]) as server:
        configure(home, server)
        for shown in (name, "innocent.txt"):
            result = openheim("run", "summarise", f"@{shown}", home=home, cwd=work)
            assert result.returncode == 2, result.stderr
            assert f"refused to attach @{shown}: it matches the secret pattern {pattern!r}" in (
                result.stderr
            )
            assert "deny_read" in result.stderr and "Traceback" not in result.stderr
    assert server.requests == [] and "correct-horse" not in result.stderr


def test_deny_read_in_config_decides_what_may_be_attached(home: Path, work: Path) -> None:
    (work / ".env").write_text("PLAIN=shown\n")
    with FakeLLMServer(["ok"]) as server:
        configure(home, server)
        (home / "config.toml").write_text(
            'deny_read = ["*.pem"]\n' + (home / "config.toml").read_text()
        )
        result = openheim("run", "summarise", "@.env", home=home, cwd=work)
    assert result.returncode == 0, result.stderr
    assert "PLAIN=shown" in str(server.requests[0].messages[-1]["content"])


KEY = "fake-provider-key-0123456789abcdef"
"""The provider key: it matches no key format, only its registration hides it."""


def keyed(home: Path, server: FakeLLMServer, extra: str = "") -> None:
    configure(home, server, extra='env_var = "FAKE_API_KEY"\n')
    if extra:
        (home / "config.toml").write_text(extra + (home / "config.toml").read_text())


def pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def test_a_key_streamed_in_pieces_is_redacted(home: Path, work: Path) -> None:
    answer = f"Your key is {KEY}. Keep it."
    replies = [FakeReply(chunks=pieces(answer, 7)), FakeReply(chunks=pieces(answer, 7))]
    with FakeLLMServer(replies) as server:
        keyed(home, server)
        text = openheim("run", "key?", home=home, cwd=work, FAKE_API_KEY=KEY)
        lines = openheim("run", "--json", "key?", home=home, cwd=work, FAKE_API_KEY=KEY)
    assert text.returncode == 0 and lines.returncode == 0, text.stderr + lines.stderr
    assert text.stdout == "Your key is [REDACTED]. Keep it.\n"
    events = [json.loads(line) for line in lines.stdout.splitlines()]
    joined = "".join(e["text"] for e in events if e["type"] == "text_delta")
    assert joined == "Your key is [REDACTED]. Keep it."
    assert KEY[:10] not in text.stdout + lines.stdout + text.stderr + lines.stderr


def decoded_lines(tool_result: str) -> str:
    """The base64 lines of a command's stdout, decoded."""
    stdout = tool_result.split("--- stdout ---\n", 1)[1].split("\n--- stderr ---", 1)[0]
    out = []
    for line in stdout.split():
        with contextlib.suppress(binascii.Error, ValueError):
            out.append(base64.b64decode(line + "=" * (-len(line) % 4)).decode("utf-8", "replace"))
    return "\n".join(out)


READ_ENVIRONS = (
    "base64 -w0 /proc/$PPID/environ; echo; "
    "cat /proc/*/environ | tr '\\0' '\\n' | grep FAKE_API | base64 -w0"
)


@pytest.mark.parametrize("sandbox", ["auto", "off"])
def test_a_command_cannot_read_the_key_from_openheims_environment(
    home: Path, work: Path, sandbox: str
) -> None:
    seen: list[str] = []

    def answer(request: RecordedRequest) -> FakeReply:
        seen.append(request.last_tool_result or "")
        return FakeReply(text="done")

    (work / "probe.sh").write_text(READ_ENVIRONS)  # a script: the risk check does not read it
    call = FakeToolCall("execute_command", {"command": "sh probe.sh"})
    with FakeLLMServer([FakeReply(tool_calls=[call]), answer]) as server:
        keyed(home, server, extra=f'shell_sandbox = "{sandbox}"\n')
        result = openheim(
            "run", "--allow-shell", "--approve", "auto", "go", home=home, cwd=work, FAKE_API_KEY=KEY
        )
    assert result.returncode == 0, result.stderr
    assert seen[0].startswith("exit code: 0"), seen[0]
    # unconfined, the attack works: that is why commands run in the sandbox
    assert (KEY in decoded_lines(seen[0])) is (sandbox == "off")


def test_a_password_in_env_is_not_shown_by_the_shell(home: Path, work: Path) -> None:
    (work / ".env").write_text(
        "DB_PASSWORD=correct-horse-battery-staple\n"
        "export API_SECRET='s3cr3t-value-42' # rotated monthly\n"
        "X_TOKEN=1\nGREETING=hello-world-of-plain-text\n"
    )
    seen: list[str] = []

    def answer(request: RecordedRequest) -> FakeReply:
        seen.append(request.last_tool_result or "")
        return FakeReply(text="done")

    call = FakeToolCall("execute_command", {"command": "cat .env"})
    with FakeLLMServer([FakeReply(tool_calls=[call]), answer]) as server:
        configure(home, server)
        result = openheim("run", "--allow-shell", "--approve", "auto", "go", home=home, cwd=work)
    assert result.returncode == 0, result.stderr
    assert "DB_PASSWORD=[REDACTED]" in seen[0] and "API_SECRET='[REDACTED]'" in seen[0]
    assert "X_TOKEN=1\nGREETING=hello-world-of-plain-text" in seen[0]
    assert "correct-horse" not in seen[0] + result.stdout + result.stderr
