"""A fallback chain over the real wire formats: each member gets back only its own signatures.

Every test runs two turns through a chain of two providers of different kinds, both pointed at
one fake server (which answers each in its own wire format), and reads what the second turn's
provider received on the wire.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable

import httpx
import pytest

from openheim.messages import Message, TextBlock, ThinkingBlock, block_from_dict, block_to_dict
from openheim.providers import create_provider
from openheim.providers.base import ModelRequest, Provider, ProviderSettings
from openheim.providers.fallback import FallbackProvider
from openheim.testing.fake_replies import FakeReply, RecordedRequest
from openheim.testing.fake_server import FakeLLMServer
from tests.providers.support import API_KEY, drain
from tests.providers.test_gemini_support import gemini_base

KINDS = ("openai", "anthropic", "gemini")
PAIRS = list(itertools.permutations(KINDS, 2))
SIGNATURE = "c2lnbmVkQnlUaGVGaXJzdE1vZGVs"
DOWN = FakeReply(status=503, error_body="overloaded")
SIGNED = FakeReply(text="Paris.", reasoning="The capital.", thinking_signature=SIGNATURE)

MakeChain = Callable[[str, str], FallbackProvider]


@pytest.fixture
async def make_chain(server: FakeLLMServer) -> AsyncIterator[MakeChain]:
    """Builds a chain ``[first, second]`` of real providers pointed at ``server``."""
    async with httpx.AsyncClient(timeout=10.0) as client:

        def member(kind: str) -> tuple[Provider, str]:
            base = gemini_base(server) if kind == "gemini" else server.base_url
            settings = ProviderSettings(
                name=kind, kind=kind, api_base=base, model=f"{kind}-model", api_key=API_KEY
            )
            return create_provider(settings, client), settings.model

        yield lambda first, second: FallbackProvider([member(first), member(second)])


async def two_turns(chain: FallbackProvider, first_model: str) -> None:
    """Turn one, then turn two carrying turn one's answer in the history."""
    question = Message.user("Capital of France?")
    _, answer = await drain(chain, ModelRequest(first_model, (question,)))
    assert answer.message.text == "Paris."
    history = (question, answer.message, Message.user("And of Italy?"))
    _, last = await drain(chain, ModelRequest(first_model, history))
    assert last.message.text == "Rome."


def last_request(server: FakeLLMServer, kind: str) -> RecordedRequest:
    """The last request the server received, checked to be in ``kind``'s wire format."""
    request = server.requests[-1]
    model = request.path if kind == "gemini" else request.body["model"]
    assert f"{kind}-model" in model
    return request


@pytest.mark.parametrize(("signer", "receiver"), PAIRS)
async def test_primary_signature_is_not_sent_to_the_backup(
    server: FakeLLMServer, make_chain: MakeChain, signer: str, receiver: str
) -> None:
    server.add(SIGNED, DOWN, "Rome.")  # the primary signs, then is down: the backup answers
    await two_turns(make_chain(signer, receiver), f"{signer}-model")
    wire = last_request(server, receiver)
    assert SIGNATURE.encode() not in wire.raw_body
    assert b"Paris." in wire.raw_body  # the conversation itself is kept
    assert server.unexpected_requests == []


@pytest.mark.parametrize(("signer", "receiver"), PAIRS)
async def test_backup_signature_is_not_sent_to_the_primary(
    server: FakeLLMServer, make_chain: MakeChain, signer: str, receiver: str
) -> None:
    server.add(DOWN, SIGNED, "Rome.")  # the primary is down, the backup signs; the primary is back
    await two_turns(make_chain(receiver, signer), f"{receiver}-model")
    wire = last_request(server, receiver)
    assert SIGNATURE.encode() not in wire.raw_body
    assert b"Paris." in wire.raw_body
    assert server.unexpected_requests == []


@pytest.mark.parametrize("kind", ["anthropic", "gemini"])
async def test_each_member_gets_its_own_signature_back(
    server: FakeLLMServer, make_chain: MakeChain, kind: str
) -> None:
    server.add(SIGNED, "Rome.")  # the primary signs and answers again
    await two_turns(make_chain(kind, "openai"), f"{kind}-model")
    assert SIGNATURE.encode() in last_request(server, kind).raw_body
    server.add(DOWN, SIGNED, DOWN, "Rome.")  # the primary is down for both turns
    await two_turns(make_chain("openai", kind), "openai-model")
    assert SIGNATURE.encode() in last_request(server, kind).raw_body


async def test_unmarked_signatures_count_as_the_primarys(
    server: FakeLLMServer, make_chain: MakeChain
) -> None:
    """History from before the chain (no ``signed_by``) goes to the primary only."""
    old = Message("assistant", (ThinkingBlock("The capital.", SIGNATURE), TextBlock("Paris.")))
    history = (Message.user("Capital of France?"), old, Message.user("And of Italy?"))
    chain = make_chain("anthropic", "gemini")
    server.add("Rome.", DOWN, "Rome.")
    for _ in range(2):
        await drain(chain, ModelRequest("anthropic-model", history))
    assert SIGNATURE.encode() in server.requests[0].raw_body  # the primary
    assert SIGNATURE.encode() not in server.requests[2].raw_body  # the backup


def test_the_signer_is_stored_with_the_block() -> None:
    """A resumed session still knows whose signatures it holds; unsigned rows look as before."""
    block = ThinkingBlock("The capital.", SIGNATURE, signed_by="anthropic/anthropic-model")
    assert block_from_dict(block_to_dict(block)) == block
    assert "signed_by" not in block_to_dict(ThinkingBlock("The capital.", SIGNATURE))
