"""A session's approval policy: the mode and the rules of the permissions files, the staged
changes' gate around it, and ``--remember`` writing learned rules back."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, cast

from openheim.approval import ApprovalGate
from openheim.config.load import Settings
from openheim.events import Notice
from openheim.safety.permissions import add_rule, load_rules, project_permissions
from openheim.safety.policy import ApprovalMode, PolicyGate
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


def remember_rules(settings: Settings, gate: object) -> list[str]:
    """``--remember``: write the session's "always" rules to the project's permissions file."""
    while not isinstance(gate, PolicyGate) and hasattr(gate, "inner"):
        gate = gate.inner  # the staged changes' gate, the pre_tool hook's gate
    if not isinstance(gate, PolicyGate) or not gate.learned:
        return []
    path = project_permissions(settings.project_root or Path(settings.work_dir))
    return [str(rule) for rule in gate.learned if add_rule(path, rule)]
