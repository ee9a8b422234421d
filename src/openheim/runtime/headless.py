"""The headless refusal: how every surface with no person present answers the calls the
approval policy asks about, and the warning it ends such a run with.

The headless surfaces are ``openheim run`` and the plain chat REPL with no controlling
terminal, the chat gateway, and ``openheim mcp serve`` for a client that cannot be asked
(no elicitation). No one can answer there, so every call the policy asks about is refused at
once, never waited on. The model is told why and the ways out that fit the call: run openheim
in a terminal to be asked, switch the approval mode to auto when only the mode asked, or add
the exact permission rule (``openheim permissions add '...'``). After a run in which calls were
denied, the surface prints or sends ``HeadlessRefusals.closing``: the ways out once, each rule
on its own line, then ``approvals.closing_warning``, since the answer may describe work that
was refused ("I wrote out.txt").

The words are the same on every surface; only how to switch the approval mode to auto is a
surface's own (a flag, or a key of ``[gateway]``).
"""

from __future__ import annotations

import shlex

from openheim.approval import ApprovalRequest, Ask, Deny, unanswered
from openheim.runtime.approvals import closing_warning

TERMINAL = "run openheim in a terminal to be asked"
AUTO_FLAG = "pass --approve auto"
"""How ``run``, ``chat`` and ``mcp serve`` switch the approval mode to auto."""
AUTO_GATEWAY = 'set approval = "auto" in [gateway]'
"""How the chat gateway switches it (its sessions take their mode from ``[gateway]``)."""


def add_command(rule: str) -> str:
    """The command line that adds ``rule`` to the user's permissions file."""
    return f"openheim permissions add {shlex.quote(rule)}"


class HeadlessRefusals:
    """The resolver of a run no one can be asked in: it refuses, tells the model how to let
    the call run, and keeps what the closing lines name until ``closing`` reads them.

    ``auto`` is how this surface switches the approval mode to auto. Give each run (or each
    prompt of a kept session) its own instance, or read ``closing`` after each, so a run's
    closing lines name only its own refusals."""

    def __init__(self, auto: str = AUTO_FLAG) -> None:
        self.auto = auto
        self.refused = 0
        self.auto_allows = False
        """Whether the auto mode would have run any of the refused calls."""
        self.rules: dict[str, None] = {}
        """The rules that would let the refused calls run, in order, without repeats."""

    async def __call__(self, request: ApprovalRequest, ask: Ask) -> Deny:
        self.refused += 1
        self.auto_allows = self.auto_allows or ask.auto_allows
        self.rules.update(dict.fromkeys(ask.rules))
        return Deny(f"{unanswered(request, ask)}.\nTo let it run: {self.ways_out(ask)}.")

    def ways_out(self, ask: Ask) -> str:
        """How to let a call like the one ``ask`` is about run, in words."""
        ways = [TERMINAL]
        if ask.auto_allows:
            ways.append(self.auto)
        if ask.rules:
            ways.append("allow it with " + " and ".join(f"`{add_command(r)}`" for r in ask.rules))
        return ", ".join(ways[:-1]) + f" or {ways[-1]}" if len(ways) > 1 else ways[0]

    def closing(self, denied: int, prefix: str = "") -> list[str]:
        """The lines that end a run with ``denied`` calls denied (none when it had none): the
        ways out of this run's refusals, each rule on its own indented line, and last the
        closing warning; ``prefix`` starts each line but the rules. The refusals counted so far
        are forgotten, so the next run's lines name only its own."""
        refused, auto_allows, rules = self.refused, self.auto_allows, list(self.rules)
        self.refused, self.auto_allows, self.rules = 0, False, {}
        if not denied:
            return []
        lines: list[str] = []
        if refused:
            calls = "1 tool call" if refused == 1 else f"{refused} tool calls"
            ways = [TERMINAL] + ([self.auto] if auto_allows else [])
            add = ", or add " + ("these rules:" if len(rules) > 1 else "this rule:")
            lines.append(
                f"{prefix}{calls} needed approval and no one could be asked. "
                f"To let such calls run: {' or '.join(ways)}" + (add if rules else "")
            )
            lines += [f"  {add_command(rule)}" for rule in rules]
        lines.append(f"{prefix}{closing_warning(denied)}")
        return lines
