"""``openheim permissions``: list, add and remove approval rules; check which rule decides."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from openheim.approval import Allow, ApprovalRequest, Deny
from openheim.config.load import Settings, load_settings
from openheim.config.schema import mode_name
from openheim.errors import ConfigError
from openheim.formats import safejson
from openheim.runtime import policy
from openheim.safety.permissions import (
    add_rule,
    project_permissions,
    read_rules,
    remove_rule,
    user_permissions,
)
from openheim.safety.rules import parse_rule
from openheim.term import exit_codes
from openheim.tools.builtin import builtin_tools
from openheim.tools.sandbox import PathSandbox


def permissions_command(args: argparse.Namespace) -> int:
    settings = load_settings()
    action = args.permissions_command or "list"
    if action == "list":
        _list(settings)
    elif action == "check":
        _check(settings, args.tool, args.arguments)
    else:
        path = _file(settings, project=args.project)
        rule = parse_rule(args.rule)
        changed = add_rule(path, rule) if action == "add" else remove_rule(path, rule)
        verb = "added" if action == "add" else "removed"
        state = verb if changed else f"not {verb} (unchanged)"
        sys.stdout.write(f"{rule}: {state} in {path}\n")
    return exit_codes.OK


def _file(settings: Settings, *, project: bool) -> Path:
    if project:
        return project_permissions(settings.project_root or Path(settings.work_dir))
    return user_permissions(settings.data_dir)


def _list(settings: Settings) -> None:
    out = sys.stdout
    out.write(f"approval mode: {mode_name(settings.approval)}\n")
    for label, path in (
        ("user", _file(settings, project=False)),
        ("project", _file(settings, project=True)),
    ):
        rules = read_rules(path)
        out.write(f"{label} rules ({path}):{'' if rules else ' none'}\n")
        out.writelines(f"  {rule}\n" for rule in rules)
    notices = list(settings.notices)
    gate = policy.policy_gate(settings, PathSandbox(settings.work_dir), notices)
    out.writelines(f"note: {notice.message}\n" for notice in notices)
    out.write(f"in force: {len(gate.rules.rules)} rule(s)\n")


def _check(settings: Settings, tool: str, raw: str) -> None:
    try:
        arguments = safejson.loads(raw)
    except ValueError as err:
        raise ConfigError(
            f"ARGS-JSON is not JSON: {err}", hint='quote it: \'{"path": "x"}\''
        ) from None
    if not isinstance(arguments, dict):
        raise ConfigError("ARGS-JSON must be a JSON object", hint='e.g. \'{"command": "ls"}\'')
    known = builtin_tools(allow_shell=True).get(tool)
    read_only = known.capabilities.read_only if known else False
    kind = known.capabilities.kind.value if known else "other"
    request = ApprovalRequest("check", tool, arguments, read_only, kind, str(settings.work_dir))
    decision = policy.policy_gate(settings, PathSandbox(settings.work_dir), []).explain(request)
    verdict = decision.verdict
    word = "allow" if isinstance(verdict, Allow) else "deny" if isinstance(verdict, Deny) else "ask"
    sys.stdout.write(f"{word}: {decision.why}\n")
    if decision.rule:
        sys.stdout.write(f"rule: {decision.rule}\n")
