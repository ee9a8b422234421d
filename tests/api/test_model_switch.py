"""One rule for switching a session's model, on every surface that can (the chat's
``:models``, ACP's model option, ``/ws`` ``set_model``): only a model the provider offers;
anything else is refused with the list before it reaches the provider."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp import RequestError

from openheim.acp import options
from openheim.chat.session import Chat
from openheim.config.load import Overrides, load_settings
from openheim.errors import ConfigError
from openheim.runtime import SessionOptions
from openheim.runtime.models import session_models
from openheim.testing import FakeLLMServer
from tests.tui.support import configure

REFUSED = ["fake-unlisted", "--help", "fake-model ", "x" * 5000]


@pytest.mark.parametrize("model", REFUSED)
async def test_a_model_the_provider_does_not_offer_is_refused(
    home: Path, work: Path, model: str
) -> None:
    with FakeLLMServer() as llm:
        configure(home, llm)
        settings = load_settings(Overrides(), cwd=work, env={"OPENHEIM_HOME": str(home)})
        chat = Chat(settings, SessionOptions())
        session = await chat.open()
        try:
            assert session_models(settings, session) == ["fake-model", "fake-large"]
            with pytest.raises(ConfigError, match="fake-model, fake-large") as refused:
                await chat.switch_model("fake", model)
            with pytest.raises(RequestError):
                options.set_model(settings, session, model)
            assert session.model == "fake-model" and len(refused.value.message) < 300
            await chat.switch_model("fake", "fake-large")
            assert session.model == "fake-large"
        finally:
            await chat.close()
