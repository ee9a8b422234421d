"""The embedded model's prefix cache on disk, for real: SmolLM2-135M, temperature 0."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from openheim.events import TextDelta
from openheim.messages import Message
from openheim.providers.base import ModelRequest, ProviderSettings
from openheim.providers.llama_cpp import GenerationStats, LlamaCppProvider
from openheim.providers.llama_prefix import MAGIC, SUFFIX

SYSTEM = (
    "You are a careful assistant working in a project folder. Answer in one short sentence. "
    "Never invent file names or contents; say plainly when you do not know something. "
    "Prefer plain words over jargon, and keep every answer under twenty words."
)


def settings(data_dir: Path, **extra: object) -> ProviderSettings:
    base: dict[str, object] = {"temperature": 0.0, "seed": 7, "n_ctx": 2048, "data_dir": data_dir}
    return ProviderSettings("local", "llama_cpp", "", "SmolLM2-135M-Instruct", **{**base, **extra})  # type: ignore[arg-type]


async def ask(
    data_dir: Path, question: str = "What is a folder?", system: str = SYSTEM, **extra: object
) -> tuple[str, GenerationStats]:
    provider = LlamaCppProvider(settings(data_dir, **extra))
    request = ModelRequest("m", (Message.user(question),), system=system, max_tokens=12)
    try:
        text = "".join([i.text async for i in provider.stream(request) if isinstance(i, TextDelta)])
        return text, provider.stats
    finally:
        await provider.aclose()


def cache_files(data_dir: Path) -> list[Path]:
    return sorted((data_dir / "cache" / "llama").glob(f"*{SUFFIX}"))


async def test_a_second_provider_loads_the_prefix_instead_of_evaluating_it(
    tmp_path: Path,
) -> None:
    first_text, first = await ask(tmp_path)
    assert first.prefix_cache == "stored" and first.prefix_tokens > 32
    assert first.evaluated_prompt_tokens == first.prompt_tokens
    assert len(cache_files(tmp_path)) == 1
    second_text, second = await ask(tmp_path)
    assert second.prefix_cache == "disk"
    assert second.evaluated_prompt_tokens == second.prompt_tokens - second.prefix_tokens
    assert second_text == first_text  # the loaded state is the evaluated one
    _, other_question = await ask(tmp_path, "Name a colour.")
    assert other_question.prefix_cache == "disk"


async def test_the_same_provider_keeps_the_prefix_in_its_context(tmp_path: Path) -> None:
    provider = LlamaCppProvider(settings(tmp_path))
    outcomes = []
    for question in ("What is a file?", "What is a folder?"):
        request = ModelRequest("m", (Message.user(question),), system=SYSTEM, max_tokens=4)
        _ = [item async for item in provider.stream(request)]
        outcomes.append(provider.stats.prefix_cache)
    await provider.aclose()
    assert outcomes == ["stored", "memory"]


async def test_a_change_in_the_key_is_another_entry(tmp_path: Path) -> None:
    await ask(tmp_path)
    _, other_context = await ask(tmp_path, n_ctx=1024)
    _, other_prompt = await ask(tmp_path, system=SYSTEM + " Be kind.")
    assert (other_context.prefix_cache, other_prompt.prefix_cache) == ("stored", "stored")
    assert len(cache_files(tmp_path)) == 3
    _, again = await ask(tmp_path, n_ctx=1024)
    assert again.prefix_cache == "disk"


def truncate(data: bytes) -> bytes:
    return data[: len(data) // 2]


def flip_a_state_byte(data: bytes) -> bytes:
    middle = len(data) // 2
    return data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1 :]


def other_magic(data: bytes) -> bytes:
    return b"x" * len(MAGIC) + data[len(MAGIC) :]


def huge_header(data: bytes) -> bytes:
    return MAGIC + b"\xff\xff\xff\xff" + data[len(MAGIC) + 4 :]


def empty(data: bytes) -> bytes:
    return b""


@pytest.mark.parametrize("spoil", [truncate, flip_a_state_byte, other_magic, huge_header, empty])
async def test_a_corrupt_file_is_ignored_and_rebuilt(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, spoil: object
) -> None:
    first_text, _ = await ask(tmp_path)
    (path,) = cache_files(tmp_path)
    path.write_bytes(spoil(path.read_bytes()))  # type: ignore[operator]
    with caplog.at_level(logging.WARNING, logger="openheim.providers.llama_prefix"):
        text, stats = await ask(tmp_path)
    assert stats.prefix_cache == "stored" and text == first_text
    assert "corrupt prefix cache file" in caplog.text
    _, again = await ask(tmp_path)
    assert again.prefix_cache == "disk"


async def test_the_folder_stays_within_its_bound(tmp_path: Path) -> None:
    await ask(tmp_path)
    (only,) = cache_files(tmp_path)
    one_entry = only.stat().st_size
    limit_mb = (2 * one_entry + one_entry // 2) // (1024 * 1024) + 1
    for n in range(4):
        await ask(tmp_path, system=f"{SYSTEM} Rule {n}.", prefix_cache_mb=limit_mb)
    files = cache_files(tmp_path)
    assert sum(f.stat().st_size for f in files) <= limit_mb * 1024 * 1024
    assert len(files) < 5
    newest = max(files, key=lambda f: f.stat().st_mtime_ns)
    _, last = await ask(tmp_path, system=f"{SYSTEM} Rule 3.", prefix_cache_mb=limit_mb)
    assert last.prefix_cache == "disk" and newest in cache_files(tmp_path)


async def test_no_cache_when_it_is_switched_off(tmp_path: Path) -> None:
    _, stats = await ask(tmp_path, prefix_cache_mb=0)
    assert stats.prefix_cache == "off" and cache_files(tmp_path) == []
