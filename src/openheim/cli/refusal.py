"""Refusals of ``openheim run`` and the chat REPL with no terminal: what was refused and how
to let it run.

With no controlling terminal no one can answer a question, so every call the policy asks about
is refused at once. The refusal tells the model (and, through the tool line, the user) why and
names the ways out: run in a terminal to be asked, ``--approve auto`` where only the mode asked,
and the exact ``openheim permissions add`` rule for the call. At exit ``summary`` repeats them
once on stderr and warns that the answer may describe work that was refused.
"""

from __future__ import annotations

import shlex

from openheim.approval import ApprovalRequest, Ask, Deny, unanswered
from openheim.runtime import approvals

TERMINAL = "run openheim in a terminal to be asked"
AUTO = "pass --approve auto"


def add_command(rule: str) -> str:
    """The command line that adds ``rule`` to the user's permissions file."""
    return f"openheim permissions add {shlex.quote(rule)}"


class HeadlessRefusals:
    """The resolver of a run with no terminal: refuses, says how to proceed, keeps count."""

    def __init__(self) -> None:
        self.refused = 0
        self.auto_allows = False
        """Whether ``--approve auto`` would have run any of the refused calls."""
        self.rules: dict[str, None] = {}
        """The rules that would let the refused calls run, in order, without repeats."""

    async def __call__(self, request: ApprovalRequest, ask: Ask) -> Deny:
        self.refused += 1
        self.auto_allows = self.auto_allows or ask.auto_allows
        self.rules.update(dict.fromkeys(ask.rules))
        return Deny(f"{unanswered(request, ask)}.\nTo let it run: {ways_out(ask)}.")


def ways_out(ask: Ask) -> str:
    """How to let a call like the one ``ask`` is about run, in words."""
    ways = [TERMINAL]
    if ask.auto_allows:
        ways.append(AUTO)
    if ask.rules:
        ways.append("allow it with " + " and ".join(f"`{add_command(r)}`" for r in ask.rules))
    return ", ".join(ways[:-1]) + f" or {ways[-1]}" if len(ways) > 1 else ways[0]


def summary(denied: int, refusals: HeadlessRefusals | None) -> list[str]:
    """The lines to print at exit when calls were denied; the last one says what it means."""
    if not denied:
        return []
    lines: list[str] = []
    if refusals is not None and refusals.refused:
        calls = _count(refusals.refused)
        ways = [TERMINAL] + ([AUTO] if refusals.auto_allows else [])
        rules = ", or add " + ("these rules:" if len(refusals.rules) > 1 else "this rule:")
        lines.append(
            f"openheim: {calls} needed approval and no one could be asked (no terminal). "
            f"To let such calls run: {' or '.join(ways)}" + (rules if refusals.rules else "")
        )
        lines += [f"  {add_command(rule)}" for rule in refusals.rules]
    lines.append(f"openheim: {approvals.closing_warning(denied)}")
    return lines


def _count(calls: int) -> str:
    return "1 tool call" if calls == 1 else f"{calls} tool calls"
