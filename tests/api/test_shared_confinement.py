"""Sessions of one configuration hold one secret policy and one shell confinement; a policy
whose patterns resolve differently (another home) is a new one."""

from __future__ import annotations

from pathlib import Path

import pytest

from openheim.api import Session
from openheim.secrets import SecretPolicy
from openheim.tools.shell_sandbox import ShellSandbox
from tests.api.conftest import MakeRuntime, Scripted


def confinement(session: Session) -> tuple[SecretPolicy, ShellSandbox]:
    """The session's secret policy and shell confinement."""
    context = session.agent.context
    assert context.secret_policy is not None
    return context.secret_policy, context.shell_sandbox


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
    policy, shell = confinement(after)
    assert policy is not confinement(before)[0]
    assert shell is not confinement(before)[1]
    assert any("elsewhere" in pattern for pattern in policy.resolved)
    await before.close()
    await after.close()
