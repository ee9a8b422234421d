"""Context windows: configured, else a known model's, else the kind's, else the default."""

from __future__ import annotations

import dataclasses

import pytest

from openheim.providers.base import ProviderSettings
from openheim.providers.windows import DEFAULT_CONTEXT_WINDOW, context_window

BASE = ProviderSettings(name="p", kind="openai_compatible", api_base="", model="house-model")


def window(**changes: object) -> int:
    return context_window(dataclasses.replace(BASE, **changes))  # type: ignore[arg-type]


def test_a_configured_window_wins_over_everything() -> None:
    assert window(model="gpt-4.1", kind="openai", context_window=50_000, n_ctx=4096) == 50_000


def test_a_local_models_n_ctx_is_its_configured_window() -> None:
    assert window(kind="llama_cpp", model="SmolLM2-135M-Instruct", n_ctx=4096) == 4096


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("claude-sonnet-4-5", 200_000),
        ("gemini-2.5-flash", 1_048_576),
        ("gemini-1.5-pro-002", 2_097_152),  # the longest entry wins over "gemini-"
        ("gpt-4.1-mini", 1_047_576),
        ("GPT-4o-2024-08-06", 128_000),  # case does not matter
        ("gpt-3.5-turbo", 16_385),
        ("openai/gpt-4.1-mini", 1_047_576),  # a vendor/ prefix is ignored
    ],
)
def test_a_known_model_has_its_own_window_whatever_the_provider(model: str, expected: int) -> None:
    assert window(model=model) == expected


@pytest.mark.parametrize(
    ("kind", "expected"), [("anthropic", 200_000), ("gemini", 1_048_576), ("openai", 128_000)]
)
def test_an_unknown_model_gets_the_usual_window_of_its_kind(kind: str, expected: int) -> None:
    assert window(kind=kind, model="house-model") == expected


def test_an_unknown_model_of_an_unknown_kind_gets_the_documented_default() -> None:
    assert window(model="llama3.2") == DEFAULT_CONTEXT_WINDOW == 128_000


def test_the_requested_model_replaces_the_configured_one() -> None:
    settings = dataclasses.replace(BASE, model="gpt-4.1")
    assert context_window(settings, "gpt-3.5-turbo") == 16_385
    assert context_window(settings) == 1_047_576
