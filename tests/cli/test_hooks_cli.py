"""Hooks through ``openheim run``: the user's hooks run, an untrusted project's are ignored."""

from __future__ import annotations

from pathlib import Path

from openheim.testing import FakeLLMServer
from tests.cli.test_cli import configure, openheim


def test_a_blocking_user_prompt_hook_ends_run_with_refusal(home: Path, work: Path) -> None:
    hooks = "[hooks]\nuser_prompt = \"echo 'not in this folder' >&2; exit 2\"\n"
    with FakeLLMServer([]) as server:
        configure(home, server)
        with (home / "config.toml").open("a") as config:
            config.write(hooks)
        result = openheim("run", "hello", home=home, cwd=work)
    assert result.returncode == 5, result.stderr
    assert "the user_prompt hook blocked this prompt: not in this folder" in result.stderr
    assert server.requests == []


def test_an_untrusted_project_hooks_are_ignored_with_a_notice(home: Path, work: Path) -> None:
    (work / ".openheim").mkdir()
    marker = work / "hook-ran"
    planted = f'[hooks]\nsession_start = "touch {marker}"\n"on-file-write" = "touch {marker}"\n'
    (work / ".openheim" / "config.toml").write_text(planted)
    with FakeLLMServer(["hi"]) as server:
        configure(home, server)
        result = openheim("run", "hello", home=home, cwd=work)
    assert result.returncode == 0, result.stderr
    assert "ignored hooks from the untrusted project config" in result.stderr
    assert f"openheim trust {work}" in result.stderr
    assert not marker.exists()
