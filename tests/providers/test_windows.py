"""Context windows: configured, else a known model's, else the kind's, else the default."""

from __future__ import annotations

import dataclasses
import struct
from pathlib import Path

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


def gguf(path: Path, context: int) -> Path:
    """A GGUF header that says its architecture and trained context (no tensors)."""

    def text(value: str) -> bytes:
        return struct.pack("<Q", len(value)) + value.encode()

    entries = [
        text("general.architecture") + struct.pack("<I", 8) + text("llama"),
        text("llama.context_length") + struct.pack("<II", 4, context),
    ]
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, len(entries)) + b"".join(entries))
    return path


@pytest.mark.parametrize("kind", ["llama_cpp", "llama_server"])
def test_a_local_model_without_n_ctx_has_the_context_its_file_says(
    tmp_path: Path, kind: str
) -> None:
    model = gguf(tmp_path / "small.gguf", 8192)
    assert window(kind=kind, model="small", model_path=str(model)) == 8192


def test_a_local_model_found_by_name_in_the_models_folder(tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    gguf(tmp_path / "models" / "tiny-Q8_0.gguf", 4096)
    assert window(kind="llama_cpp", model="tiny", data_dir=tmp_path) == 4096


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("missing.gguf", None),  # no such file
        ("broken.gguf", b"GGUF\x03"),  # a header cut short
        ("other.gguf", b"not a model"),  # no GGUF file at all
    ],
)
def test_an_unreadable_local_model_falls_back_to_the_default(
    tmp_path: Path, name: str, content: bytes | None
) -> None:
    if content is not None:
        (tmp_path / name).write_bytes(content)
    path = str(tmp_path / name)
    assert window(kind="llama_cpp", model_path=path, data_dir=tmp_path) == DEFAULT_CONTEXT_WINDOW
