"""Shared helpers for the policy gate tests: a work dir, a gate, and requests to check."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from openheim.approval import ApprovalRequest
from openheim.config.schema import ApprovalMode
from openheim.safety.policy import PolicyGate
from openheim.safety.risk import RiskAssessor
from openheim.safety.rules import RuleSet, parse_rule
from openheim.tools.sandbox import PathSandbox


def work_dirs(tmp_path: Path) -> Path:
    """The work dir, with src/ and secrets/ in it, and scratch/ and home/ beside it."""
    for name in ("work/src", "work/secrets", "scratch", "home"):
        (tmp_path / name).mkdir(parents=True)
    return (tmp_path / "work").resolve()


def gate(work: Path, mode: ApprovalMode, *rules: str) -> PolicyGate:
    box = PathSandbox(work)
    risk = RiskAssessor(box, temp_dirs=[work.parent / "scratch"], home=work.parent / "home")
    return PolicyGate(mode, RuleSet(tuple(parse_rule(r) for r in rules)), box, risk=risk)


def shell(work: Path, command: str) -> ApprovalRequest:
    args: dict[str, Any] = {"command": command}
    return ApprovalRequest("c1", "execute_command", args, False, "execute", str(work))


def call(
    work: Path, tool: str, *, read_only: bool = False, kind: str = "other", **args: Any
) -> ApprovalRequest:
    return ApprovalRequest("c1", tool, args, read_only, kind, str(work))


def write(work: Path, path: str) -> ApprovalRequest:
    return call(work, "write_file", kind="edit", path=path, content="x")


def read(work: Path, path: str) -> ApprovalRequest:
    return call(work, "read_file", read_only=True, kind="read", path=path)


def verdict(g: PolicyGate, request: ApprovalRequest) -> type:
    return type(g.explain(request).verdict)
