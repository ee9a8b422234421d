"""Exit codes of ``openheim`` (documented in docs/cli.md)."""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: `openheim --version` imports this module
if TYPE_CHECKING:
    from openheim.messages import StopReason

OK = 0
"""The run ended normally (``end_turn``)."""
ERROR = 1
"""A runtime failure: the provider failed, the network is down, a stream broke."""
USAGE = 2
"""Bad arguments or configuration: nothing was sent to a model."""
MAX_TOKENS = 3
"""The model hit its output token limit (``max_tokens``)."""
MAX_TURN_REQUESTS = 4
"""The run hit ``max_iterations`` or the loop guard (``max_turn_requests``)."""
REFUSAL = 5
"""The model refused, or a ``user_prompt`` hook blocked the prompt (``refusal``)."""
DENIED = 6
"""The run ended, but at least one tool call was denied by the approval gate."""
NO_VALID_OUTPUT = 7
"""``run --output-schema``: the run ended, but without a JSON value valid against the schema
after every attempt."""
REPETITION = 8
"""The model started repeating itself and the repetition guard stopped its reply
(``max_tokens``, reason ``repetition``)."""
CANCELLED = 130
"""Interrupted (Ctrl-C, SIGINT; or "cancel" at a terminal approval question), as shells report
SIGINT."""
TERMINATED = 143
"""Stopped by SIGTERM (128 + 15, as shells report it); the run was cancelled cleanly first."""

_BY_STOP: dict[StopReason, int] = {
    "end_turn": OK,
    "max_tokens": MAX_TOKENS,
    "max_turn_requests": MAX_TURN_REQUESTS,
    "refusal": REFUSAL,
    "cancelled": CANCELLED,
}


def for_stop(stop: StopReason, denied: int, reason: str | None = None) -> int:
    """The exit code of a run that ended with ``stop`` (refined by ``reason``)."""
    if reason == "repetition":
        return REPETITION
    code = _BY_STOP[stop]
    return DENIED if code == OK and denied else code


def for_signal(signum: int) -> int:
    """The exit code of a run stopped by ``signum``, as shells report it: 128 + its number
    (``CANCELLED`` for SIGINT, ``TERMINATED`` for SIGTERM)."""
    return 128 + int(signum)
