"""What keeps one run of the agent loop from running on uselessly: the same tool call repeated,
rounds of calls that all fail, and usage a provider reports that cannot be true.

* The same call (name and arguments) ``LOOP_GUARD_REPEATS`` times in a row ends the run.
* ``PIVOT_AFTER_FAILED_ROUNDS`` rounds in a row whose calls all failed add guidance for the model
  to the next tool results.
* A reached budget of the session (``Meter.exceeded``) ends the run with ``BUDGET_STOP``'s reason.
* A call's usage outside ``0..MAX_CALL_TOKENS`` is clamped (``usage.plausible``) with a warning
  naming the provider and the counts, so the store and the meter never see it.
"""

from __future__ import annotations

from collections.abc import Iterable

from openheim.events import Notice
from openheim.messages import StopReason, ToolResultBlock, ToolUseBlock, Usage
from openheim.usage import MAX_CALL_TOKENS, plausible

LOOP_GUARD_REPEATS = 3
PIVOT_AFTER_FAILED_ROUNDS = 3
PIVOT_GUIDANCE = (
    "The last {n} rounds of tool calls all failed. Stop repeating the same approach: re-read the "
    "error messages, check your assumptions (paths, names, arguments), and try a different "
    "strategy, or explain to the user what is blocking you."
)
BUDGET_STOP: dict[str, StopReason] = {
    "token_budget": "max_tokens",
    "cost_budget": "max_turn_requests",
}
"""The stop reason a run ends with when the session's budget (of ``Meter.exceeded``) is spent."""
REPEATED_CALL_RESULT = (
    "not run: this exact call was repeated 3 times in a row, so the run was stopped"
)


class RoundGuard:
    """The tool-call guards of one run: counts repeated calls and failed rounds."""

    def __init__(self) -> None:
        self.last_call: str | None = None
        self.repeats = 0
        self.failed_rounds = 0

    def repeated(self, calls: Iterable[ToolUseBlock]) -> bool:
        """Whether one of ``calls`` makes the same call ``LOOP_GUARD_REPEATS`` times in a row."""
        for call in calls:
            key = call.call_key
            self.repeats = self.repeats + 1 if key == self.last_call else 1
            self.last_call = key
            if self.repeats >= LOOP_GUARD_REPEATS:
                return True
        return False

    def pivot(self, results: Iterable[ToolResultBlock]) -> str | None:
        """The guidance to add after this round of ``results``, when enough rounds in a row
        have all failed; None otherwise."""
        failed = all(r.is_error for r in results)
        self.failed_rounds = self.failed_rounds + 1 if failed else 0
        if self.failed_rounds < PIVOT_AFTER_FAILED_ROUNDS:
            return None
        guidance = PIVOT_GUIDANCE.format(n=self.failed_rounds)
        self.failed_rounds = 0
        return guidance


def checked_usage(provider: str, usage: Usage) -> tuple[Usage, Notice | None]:
    """``usage`` clamped to what is plausible, with the warning to show when it was not."""
    kept, clamped = plausible(usage)
    if not clamped:
        return kept, None
    reported, counted = usage.to_dict(), kept.to_dict()
    odd = ", ".join(name for name in reported if reported[name] != counted[name])
    return kept, Notice(
        f"provider {provider!r} reported an implausible token count ({odd}): counted as 0 to "
        f"{MAX_CALL_TOKENS} instead",
        "warning",
        "provider",
    )
