"""``@FILE`` and ``-s @FILE`` name only regular files: a FIFO (which would block the command
forever) or a device such as ``/dev/zero`` (read to exhaustion) is a one-line usage error, and
no more than the attachment limit is ever read."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from openheim.cli.prompt import MAX_ATTACHMENT_BYTES, read_attached
from openheim.errors import ConfigError
from tests.test_cli import configure, openheim


@pytest.mark.parametrize("flag", [(), ("-s",)])
def test_a_fifo_is_refused_at_once(home: Path, work: Path, flag: tuple[str, ...]) -> None:
    os.mkfifo(work / "pipe")
    configure(home, None)
    try:
        result = openheim("run", *flag, "@pipe", "hi", home=home, cwd=work)
    except subprocess.TimeoutExpired:  # the command blocked opening the FIFO
        pytest.fail("@pipe blocked the command")
    assert result.returncode == 2, result.stderr
    assert "@pipe is not a regular file" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_device_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a regular file"):
        read_attached("/dev/zero", tmp_path)


def test_a_file_over_the_limit_is_refused(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_bytes(b"x" * (MAX_ATTACHMENT_BYTES + 1))
    with pytest.raises(ConfigError, match="over the"):
        read_attached("big.txt", tmp_path)
