"""What ``openheim`` reads from outside is bounded: ``prompts add NAME FILE`` reads only a
regular file of at most the prompt limit, and stdin (of ``run`` and ``prompts add``) is read up
to a limit and refused past it, so ``/dev/zero`` or a FIFO can neither hang nor exhaust it.
Piped bytes that are not UTF-8 reach the model as U+FFFD, never as a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO

import pytest

from openheim.prompts.library import MAX_BYTES
from openheim.runtime.attach import MAX_ATTACHMENT_BYTES
from openheim.term import exit_codes
from openheim.testing import FakeLLMServer, FakeReply
from tests.cli.test_cli import configure, env_for


def openheim_bytes(
    *args: str, home: Path, cwd: Path, stdin: bytes | IO[bytes] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """``openheim ARGS`` with raw bytes (or a file such as ``/dev/zero``) as its stdin."""
    piped, source = (stdin, None) if isinstance(stdin, bytes) else (None, stdin)
    return subprocess.run(
        [sys.executable, "-m", "openheim", *args],
        cwd=cwd,
        env=env_for(home),
        input=piped,
        stdin=subprocess.DEVNULL if piped is None and source is None else source,
        capture_output=True,
        timeout=60,
        start_new_session=True,
    )


def one_line_error(result: subprocess.CompletedProcess[bytes], message: str) -> None:
    err = result.stderr.decode()
    assert result.returncode == exit_codes.USAGE, err
    assert "Traceback" not in err
    [line] = [line for line in err.splitlines() if "error" in line]
    assert message in line, line


def fifo(work: Path) -> str:
    os.mkfifo(work / "pipe")
    return "pipe"


def folder(work: Path) -> str:
    (work / "dir").mkdir()
    return "dir"


def big(work: Path) -> str:
    (work / "big.md").write_bytes(b"x" * (MAX_BYTES + 1))
    return "big.md"


def latin1(work: Path) -> str:
    (work / "latin1.md").write_bytes(b"caf\xe9\n")
    return "latin1.md"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda work: "/dev/zero", "/dev/zero: it is a character device, not a regular file"),
        (fifo, "pipe: it is a FIFO, not a regular file"),
        (folder, "dir: it is a folder, not a regular file"),
        (big, f"larger than {MAX_BYTES // 1024} KiB"),
        (latin1, "latin1.md is not UTF-8 text"),
    ],
    ids=["device", "fifo", "folder", "too big", "not UTF-8"],
)
def test_prompts_add_reads_only_a_bounded_regular_file(
    home: Path, work: Path, make: Callable[[Path], str], message: str
) -> None:
    configure(home, None)
    name = make(work)
    result = openheim_bytes("prompts", "add", "p", name, home=home, cwd=work)
    one_line_error(result, message)
    assert not (home / "prompts" / "p.md").exists()


@pytest.mark.parametrize(
    ("stdin", "message"),
    [
        ("/dev/zero", f"stdin is over the {MAX_BYTES} byte limit"),
        (b"x" * (MAX_BYTES + 1), f"stdin is over the {MAX_BYTES} byte limit"),
        (b"caf\xe9\n", "stdin is not UTF-8 text"),
    ],
    ids=["device", "too big", "not UTF-8"],
)
def test_prompts_add_reads_a_bounded_stdin(
    home: Path, work: Path, stdin: str | bytes, message: str
) -> None:
    configure(home, None)
    if isinstance(stdin, str):
        with open(stdin, "rb") as source:
            result = openheim_bytes("prompts", "add", "p", home=home, cwd=work, stdin=source)
    else:
        result = openheim_bytes("prompts", "add", "p", home=home, cwd=work, stdin=stdin)
    one_line_error(result, message)
    assert not (home / "prompts" / "p.md").exists()


def test_prompts_add_still_takes_a_file_and_stdin(home: Path, work: Path) -> None:
    configure(home, None)
    (work / "ok.md").write_text("Explain {{input}} gently. é\n")
    from_file = openheim_bytes("prompts", "add", "a", "ok.md", home=home, cwd=work)
    from_stdin = openheim_bytes("prompts", "add", "b", home=home, cwd=work, stdin=b"Be brief.\n")
    assert (from_file.returncode, from_stdin.returncode) == (0, 0), from_file.stderr
    assert (home / "prompts" / "a.md").read_text() == "Explain {{input}} gently. é\n"
    assert (home / "prompts" / "b.md").read_text() == "Be brief.\n"


@pytest.mark.parametrize(
    "stdin",
    ["/dev/zero", b"x" * (MAX_ATTACHMENT_BYTES + 1)],
    ids=["device", "too big"],
)
def test_run_refuses_stdin_past_its_limit(home: Path, work: Path, stdin: str | bytes) -> None:
    configure(home, None)
    if isinstance(stdin, str):
        with open(stdin, "rb") as source:
            result = openheim_bytes("run", "hi", home=home, cwd=work, stdin=source)
    else:
        result = openheim_bytes("run", "hi", home=home, cwd=work, stdin=stdin)
    one_line_error(result, f"stdin is over the {MAX_ATTACHMENT_BYTES} byte limit")


@pytest.mark.parametrize(
    ("piped", "seen"),
    [
        (b"caf\xe9\n", "caf\ufffd"),
        (b"\xff", "\ufffd"),
        (b"ok \xed\xa0\x80 half a pair", "ok \ufffd\ufffd\ufffd half a pair"),
        (b"caf\xc3\xa9", "caf\u00e9"),
    ],
    ids=["latin-1", "0xff", "encoded surrogate", "utf-8"],
)
def test_run_reads_undecodable_stdin_as_replacement_marks(
    home: Path, work: Path, piped: bytes, seen: str
) -> None:
    with FakeLLMServer([FakeReply(text="first"), FakeReply(text="second")]) as server:
        configure(home, server)
        first = openheim_bytes("run", home=home, cwd=work, stdin=piped)
        again = openheim_bytes("run", "--continue", "more", home=home, cwd=work)
        requests = server.requests
    assert (first.returncode, first.stdout) == (0, b"first\n"), first.stderr.decode()
    assert (again.returncode, again.stdout) == (0, b"second\n"), again.stderr.decode()
    assert requests[0].messages[-1]["content"] == seen
    assert requests[1].messages[-3]["content"] == seen  # the stored prompt, sent again
