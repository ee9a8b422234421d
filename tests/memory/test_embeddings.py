"""Semantic memory search against a loopback embeddings server, and the keyword fallback."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from openheim.errors import ProviderError, ProviderHTTPError, ProviderProtocolError
from openheim.memory import HTTPEmbedder, MemoryStore
from openheim.memory.embeddings import cosine, pack, unpack
from tests.memory.conftest import EmbedServer


@pytest.fixture(params=["sqlite", "postgres"])
def semantic(
    request: pytest.FixtureRequest, tmp_path: Path, embed_server: EmbedServer
) -> Iterator[MemoryStore]:
    """A memory with embeddings, on each backend (vectors as SQLite blobs, PostgreSQL bytea)."""
    url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    embed_server.vectors.update(
        {
            "cats purr when they are content": [1.0, 0.0, 0.0, 0.0],
            "dogs bark at the postman": [0.0, 1.0, 0.0, 0.0],
            "fish swim in the pond": [0.0, 0.0, 1.0, 0.0],
            "kitten": [0.9, 0.3, 0.1, 0.0],
            "puppy": [0.2, 0.95, 0.0, 0.0],
        }
    )
    embedder = HTTPEmbedder(f"{embed_server.url}/v1", "emb-model", api_key="test-key-123")
    with MemoryStore(tmp_path / "memory.db", embedder=embedder, url=url) as store:
        yield store


async def remember_animals(store: MemoryStore) -> list[int]:
    texts = ["fish swim in the pond", "dogs bark at the postman", "cats purr when they are content"]
    return [(await store.remember(t)).memory.id for t in texts]


async def test_search_ranks_by_cosine_similarity(semantic: MemoryStore) -> None:
    fish, dogs, cats = await remember_animals(semantic)
    result = await semantic.search("kitten", 3)
    assert result.semantic is True and result.note is None
    assert [h.memory.id for h in result.hits] == [cats, dogs, fish]
    assert all(h.method == "semantic" for h in result.hits)
    expected = 0.9 / math.sqrt(0.9**2 + 0.3**2 + 0.1**2)
    assert result.hits[0].score == pytest.approx(expected, rel=1e-5)
    puppy = await semantic.search("puppy", 1)
    assert [h.memory.id for h in puppy.hits] == [dogs]


async def test_the_keyword_index_alone_would_not_find_it(semantic: MemoryStore) -> None:
    await remember_animals(semantic)
    with MemoryStore(semantic.path, url=semantic.url) as keyword_only:
        assert (await keyword_only.search("kitten", 3)).hits == []


async def test_requests_use_the_openai_wire_format(
    semantic: MemoryStore, embed_server: EmbedServer
) -> None:
    await semantic.remember("cats purr when they are content")
    path, headers, body = embed_server.requests[0]
    assert path == "/v1/embeddings"
    assert headers["Authorization"] == "Bearer test-key-123"
    assert body == {"model": "emb-model", "input": "cats purr when they are content"}


async def test_edit_re_embeds_the_new_text(semantic: MemoryStore) -> None:
    fish, _, cats = await remember_animals(semantic)
    await semantic.edit(fish, "cats purr when they are content")
    await semantic.edit(cats, "fish swim in the pond")
    assert (await semantic.search("kitten", 1)).hits[0].memory.id == fish


async def test_a_failing_server_falls_back_to_keywords_and_says_so(
    semantic: MemoryStore, embed_server: EmbedServer
) -> None:
    embed_server.status = 500
    saved = await semantic.remember("cats purr when they are content")
    assert saved.note is not None
    assert "embedding failed" in saved.note and "HTTP 500" in saved.note
    assert "only keyword search finds it" in saved.note
    result = await semantic.search("cats", 3)
    assert result.semantic is False
    assert result.note is not None and "keyword search results" in result.note
    assert [h.memory.id for h in result.hits] == [saved.memory.id]


async def test_memories_without_a_vector_still_show_up_by_keyword(
    semantic: MemoryStore, embed_server: EmbedServer
) -> None:
    embed_server.status = 500
    offline = await semantic.remember("the kitten sleeps on the sofa")
    embed_server.status = 200
    _, dogs, cats = await remember_animals(semantic)
    result = await semantic.search("kitten", 2)
    assert result.semantic is True
    assert [(h.memory.id, h.method) for h in result.hits] == [
        (cats, "semantic"),
        (dogs, "semantic"),
        (offline.memory.id, "keyword"),
    ]


async def test_an_unreachable_server_falls_back_too(tmp_path: Path) -> None:
    embedder = HTTPEmbedder("http://127.0.0.1:9/v1", "m")  # the discard port: refused
    with MemoryStore(tmp_path / "m.db", embedder=embedder) as store:
        saved = await store.remember("offline fact")
        assert saved.note is not None and "ConnectError" in saved.note
        result = await store.search("offline", 5)
    assert [h.memory.text for h in result.hits] == ["offline fact"]
    assert result.note is not None


async def test_gemini_wire_format(embed_server: EmbedServer) -> None:
    embed_server.vectors["hello"] = [3.0, 4.0]
    embedder = HTTPEmbedder(
        f"{embed_server.url}/v1beta", "models/text-embedding-004", api_key="g-key", wire="gemini"
    )
    assert await embedder.embed("hello") == [3.0, 4.0]
    path, headers, body = embed_server.requests[0]
    assert path == "/v1beta/models/text-embedding-004:embedContent"
    assert headers["x-goog-api-key"] == "g-key"
    assert "Authorization" not in headers
    assert body == {"content": {"parts": [{"text": "hello"}]}}


@pytest.mark.parametrize(
    "reply",
    [{"data": []}, {"data": [{"embedding": "nope"}]}, {"data": [{"embedding": [1, True]}]}, {}],
)
async def test_a_malformed_reply_is_a_protocol_error(
    embed_server: EmbedServer, reply: dict[str, object]
) -> None:
    embed_server.reply = reply
    with pytest.raises(ProviderProtocolError, match="no usable vector"):
        await HTTPEmbedder(f"{embed_server.url}/v1", "m").embed("x")


async def test_an_http_error_carries_its_status(embed_server: EmbedServer) -> None:
    embed_server.status = 401
    with pytest.raises(ProviderHTTPError) as caught:
        await HTTPEmbedder(f"{embed_server.url}/v1", "m", provider="emb").embed("x")
    assert caught.value.status == 401 and caught.value.provider == "emb"
    assert "embedding backend is down" in caught.value.message


def test_vectors_are_packed_at_unit_length() -> None:
    packed = unpack(pack([3.0, 4.0]))
    assert list(packed) == pytest.approx([0.6, 0.8])
    assert cosine(packed, packed) == pytest.approx(1.0, rel=1e-6)
    assert cosine(unpack(pack([1.0, 0.0])), unpack(pack([0.0, 2.0]))) == 0.0


@pytest.mark.parametrize("vector", [[0.0, 0.0], [math.inf, 1.0], [math.nan]])
def test_a_vector_without_direction_is_refused(vector: list[float]) -> None:
    with pytest.raises(ProviderError, match="no direction"):
        pack(vector)
