"""The policy engine: an approval gate with a mode, permission rules and risk checks.

``PolicyGate.explain`` takes the first of these that applies:

1. a deny rule matches any part of the call → Deny (deny wins over allow);
2. risk finds something destructive *and* outside the work zone → Deny, with the reasons;
3. the mode is ``deny`` and the tool is not read-only → Deny;
4. the call changes a protected path (``protected``) that no allow rule names exactly, or risk
   finds anything else (destructive, outside, not analysable) → Ask with the reasons, in every
   mode, so ``auto`` and ``edits`` still ask (headless sessions, having no one to ask, deny);
5. the call changes protected paths and allow rules name each of them → Allow;
6. allow rules cover the call (for a shell line: every command of it) → Allow;
7. ``auto`` → Allow; ``edits`` ("auto for edits") and a file edit (``is_file_edit``) → Allow;
   a read-only tool → Allow; otherwise → Ask.

A file edit is known by what the tool registry says of the tool (its kind is ``edit``), not by
its name: ``write_file``, ``edit_file`` and ``apply_file_change`` (checked with the staged file
as its path) are; a tool of that kind that names no file (``remember``) is not. By step 7 risk
has found the path inside the work dir (through symlinks) and not protected.

An Ask carries the allow rules that would let that exact call run (``Ask.rules``: a path rule
naming the file, the command prefixes of a shell line, else the tool), so a surface that cannot
ask can say how to proceed.

"always" / "never" answers become session rules through ``learn``: a command prefix (``git
status``, ``npm test``, the program name for most others, the whole command for wrappers such as
``sudo``) for ``execute_command``, the tool name for other tools. ``learned`` lists them so a
surface can offer to save them (``--remember``). A tool rule learned this way never covers a
protected path.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from openheim.approval import Allow, ApprovalRequest, Ask, Deny, Verdict
from openheim.config.schema import ApprovalMode, mode_name
from openheim.errors import ConfigError
from openheim.safety.protected import protected_reason
from openheim.safety.rules import (
    SHELL_TOOL,
    Effect,
    Rule,
    RuleSet,
    Subject,
    literal_path_pattern,
    quote_words,
    subject_of,
)
from openheim.safety.shell_words import Command, ShellParseError, parse
from openheim.safety.wrappers import WRAPPERS
from openheim.tools.sandbox import PathSandbox

if TYPE_CHECKING:
    from openheim.safety.risk import Risk, RiskAssessor

SESSION = "this session"
_SUBCOMMAND_PROGRAMS = frozenset(
    {
        "git", "npm", "pnpm", "yarn", "bun", "deno", "cargo", "go", "docker", "podman",
        "kubectl", "helm", "pip", "pip3", "uv", "poetry", "gh", "apt", "apt-get", "brew",
        "systemctl", "conda", "dotnet", "terraform", "make", "just",
    }
)  # fmt: skip
_SUBCOMMAND = re.compile(r"[a-z][a-z0-9:_-]*")
CHANGE_KINDS = frozenset({"edit", "delete", "move"})
"""Tool kinds that change the file or folder their ``path`` argument names."""


@dataclass(frozen=True, slots=True)
class Decision:
    """A verdict, the rule that decided it (its text, if a rule did) and why, in words."""

    verdict: Verdict
    rule: str | None
    why: str


class PolicyGate:
    """The approval gate behind ``approval = "ask" | "edits" | "auto" | "deny"`` and the
    permission rules."""

    def __init__(
        self,
        mode: ApprovalMode,
        rules: RuleSet,
        sandbox: PathSandbox,
        *,
        risk: RiskAssessor | None = None,
    ) -> None:
        self.mode = mode
        self.rules = rules
        self.sandbox = sandbox
        self._risk = risk
        self.learned: list[Rule] = []
        """Rules added by "always" / "never" answers in this session, oldest first."""

    @property
    def risk(self) -> RiskAssessor:
        """The risk assessor, built on first use (a session that calls no tool needs none)."""
        if self._risk is None:
            from openheim.safety.risk import RiskAssessor

            self._risk = RiskAssessor(self.sandbox)
        return self._risk

    async def check(self, request: ApprovalRequest) -> Verdict:
        return self.explain(request).verdict

    def explain(self, request: ApprovalRequest) -> Decision:
        """The verdict for ``request``, which rule decides it and why."""
        subject = subject_of(request, self.sandbox)
        rule = self.rules.denying(subject)
        if rule is not None:
            why = f"the permission rule {rule.describe()} refuses it"
            return Decision(Deny(why + "; do not retry this call"), str(rule), why)
        risk = self.risk.assess(request)
        if risk.refused:
            why = "too dangerous: " + "; ".join(risk.reasons)
            return Decision(Deny(why + "; work inside the work dir instead"), None, why)
        if self.mode == "deny" and not request.read_only:
            why = "the approval mode is deny, which runs only read-only tools"
            return Decision(Deny(why), None, why)
        return self._guarded(request, subject, risk) or self._permitted(request, subject)

    def _guarded(self, request: ApprovalRequest, subject: Subject, risk: Risk) -> Decision | None:
        """Ask about risks and unnamed protected paths; allow protected paths rules name."""
        guarded = protected_paths(request, subject)
        unnamed = [path for path in guarded if self.rules.naming(path) is None]
        reasons = (*(guarded[path] for path in unnamed), *risk.reasons)
        if reasons:
            rules = () if risk.reasons else tuple(map(str, _naming_rules(unnamed)))
            why = "needs approval: " + "; ".join(reasons)
            return Decision(Ask(f"{request.tool} may be risky", reasons, rules), None, why)
        if not guarded:
            return None
        named = [rule for path in guarded if (rule := self.rules.naming(path)) is not None]
        why = "allowed by " + ", ".join(r.describe() for r in named) + ", naming the protected path"
        return Decision(Allow(), "; ".join(str(r) for r in named), why)

    def _permitted(self, request: ApprovalRequest, subject: Subject) -> Decision:
        allowed = self.rules.allowing(subject)
        if allowed:
            why = "allowed by " + ", ".join(r.describe() for r in allowed)
            return Decision(Allow(), "; ".join(str(r) for r in allowed), why)
        if self.mode == "auto":
            return Decision(Allow(), None, "the approval mode is auto and nothing risky was found")
        if self.mode == "edits" and is_file_edit(request, subject):
            why = "the approval mode is auto for edits and the edit is inside the work dir"
            return Decision(Allow(), None, why + " with nothing risky found")
        if request.read_only:
            why = f"read-only tools need no approval in {mode_name(self.mode)} mode"
            return Decision(Allow(), None, why)
        why = f"the approval mode is {mode_name(self.mode)} and {self._uncovered(subject)}"
        rules = self._suggested(request, subject)
        return Decision(Ask(why, rules=rules, auto_allows=True, mode=self.mode), None, why)

    def _suggested(self, request: ApprovalRequest, subject: Subject) -> tuple[str, ...]:
        """The allow rules that would let exactly this call run; () when none would."""
        rules = tuple(r for r in learnable_rules(request, "allow") if r not in self.rules.rules)
        if request.tool != SHELL_TOOL and len(subject.paths) == 1 and subject.paths[0]:
            rules = _naming_rules(subject.paths) or rules
        wider = RuleSet((*self.rules.rules, *rules))
        return tuple(map(str, rules)) if rules and wider.allowing(subject) else ()

    def _uncovered(self, subject: Subject) -> str:
        for command in subject.commands or ():
            if self.rules.covering(command) is None:
                return f"no allow rule covers `{command}`"
        return f"no allow rule covers {subject.tool}"

    def learn(self, request: ApprovalRequest, answer: Allow | Deny) -> None:
        """Turn an "always" (allow) or "never" (deny) answer into session rules."""
        effect: Effect = "allow" if isinstance(answer, Allow) else "deny"
        for rule in learnable_rules(request, effect):
            if rule not in self.rules.rules:
                self.rules = self.rules.with_rule(rule)
                self.learned.append(rule)


def is_file_edit(request: ApprovalRequest, subject: Subject) -> bool:
    """Whether the call edits a file it names inside the work dir: a tool of kind ``edit``
    with a ``path`` argument that is neither the work dir itself nor outside it."""
    named = isinstance(request.arguments.get("path"), str)
    return request.kind == "edit" and named and bool(subject.paths) and all(subject.paths)


def protected_paths(request: ApprovalRequest, subject: Subject) -> dict[str, str]:
    """The protected paths a call would change, each with why it is protected."""
    if request.read_only or request.kind not in CHANGE_KINDS:
        return {}
    found = ((path, protected_reason(path)) for path in subject.paths)
    return {path: reason for path, reason in found if reason is not None}


def _naming_rules(paths: Sequence[str]) -> tuple[Rule, ...]:
    """``allow path`` rules naming each of ``paths``; () when one cannot be written as a rule."""
    try:
        return tuple(Rule("allow", "path", literal_path_pattern(path)) for path in paths)
    except ConfigError:  # e.g. a name starting with ~
        return ()


def learnable_rules(request: ApprovalRequest, effect: Effect) -> tuple[Rule, ...]:
    """The rules an "always" / "never" answer to ``request`` stands for (none if unparseable)."""
    if request.tool != SHELL_TOOL:
        return (Rule(effect, "tool", request.tool, SESSION),)
    line = request.arguments.get("command")
    try:
        commands = parse(line) if isinstance(line, str) else ()
    except ShellParseError:
        return ()
    prefixes = (_prefix(c) for c in commands)
    rules = (Rule(effect, "command", quote_words(p), SESSION) for p in prefixes if p)
    return tuple(dict.fromkeys(rules))


def _prefix(command: Command) -> tuple[str, ...]:
    """The leading words a rule for ``command`` names; () when no rule could match it."""
    words = command.words
    if command.assignments or not words or not words[0].static:
        return ()
    texts = tuple(w.text for w in words)
    exact = texts if all(w.static for w in words) else ()
    if command.name in WRAPPERS:
        return exact
    if command.name in _SUBCOMMAND_PROGRAMS and len(words) > 1:
        return texts[:2] if words[1].static and _SUBCOMMAND.fullmatch(texts[1]) else exact
    return texts[:1]
