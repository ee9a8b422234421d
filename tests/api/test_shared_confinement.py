"""Sessions of one configuration hold one path sandbox, secret policy, shell confinement and
child environment; one that comes out differently (another home, another variable) is new,
and the shared environment cannot be changed."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from openheim.api import Session
from openheim.redaction.secrets import SecretPolicy
from openheim.tools.sandbox import PathSandbox
from openheim.tools.shell_sandbox import ShellSandbox
from tests.api.conftest import MakeRuntime, Scripted


def confinement(
    session: Session,
) -> tuple[SecretPolicy, ShellSandbox, PathSandbox, Mapping[str, str]]:
    """The session's secret policy, shell confinement, path sandbox and child environment."""
    context = session.agent.context
    assert context.secret_policy is not None
    return context.secret_policy, context.shell_sandbox, context.sandbox, context.env


async def test_sessions_of_a_configuration_share_their_confinement(
    scripted: Scripted, make_runtime: MakeRuntime
) -> None:
    runtime = make_runtime()
    first, second = await runtime.new_session(), await runtime.new_session()
    other = await make_runtime().new_session()
    assert confinement(first) == confinement(second) == confinement(other)
    assert all(a is b for a, b in zip(confinement(first), confinement(other), strict=True))
    await first.close()
    await second.close()
    await other.close()


async def test_a_policy_resolving_to_other_paths_is_its_own(
    scripted: Scripted, make_runtime: MakeRuntime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = make_runtime()
    before = await runtime.new_session()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.setenv("HOME", str(elsewhere))
    after = await runtime.new_session()
    policy, shell, sandbox, _ = confinement(after)
    assert policy is not confinement(before)[0]
    assert shell is not confinement(before)[1]
    assert sandbox is confinement(before)[2]
    assert any("elsewhere" in pattern for pattern in policy.resolved)
    await before.close()
    await after.close()


async def test_a_changed_environment_is_a_new_one_and_none_can_be_changed(
    scripted: Scripted, make_runtime: MakeRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = make_runtime()
    before = await runtime.new_session()
    monkeypatch.setenv("LANG", "xx_XX.UTF-8")
    after = await runtime.new_session()
    env = confinement(after)[3]
    assert env is not confinement(before)[3]
    assert env["LANG"] == "xx_XX.UTF-8"
    changing: Any = env
    with pytest.raises(TypeError):
        changing["LANG"] = "C"
    await before.close()
    await after.close()
