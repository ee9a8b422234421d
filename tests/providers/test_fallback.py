"""The fallback chain: which failures fall through, and what the caller sees."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from openheim.errors import (
    ContextOverflow,
    ProviderError,
    ProviderHTTPError,
    ProviderProtocolError,
    ProviderUnavailable,
    StreamCut,
)
from openheim.events import Notice, TextDelta
from openheim.messages import Message
from openheim.providers.base import ModelRequest, ModelResponse, StreamItem
from openheim.providers.fallback import FallbackProvider
from openheim.testing import ScriptedProvider

REQUEST = ModelRequest("primary-model", (Message.user("hi"),))


async def drain(provider: FallbackProvider) -> list[StreamItem]:
    return [item async for item in provider.stream(REQUEST)]


@pytest.mark.parametrize(
    "error",
    [
        ProviderUnavailable("connection refused"),
        ProviderHTTPError("overloaded", status=529),
        ProviderHTTPError("bad key", status=401),
        ProviderHTTPError("no such model", status=404),
        StreamCut("cut"),
    ],
)
async def test_availability_errors_fall_through(error: ProviderError) -> None:
    primary = ScriptedProvider([error], name="primary")
    backup = ScriptedProvider(["from backup"], name="backup")
    items = await drain(FallbackProvider([(primary, "primary-model"), (backup, "backup-model")]))
    notices = [i for i in items if isinstance(i, Notice)]
    assert len(notices) == 1 and "'backup'" in notices[0].message
    assert isinstance(items[-1], ModelResponse) and items[-1].message.text == "from backup"
    assert backup.requests[0].model == "backup-model"
    assert backup.requests[0].messages == REQUEST.messages


@pytest.mark.parametrize(
    "error",
    [
        ProviderHTTPError("bad request", status=400),
        ContextOverflow("too long", status=400),
        ProviderProtocolError("not JSON"),
    ],
)
async def test_request_errors_do_not_fall_through(error: ProviderError) -> None:
    backup = ScriptedProvider([], name="backup")
    chain = FallbackProvider([(ScriptedProvider([error]), "m"), (backup, "b")])
    with pytest.raises(type(error)):
        await drain(chain)
    assert backup.requests == []


async def test_no_fallback_after_content_was_forwarded() -> None:
    async def half(request: ModelRequest) -> AsyncIterator[StreamItem]:
        yield TextDelta("half")
        raise StreamCut("cut")

    backup = ScriptedProvider([], name="backup")
    with pytest.raises(StreamCut):
        await drain(FallbackProvider([(ScriptedProvider([half]), "m"), (backup, "b")]))
    assert backup.requests == []


async def test_last_provider_error_is_raised() -> None:
    chain = FallbackProvider(
        [
            (ScriptedProvider([ProviderUnavailable("a down")]), "a"),
            (ScriptedProvider([ProviderUnavailable("b down")]), "b"),
        ]
    )
    with pytest.raises(ProviderUnavailable, match="b down"):
        await drain(chain)
