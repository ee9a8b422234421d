"""Embeddings for semantic memory search: an HTTP embedder and the vector arithmetic.

Two wire formats: the OpenAI-compatible ``POST {api_base}/embeddings`` (OpenAI, OpenRouter,
Ollama, llama.cpp's server, vLLM, ...) with the key as a Bearer token, and Gemini's
``POST {api_base}/models/{model}:embedContent`` with the key in ``x-goog-api-key``. httpx is
imported on first use so start-up stays cheap. Vectors are scaled to unit length and packed as
float32 before storing, so cosine similarity is a plain dot product in pure Python.
"""

from __future__ import annotations

import math
import operator
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from openheim.errors import ProviderHTTPError, ProviderProtocolError, ProviderUnavailable
from openheim.formats import safejson

if TYPE_CHECKING:
    import httpx

Wire = Literal["openai", "gemini"]
DEFAULT_TIMEOUT_SECS = 30.0
_ERROR_SNIPPET = 200


class Embedder(Protocol):
    """Turns a text into a vector; ``model`` tags stored vectors so models are never mixed."""

    model: str

    async def embed(self, text: str) -> list[float]:
        """The text's vector; raises ProviderError when the endpoint fails."""
        ...


@dataclass
class HTTPEmbedder:
    """An embeddings endpoint; ``client`` is used when given, else one is opened per call."""

    api_base: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    wire: Wire = "openai"
    provider: str = "embeddings"
    timeout: float = DEFAULT_TIMEOUT_SECS
    client: httpx.AsyncClient | None = field(default=None, repr=False)

    async def embed(self, text: str) -> list[float]:
        import httpx

        url, headers, body = self._request(text)
        try:
            if self.client is not None:
                response = await self.client.post(url, json=body, headers=headers)
            else:
                async with httpx.AsyncClient(timeout=self.timeout) as client:
                    response = await client.post(url, json=body, headers=headers)
        except httpx.HTTPError as err:
            raise ProviderUnavailable(
                f"embedding request to {url} failed: {type(err).__name__}: {err}",
                hint="check that the embedding provider is running and reachable",
                provider=self.provider,
            ) from None
        if response.status_code >= 400:
            raise ProviderHTTPError(
                f"embedding request to {url} answered HTTP {response.status_code}: "
                f"{response.text[:_ERROR_SNIPPET]}",
                status=response.status_code,
                hint="check [memory].embedding_model and the provider's key",
                provider=self.provider,
            )
        return _parse_vector(response, self.wire, url)

    def _request(self, text: str) -> tuple[str, dict[str, str], dict[str, Any]]:
        base = self.api_base.rstrip("/")
        if self.wire == "gemini":
            model = self.model.removeprefix("models/")
            headers = {"x-goog-api-key": self.api_key} if self.api_key else {}
            body: dict[str, Any] = {"content": {"parts": [{"text": text}]}}
            return f"{base}/models/{model}:embedContent", headers, body
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        return f"{base}/embeddings", headers, {"model": self.model, "input": text}


def _parse_vector(response: httpx.Response, wire: Wire, url: str) -> list[float]:
    """The vector in an embeddings response, checked to be a non-empty list of numbers."""
    try:
        data = safejson.loads(response.content)
        raw = data["embedding"]["values"] if wire == "gemini" else data["data"][0]["embedding"]
        vector = [float(x) for x in raw if not isinstance(x, bool)]
        if not vector or len(vector) != len(raw):
            raise ValueError("not a list of numbers")
    except (ValueError, KeyError, IndexError, TypeError) as err:
        raise ProviderProtocolError(
            f"embedding response from {url} has no usable vector ({type(err).__name__}: {err})",
            hint="check that the endpoint serves embeddings for this model",
        ) from None
    return vector


def pack(vector: Sequence[float]) -> bytes:
    """``vector`` scaled to unit length, as float32 bytes; an all-zero vector is refused."""
    norm = math.sqrt(math.fsum(x * x for x in vector))
    if norm == 0 or not math.isfinite(norm):
        raise ProviderProtocolError(
            "the embedding vector has no direction (all zeros or not finite)",
            hint="check the embedding model",
        )
    return array("f", (x / norm for x in vector)).tobytes()


def unpack(data: bytes) -> array[float]:
    """Packed float32 bytes back to a vector."""
    vector = array("f")
    vector.frombytes(data)
    return vector


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of two unit vectors of the same length (their dot product)."""
    return math.fsum(map(operator.mul, a, b))
