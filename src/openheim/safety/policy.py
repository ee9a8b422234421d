"""The policy engine: an approval gate with a mode, permission rules and risk checks.

``PolicyGate.explain`` takes the first of these that applies:

1. a deny rule matches any part of the call → Deny (deny wins over allow);
2. risk finds something destructive *and* outside the work zone → Deny, with the reasons;
3. the mode is ``deny`` and the tool is not read-only → Deny;
4. risk finds anything else (destructive, outside, not analysable) → Ask with the reasons, in
   every mode, so ``auto`` still asks (headless sessions, having no one to ask, deny);
5. allow rules cover the call (for a shell line: every command of it) → Allow;
6. ``auto`` → Allow; a read-only tool → Allow; otherwise → Ask.

"always" / "never" answers become session rules through ``learn``: a command prefix (``git
status``, ``npm test``, the program name for most others, the whole command for wrappers such as
``sudo``) for ``execute_command``, the tool name for other tools. ``learned`` lists them so a
surface can offer to save them (``--remember``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, TypeAlias

from openheim.approval import Allow, ApprovalRequest, Ask, Deny, Verdict
from openheim.safety.risk import RiskAssessor
from openheim.safety.rules import (
    SHELL_TOOL,
    Effect,
    Rule,
    RuleSet,
    Subject,
    quote_words,
    subject_of,
)
from openheim.safety.shell_words import Command, ShellParseError, parse
from openheim.safety.wrappers import WRAPPERS
from openheim.tools.sandbox import PathSandbox

ApprovalMode: TypeAlias = Literal["ask", "auto", "deny"]
SESSION = "this session"
_SUBCOMMAND_PROGRAMS = frozenset(
    {
        "git", "npm", "pnpm", "yarn", "bun", "deno", "cargo", "go", "docker", "podman",
        "kubectl", "helm", "pip", "pip3", "uv", "poetry", "gh", "apt", "apt-get", "brew",
        "systemctl", "conda", "dotnet", "terraform", "make", "just",
    }
)  # fmt: skip
_SUBCOMMAND = re.compile(r"[a-z][a-z0-9:_-]*")


@dataclass(frozen=True, slots=True)
class Decision:
    """A verdict, the rule that decided it (its text, if a rule did) and why, in words."""

    verdict: Verdict
    rule: str | None
    why: str


class PolicyGate:
    """The approval gate behind ``approval = "ask" | "auto" | "deny"`` and the permission rules."""

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
        self.risk = risk if risk is not None else RiskAssessor(sandbox)
        self.learned: list[Rule] = []
        """Rules added by "always" / "never" answers in this session, oldest first."""

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
        if risk.reasons:
            why = "needs approval: " + "; ".join(risk.reasons)
            return Decision(Ask(f"{request.tool} may be risky", risk.reasons), None, why)
        return self._permitted(request, subject)

    def _permitted(self, request: ApprovalRequest, subject: Subject) -> Decision:
        allowed = self.rules.allowing(subject)
        if allowed:
            why = "allowed by " + ", ".join(r.describe() for r in allowed)
            return Decision(Allow(), "; ".join(str(r) for r in allowed), why)
        if self.mode == "auto":
            return Decision(Allow(), None, "the approval mode is auto and nothing risky was found")
        if request.read_only:
            return Decision(Allow(), None, "read-only tools need no approval in ask mode")
        why = f"the approval mode is ask and {self._uncovered(subject)}"
        return Decision(Ask(why), None, why)

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
