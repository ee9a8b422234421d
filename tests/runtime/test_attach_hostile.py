"""``@FILE`` attachments on every surface (``run`` words, ``run -s``, the chat, ``/ws``
prompts) go through one resolver with ``read_file``'s checks: a hard link or a symlink to a
file outside the work dir, ``..``, a deny-read name, a FIFO (which would block), a device (read
to exhaustion) and a file over the limit are each refused with one line, and nothing of the
file reaches the model."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from openheim.chat.session import Chat
from openheim.config.load import Overrides, load_settings
from openheim.errors import ConfigError
from openheim.redaction.secrets import SecretPolicy
from openheim.runtime import SessionOptions
from openheim.runtime.attach import MAX_ATTACHMENT_BYTES, Attacher, mentions
from openheim.testing import FakeLLMServer
from tests.cli.test_cli import configure, openheim
from tests.server.support import served

SECRET = "TOP-SECRET-OUTSIDE-CONTENT"

HOSTILE = [
    # (the path after @, what the refusal says)
    ("linked.txt", "hard link"),
    ("out_link.txt", "symlink out of the work dir"),
    ("../outside/secret.txt", "outside the work dir"),
    ("sub/../../outside/secret.txt", "outside the work dir"),
    (".env", "deny_read"),
    ("pipe", "not a regular file"),
    ("/dev/zero", "outside the work dir"),
    ("big.txt", "attachment limit"),
]


@pytest.fixture
def hostile(tmp_path: Path, work: Path) -> Path:
    """A work dir holding each hostile kind of file, beside a folder with a secret."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    os.link(outside / "secret.txt", work / "linked.txt")
    (work / "out_link.txt").symlink_to(outside / "secret.txt")
    (work / "sub").mkdir()
    (work / ".env").write_text(f"PASSWORD={SECRET}\n")
    os.mkfifo(work / "pipe")
    (work / "big.txt").write_bytes(b"x" * (MAX_ATTACHMENT_BYTES + 1))
    (work / "notes.txt").write_text("plain notes\n")
    return work


@pytest.mark.parametrize(("raw", "why"), HOSTILE)
@pytest.mark.parametrize("flag", [(), ("-s",)])
def test_run_refuses(home: Path, hostile: Path, flag: tuple[str, ...], raw: str, why: str) -> None:
    with FakeLLMServer(["answer"]) as llm:
        configure(home, llm)
        try:
            result = openheim("run", *flag, f"@{raw}", "hi", home=home, cwd=hostile)
        except subprocess.TimeoutExpired:  # the command blocked opening the FIFO
            pytest.fail(f"@{raw} blocked the command")
        sent = str([r.body for r in llm.requests])
    assert result.returncode == 2, result.stderr
    assert f"@{raw}" in result.stderr and why in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) <= 2 and "Traceback" not in result.stderr
    assert SECRET not in sent and not llm.requests


@pytest.mark.parametrize(("raw", "why"), HOSTILE)
def test_the_chat_refuses(home: Path, hostile: Path, raw: str, why: str) -> None:
    configure(home, None)
    settings = load_settings(Overrides(), cwd=hostile, env={"OPENHEIM_HOME": str(home)})
    chat = Chat(settings, SessionOptions())
    with pytest.raises(ConfigError, match=why) as refused:
        chat.prompt(f"look at @{raw} please")
    assert f"@{raw}" in refused.value.message


@pytest.mark.parametrize(("raw", "why"), HOSTILE)
async def test_a_ws_prompt_refuses(home: Path, hostile: Path, raw: str, why: str) -> None:
    with FakeLLMServer(["answer"]) as llm:
        async with served(home, hostile, llm) as server, server.socket() as ws:
            sid = (await ws.call("agent", type="open"))["session_id"]
            reply = await ws.call("agent", type="prompt", session_id=sid, text=f"see @{raw}")
        sent = str([r.body for r in llm.requests])
    assert reply["type"] == "error" and why in reply["message"], reply
    assert SECRET not in sent and not llm.requests


def test_a_plain_file_is_attached_on_the_cli(home: Path, hostile: Path) -> None:
    with FakeLLMServer(["answer"]) as llm:
        configure(home, llm)
        result = openheim("run", "@notes.txt", "hi", home=home, cwd=hostile)
        sent = str([r.body for r in llm.requests])
    assert result.returncode == 0, result.stderr
    assert "plain notes" in sent and "notes.txt" in sent


def test_a_relative_path_starts_from_cwd_but_stays_in_the_work_dir(hostile: Path) -> None:
    attacher = Attacher(hostile, SecretPolicy(), hostile / "sub")
    assert attacher.read("../notes.txt") == "plain notes\n"
    with pytest.raises(ConfigError, match="outside the work dir"):
        attacher.read("../../outside/secret.txt")


def test_mentions_are_words_that_start_with_an_at() -> None:
    text = "mail me@example.com about @a.txt and\t@b/c.md"
    assert mentions(text) == ["a.txt", "b/c.md"]
