"""Secret values of the work dir's ``.env`` files: which are registered, which are not."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from openheim.redaction.env_files import (
    MAX_ENV_FILE_BYTES,
    MAX_ENV_FILES,
    MAX_ENV_SECRETS,
    register_env_files,
    secret_values,
)
from openheim.redaction.secrets import REDACTED, Redactor

LINES = [
    ("DB_PASSWORD=correct-horse-battery", ["correct-horse-battery"]),
    ("export API_SECRET='s3cr3t value 42' # rotated", ["s3cr3t value 42"]),
    ('GITHUB_TOKEN="tok-1234567890"', ["tok-1234567890"]),
    ("STRIPE_KEY = sk_live_abcdefgh  # comment", ["sk_live_abcdefgh"]),
    ("OPENAI_API_KEY=key-of-any-shape", ["key-of-any-shape"]),
    ("PASSWORD=standalone-word", ["standalone-word"]),
    ("X_TOKEN=1", []),  # too short: it would hide every "1"
    ("SHORT_SECRET=abc1234", []),
    ("GREETING=hello-world-of-text", []),  # not a secret name
    ("# DB_PASSWORD=commented-out-value", []),
    ("EMPTY_PASSWORD=", []),
]


@pytest.mark.parametrize(("line", "values"), LINES, ids=[line for line, _ in LINES])
def test_secret_values_of_a_line(line: str, values: list[str]) -> None:
    assert secret_values(line) == values


def test_every_env_file_at_the_top_of_the_folder_counts(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("A_PASSWORD=first-password-1\n")
    (tmp_path / ".env.production").write_text("B_TOKEN=second-token-22\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ".env").write_text("C_SECRET=nested-secret-333\n")
    (tmp_path / "env.txt").write_text("D_SECRET=other-file-4444\n")
    redactor = Redactor()
    assert register_env_files(tmp_path, redactor) == 2
    text = "first-password-1 second-token-22 nested-secret-333 other-file-4444"
    assert redactor.redact(text) == f"{REDACTED} {REDACTED} nested-secret-333 other-file-4444"


def test_odd_files_are_skipped_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / ".env")  # opening it for reading would wait for a writer
    (tmp_path / ".env.big").write_text("BIG_SECRET=" + "x" * MAX_ENV_FILE_BYTES)
    (tmp_path / ".env.dir").mkdir()
    (tmp_path / ".env.link").symlink_to(tmp_path / "missing")
    (tmp_path / ".env.bin").write_bytes(b"BIN_PASSWORD=\xff\xfe-binary-pass\n")
    redactor = Redactor()
    assert register_env_files(tmp_path, redactor) == 1
    assert redactor.redact("\ufffd\ufffd-binary-pass") == REDACTED


def test_a_hostile_project_registers_a_bounded_number_of_values(tmp_path: Path) -> None:
    """Thousands of files and values: only the first files are read, only so many values kept."""
    for i in range(MAX_ENV_FILES * 4):
        lines = (f"V{j}_TOKEN=value-{i:04d}-{j:04d}" for j in range(100))
        (tmp_path / f".env.{i:04d}").write_text("\n".join(lines))
    redactor = Redactor()
    assert register_env_files(tmp_path, redactor) == MAX_ENV_SECRETS
    assert redactor.redact("value-0000-0000") == REDACTED
    assert redactor.redact(f"value-{MAX_ENV_FILES * 4 - 1:04d}-0000") != REDACTED
