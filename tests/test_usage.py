"""Prices, the meter's session totals and its budget caps."""

from __future__ import annotations

import pytest

from openheim.messages import Usage
from openheim.usage import DEFAULT_PRICES, Meter, Price, price_for


def test_cost_prices_each_kind_of_token_once() -> None:
    price = Price(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
    usage = Usage(
        input_tokens=1000, output_tokens=200, cache_read_tokens=5000, cache_write_tokens=100
    )
    expected = (1000 * 3.0 + 200 * 15.0 + 5000 * 0.3 + 100 * 3.75) / 1e6
    assert price.cost(usage) == pytest.approx(expected)


def test_cache_prices_default_to_input() -> None:
    assert Price(2.0, 8.0).cost(Usage(0, 0, 1_000_000, 1_000_000)) == pytest.approx(4.0)


def test_dated_snapshots_use_the_longest_prefix() -> None:
    table = {"gpt-4.1": Price(2.0, 8.0), "gpt-4.1-mini": Price(0.4, 1.6)}
    assert price_for("gpt-4.1-mini-2025-04-14", table) == table["gpt-4.1-mini"]
    assert price_for("gpt-4.1-2025-04-14", table) == table["gpt-4.1"]
    assert price_for("llama3", table) is None
    assert price_for("claude-sonnet-4-5-20250929", DEFAULT_PRICES) is not None


def test_meter_totals_and_caps() -> None:
    meter = Meter({"m": Price(1.0, 1.0)}, max_cost=0.002)
    assert meter.record("m", Usage(1000, 0)) == pytest.approx(0.001)
    assert meter.exceeded() is None
    assert meter.record("unpriced", Usage(5, 5)) is None
    meter.record("m", Usage(0, 1000))
    assert meter.usage == Usage(1005, 1005)
    reason, message = meter.exceeded() or ("", "")
    assert reason == "cost_budget" and "max_cost" in message


def test_token_cap() -> None:
    meter = Meter(max_tokens=100)
    meter.record("x", Usage(60, 40))
    assert (meter.exceeded() or ("",))[0] == "token_budget"
