"""A session's approval policy: the mode and the rules of the permissions files, the staged
changes' gate around it, the mode changed during a session, and ``--remember`` writing learned
rules back."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, cast

from openheim.approval import ApprovalGate
from openheim.config.load import Settings
from openheim.config.schema import APPROVAL_MODES, ApprovalMode
from openheim.events import Notice
from openheim.safety.permissions import add_rule, load_rules, project_permissions
from openheim.safety.policy import PolicyGate
from openheim.tools.sandbox import PathSandbox

if TYPE_CHECKING:
    from openheim.safety.staging import StagingArea


def policy_gate(settings: Settings, sandbox: PathSandbox, notices: list[Notice]) -> PolicyGate:
    """The approval policy: mode from config/flags, rules from the permissions files; each rule
    left out (an untrusted project's allow rules) adds a notice to ``notices``."""
    root = settings.project_root or Path(settings.work_dir)
    rules, ignored = load_rules(settings.data_dir, root, settings.project_trusted)
    notices.extend(Notice(line, "warning", "permissions") for line in ignored)
    return PolicyGate(cast("ApprovalMode", settings.approval), rules, sandbox)


def staged_gate(gate: ApprovalGate, area: StagingArea | None) -> ApprovalGate:
    """``gate``, around which applying a staged change is approved like a write of its file."""
    if area is None:
        return gate
    from openheim.safety.staging import StagedApplyGate

    return StagedApplyGate(gate, area)


MODES = APPROVAL_MODES
"""The approval modes in the order a surface cycles through them: ask, edits, auto, deny."""


def policy_of(gate: object) -> PolicyGate | None:
    """The policy gate inside ``gate`` (the staged changes' gate, the pre_tool hook's gate are
    wrapped around it); None when there is none (a library caller's own gate)."""
    while not isinstance(gate, PolicyGate) and hasattr(gate, "inner"):
        gate = gate.inner
    return gate if isinstance(gate, PolicyGate) else None


def approval_mode(gate: object) -> ApprovalMode | None:
    """The session's approval mode now; None when its gate has no policy."""
    policy = policy_of(gate)
    return None if policy is None else policy.mode


def set_approval_mode(gate: object, mode: ApprovalMode) -> bool:
    """Use ``mode`` for the rest of the session (rules, learnt ones included, stay); False
    (nothing changed) when the gate has no policy."""
    policy = policy_of(gate)
    if policy is not None:
        policy.mode = mode
    return policy is not None


def next_approval_mode(gate: object) -> ApprovalMode | None:
    """Switch the session to the mode after its present one in ``MODES`` (deny wraps round to
    ask) and return it; None (nothing changed) when the gate has no policy."""
    mode = approval_mode(gate)
    if mode is None:
        return None
    following = MODES[(MODES.index(mode) + 1) % len(MODES)]
    set_approval_mode(gate, following)
    return following


def remember_rules(settings: Settings, gate: object) -> list[str]:
    """``--remember``: write the session's "always" rules to the project's permissions file."""
    policy = policy_of(gate)
    if policy is None or not policy.learned:
        return []
    path = project_permissions(settings.project_root or Path(settings.work_dir))
    return [str(rule) for rule in policy.learned if add_rule(path, rule)]
