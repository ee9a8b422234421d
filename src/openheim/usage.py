"""Usage and cost: a price table, and a meter that keeps session totals and budget caps.

Prices are US dollars per million tokens, by model. A model matches its exact name first, then
the longest table entry it starts with (so a dated snapshot such as ``claude-sonnet-4-5-20250929``
uses the ``claude-sonnet-4-5`` price). The defaults cover common models; ``[prices."MODEL"]`` in
config.toml adds or overrides entries. A model with no price has no cost (``None``), never a
made-up one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace

from openheim.messages import Usage

MAX_CALL_TOKENS = 10**9
"""The most tokens of one kind one model call is believed to use (context windows hold some
millions); a provider's count beyond it, or below zero, is clamped (``plausible``)."""


@dataclass(frozen=True, slots=True)
class Price:
    """US dollars per million tokens."""

    input: float
    output: float
    cache_read: float | None = None
    """Defaults to the input price when unknown."""
    cache_write: float | None = None
    """Defaults to the input price when unknown."""

    def cost(self, usage: Usage) -> float:
        read = self.input if self.cache_read is None else self.cache_read
        write = self.input if self.cache_write is None else self.cache_write
        total = (
            usage.input_tokens * self.input
            + usage.output_tokens * self.output
            + usage.cache_read_tokens * read
            + usage.cache_write_tokens * write
        )
        return total / 1_000_000


DEFAULT_PRICES: dict[str, Price] = {
    "gpt-4.1": Price(2.0, 8.0, 0.5),
    "gpt-4.1-mini": Price(0.4, 1.6, 0.1),
    "gpt-4.1-nano": Price(0.1, 0.4, 0.025),
    "gpt-4o": Price(2.5, 10.0, 1.25),
    "gpt-4o-mini": Price(0.15, 0.6, 0.075),
    "gpt-5": Price(1.25, 10.0, 0.125),
    "gpt-5-mini": Price(0.25, 2.0, 0.025),
    "o4-mini": Price(1.1, 4.4, 0.275),
    "claude-opus-4-1": Price(15.0, 75.0, 1.5, 18.75),
    "claude-sonnet-4-5": Price(3.0, 15.0, 0.3, 3.75),
    "claude-haiku-4-5": Price(1.0, 5.0, 0.1, 1.25),
    "gemini-2.5-pro": Price(1.25, 10.0, 0.31),
    "gemini-2.5-flash": Price(0.3, 2.5, 0.075),
    "gemini-2.5-flash-lite": Price(0.1, 0.4, 0.025),
}


def plausible(usage: Usage) -> tuple[Usage, bool]:
    """``usage`` with each count clamped to ``0..MAX_CALL_TOKENS``, and whether one was: a
    provider's 10^30 would otherwise overflow the store's 64-bit columns and any budget."""
    clamped = {f.name: min(max(getattr(usage, f.name), 0), MAX_CALL_TOKENS) for f in fields(usage)}
    kept = replace(usage, **clamped)
    return kept, kept != usage


def price_for(model: str, table: Mapping[str, Price]) -> Price | None:
    if model in table:
        return table[model]
    matches = [name for name in table if model.startswith(name)]
    return table[max(matches, key=len)] if matches else None


@dataclass
class Meter:
    """Session totals of usage and cost, and the caps that stop a run when reached."""

    prices: Mapping[str, Price] = field(default_factory=lambda: dict(DEFAULT_PRICES))
    max_cost: float | None = None
    max_tokens: int | None = None
    usage: Usage = field(default_factory=Usage)
    cost: float | None = None
    """The session's cost so far; None while no call had a known price."""

    def record(self, model: str, usage: Usage) -> float | None:
        """Add one call; returns its cost (None when the model has no price)."""
        self.usage += usage
        price = price_for(model, self.prices)
        if price is None:
            return None
        call_cost = price.cost(usage)
        self.cost = (self.cost or 0.0) + call_cost
        return call_cost

    def exceeded(self) -> tuple[str, str] | None:
        """``(reason, message)`` once a cap is reached, else None."""
        if self.max_tokens is not None and self.usage.total_tokens >= self.max_tokens:
            return (
                "token_budget",
                f"the session used {self.usage.total_tokens} tokens, reaching "
                f"max_tokens_per_session = {self.max_tokens}",
            )
        if self.max_cost is not None and self.cost is not None and self.cost >= self.max_cost:
            return (
                "cost_budget",
                f"the session cost ${self.cost:.4f}, reaching max_cost = ${self.max_cost:.2f}",
            )
        return None
