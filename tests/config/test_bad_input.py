"""Bad configuration ends in one line on stderr and exit code 2 (``exit_codes.USAGE``), never a
traceback and never silently: a table of inputs, each run through ``openheim run``."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pytest

from openheim.config.load import load_settings
from openheim.errors import ConfigError
from openheim.term import exit_codes
from tests.cli.test_cli import openheim

FAKE = '[providers.fake]\napi_base = "http://127.0.0.1:9/v1"\ndefault_model = "m"\n'


def config(text: str | bytes) -> Callable[[Path], None]:
    """Write ``text`` as the user's config.toml."""
    data = text.encode() if isinstance(text, str) else text

    def plant(home: Path) -> None:
        (home / "config.toml").write_bytes(data)

    return plant


def garbage_model(home: Path) -> None:
    (home / "bad.gguf").write_bytes(b"GGUF\x03\x00\x00\x00" + b"\xff" * 40)
    (home / "config.toml").write_text(
        f'default_provider = "local"\n[providers.local]\nmodel_path = "{home / "bad.gguf"}"\n'
    )


def config_folder(home: Path) -> None:
    (home / "config.toml").mkdir()


class Bad(NamedTuple):
    plant: Callable[[Path], None]
    message: str
    """A regular expression the error line must match."""
    env: dict[str, str] = {}


CASES: dict[str, Bad] = {
    "web_fetch_allow port": Bad(config('web_fetch_allow = ["host:99999"]\n' + FAKE), r"web_fetch_allow entry 'host:99999' has an invalid port"),
    "web_fetch_allow letters": Bad(config('web_fetch_allow = ["host:abc"]\n' + FAKE), r"web_fetch_allow entry 'host:abc' has an invalid port"),
    "binary file": Bad(config(bytes(range(256)) * 4), r"config\.toml: not UTF-8 text"),
    "non-UTF-8 string": Bad(config(b'default_provider = "\xff\xfe"\n'), r"config\.toml: not UTF-8 text"),
    "deep nesting": Bad(config("x = " + "[" * 5000), r"config\.toml: line 1: arrays or tables nested deeper than 64 levels"),
    "home is a file": Bad(config(FAKE), r"OPENHEIM_HOME /dev/null is not a folder", {"OPENHEIM_HOME": "/dev/null"}),
    "home inside a file": Bad(config(FAKE), r"OPENHEIM_HOME /dev/null/x is not a folder", {"OPENHEIM_HOME": "/dev/null/x"}),
    "approval variable": Bad(config(FAKE), r"OPENHEIM_APPROVAL must be one of ask, edits, auto, deny, got 'bogus'", {"OPENHEIM_APPROVAL": "bogus"}),
    "negative timeout": Bad(config(FAKE + "timeout_secs = -1"), r"providers\.fake\.timeout_secs: must be greater than 0 and at most 86400, got -1"),
    "tool_choice value": Bad(config(FAKE + 'tool_choice = "sometimes"'), r"providers\.fake\.tool_choice: must be one of 'auto', 'required', got 'sometimes'"),
    "negative retries": Bad(config(FAKE + "max_retries = -3"), r"providers\.fake\.max_retries: must be at least 0 and at most 100, got -3"),
    "server lease timeout": Bad(config("[server]\nlease_timeout_secs = 0\n" + FAKE), r"server\.lease_timeout_secs: must be at least 1 and at most 3600, got 0"),
    "server connections": Bad(config("[server]\nmax_connections = 0\n" + FAKE), r"server\.max_connections: must be at least 1 and at most 1000000, got 0"),
    "gateway leader lease": Bad(config("[gateway]\nleader_lease_secs = -1\n" + FAKE), r"gateway\.leader_lease_secs: "),
    "acp table type": Bad(config("acp = 3\n" + FAKE), r"acp: expected a table/object, got "),
    "huge iterations": Bad(config("max_iterations = 1e20\n" + FAKE), r"max_iterations: expected an integer, got a number"),
    "too many iterations": Bad(config("max_iterations = 100000000\n" + FAKE), r"max_iterations: must be at least 1 and at most 100000, got 100000000"),
    "not a number": Bad(config(FAKE + "timeout_secs = nan"), r"timeout_secs: must be greater than 0"),
    "iterations variable": Bad(config(FAKE), r"max_iterations must be at least 1 and at most 100000", {"OPENHEIM_MAX_ITERATIONS": "9999999"}),
    "config is a folder": Bad(config_folder, r"config\.toml is a folder, not a file"),
    "invalid GGUF": Bad(garbage_model, r"bad\.gguf is not a GGUF file: its header is cut short or corrupt \(point model_path"),
}  # fmt: skip


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_bad_config_is_one_line_and_exit_2(home: Path, work: Path, case: Bad) -> None:
    case.plant(home)
    result = openheim("run", "hi", home=home, cwd=work, **case.env)
    assert result.returncode == exit_codes.USAGE, result.stderr
    errors = [line for line in result.stderr.splitlines() if "error" in line.lower()]
    assert len(errors) == 1 and errors[0].startswith("openheim: error: "), result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    assert re.search(case.message, errors[0]), errors[0]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            'work_dir = "a\\u0000b"',
            r"work_dir 'a\\x00b' is not a usable path: it contains a NUL character",
        ),
        (
            'data_dir = "a\\u0000b"',
            r"data_dir 'a\\x00b' is not a usable path: it contains a NUL character",
        ),
        (
            f'work_dir = "{"a" * 5000}"',
            r"work_dir \S*a{5000} is not a usable path: File name too long",
        ),
    ],
)
def test_unusable_paths_are_config_errors(home: Path, work: Path, text: str, message: str) -> None:
    (home / "config.toml").write_text(text + "\n")
    with pytest.raises(ConfigError, match=message):
        load_settings(cwd=work, env={"OPENHEIM_HOME": str(home)})
