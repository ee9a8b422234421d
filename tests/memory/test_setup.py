"""Memory from settings: the database path and the embedder a config file asks for."""

from __future__ import annotations

from pathlib import Path

import pytest

from openheim.config.load import Settings, load_settings
from openheim.errors import ConfigError
from openheim.memory import embedder_for, memory_db_path, open_memory
from tests.memory.conftest import EmbedServer


def settings_with(tmp_path: Path, config: str, **env: str) -> Settings:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(config, encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return load_settings(cwd=work, env={"OPENHEIM_HOME": str(home), **env})


def test_default_db_path_is_in_the_data_dir(tmp_path: Path) -> None:
    settings = settings_with(tmp_path, "")
    assert memory_db_path(settings) == settings.data_dir / "memory.db"


def test_relative_db_path_is_under_the_data_dir_and_absolute_is_kept(tmp_path: Path) -> None:
    settings = settings_with(tmp_path, '[memory]\ndb_path = "mem/notes.db"\n')
    assert memory_db_path(settings) == settings.data_dir / "mem" / "notes.db"
    absolute = tmp_path / "elsewhere.db"
    settings = settings_with(tmp_path, f'[memory]\ndb_path = "{absolute}"\n')
    assert memory_db_path(settings) == absolute


def test_no_embedding_settings_means_keyword_search(tmp_path: Path) -> None:
    assert embedder_for(settings_with(tmp_path, "")) is None


@pytest.mark.parametrize(
    ("memory", "given"),
    [
        ('embedding_provider = "openai"', "embedding_provider but not embedding_model"),
        ('embedding_model = "m"', "embedding_model but not embedding_provider"),
    ],
)
def test_half_an_embedding_config_is_an_error(tmp_path: Path, memory: str, given: str) -> None:
    settings = settings_with(tmp_path, f"[memory]\n{memory}\n")
    with pytest.raises(ConfigError, match=f"sets {given}"):
        embedder_for(settings)


def test_a_provider_without_embeddings_is_an_error(tmp_path: Path) -> None:
    config = '[memory]\nembedding_provider = "anthropic"\nembedding_model = "m"\n'
    env = {"ANTHROPIC_API_KEY": "sk-ant-test-key"}
    settings = settings_with(tmp_path, config, **env)
    with pytest.raises(ConfigError, match="anthropic provider, which has no embeddings endpoint"):
        embedder_for(settings, env)


def test_gemini_providers_use_the_gemini_wire(tmp_path: Path) -> None:
    config = '[memory]\nembedding_provider = "gemini"\nembedding_model = "text-embedding-004"\n'
    env = {"GEMINI_API_KEY": "gemini-test-key"}
    embedder = embedder_for(settings_with(tmp_path, config, **env), env)
    assert embedder is not None
    assert (embedder.wire, embedder.api_key) == ("gemini", "gemini-test-key")


async def test_open_memory_embeds_through_the_configured_provider(
    tmp_path: Path, embed_server: EmbedServer
) -> None:
    config = (
        f'[providers.emb]\napi_base = "{embed_server.url}/v1"\ndefault_model = "chat"\n'
        'api_key = "inline-key-1234"\n'
        '[memory]\nembedding_provider = "emb"\nembedding_model = "nomic-embed"\n'
        'db_path = "memory/test.db"\n'
    )
    settings = settings_with(tmp_path, config)
    with open_memory(settings, {}) as store:
        saved = await store.remember("a fact")
    assert saved.note is None
    assert store.path == settings.data_dir / "memory" / "test.db"
    assert store.path.is_file()
    path, headers, body = embed_server.requests[0]
    assert path == "/v1/embeddings"
    assert headers["Authorization"] == "Bearer inline-key-1234"
    assert body["model"] == "nomic-embed"


async def test_a_store_url_keeps_memory_in_postgresql_not_data_dir(
    tmp_path: Path, pg_url: str
) -> None:
    settings = load_settings(
        cwd=tmp_path, env={"OPENHEIM_HOME": str(tmp_path), "OPENHEIM_STORE_URL": pg_url}
    )
    with open_memory(settings) as first, open_memory(settings) as second:
        saved = await first.remember("the deploy runs on Fridays", ["ops"])
        found = (await second.search("deploy", 5)).hits
    assert [h.memory.id for h in found] == [saved.memory.id]  # another process sees it
    assert not memory_db_path(settings).exists()
