"""The approval mode changed during a session: found through the gates wrapped around the
policy, cycled ask -> edits -> auto -> deny -> ask, and nothing changed where there is no policy."""

from __future__ import annotations

from pathlib import Path

import pytest

from openheim.approval import Allow, ApprovalRequest, Ask, Deny
from openheim.config.schema import ApprovalMode
from openheim.runtime.policy import (
    MODES,
    approval_mode,
    next_approval_mode,
    policy_of,
    set_approval_mode,
)
from openheim.safety.policy import PolicyGate
from openheim.safety.rules import RuleSet
from openheim.tools.sandbox import PathSandbox


class Wrapper:
    """A gate around another, as the staged changes' and the pre_tool hook's gates are."""

    def __init__(self, inner: object) -> None:
        self.inner = inner


def gate(tmp_path: Path, mode: ApprovalMode = "ask") -> PolicyGate:
    return PolicyGate(mode, RuleSet(), PathSandbox(tmp_path))


def write(tmp_path: Path) -> ApprovalRequest:
    args = {"path": "a.txt", "content": "x"}
    return ApprovalRequest("c1", "write_file", args, False, "edit", cwd=str(tmp_path))


def test_the_modes_cycle_in_order(tmp_path: Path) -> None:
    policy = gate(tmp_path)
    wrapped = Wrapper(Wrapper(policy))
    assert policy_of(wrapped) is policy and approval_mode(wrapped) == "ask"
    seen = [next_approval_mode(wrapped) for _ in MODES]
    assert seen == ["edits", "auto", "deny", "ask"]


@pytest.mark.parametrize(
    ("mode", "verdict"), [("ask", Ask), ("edits", Allow), ("auto", Allow), ("deny", Deny)]
)
async def test_the_mode_set_decides_the_next_call(
    tmp_path: Path, mode: ApprovalMode, verdict: type
) -> None:
    policy = gate(tmp_path, "auto" if mode == "ask" else "ask")
    assert set_approval_mode(Wrapper(policy), mode)
    assert isinstance(await policy.check(write(tmp_path)), verdict)


def test_a_gate_without_a_policy_is_left_alone() -> None:
    foreign = Wrapper(object())
    assert policy_of(foreign) is None and approval_mode(foreign) is None
    assert next_approval_mode(foreign) is None
    assert not set_approval_mode(foreign, "auto")
