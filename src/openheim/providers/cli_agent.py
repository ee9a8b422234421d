"""Coding-agent CLIs as providers (kinds ``claude_cli``, ``codex_cli``, ``opencode_cli``).

Each model call runs the CLI once, non-interactively, in ``MODEL`` containment: no tool of its
own, a read-only sandbox, an empty private folder as its working directory. The request's
history (the system prompt included) is flattened into one prompt on the CLI's stdin; the
CLI's JSON stream gives the text as it comes and the usage at the end. The CLI cannot call
openheim's tools natively, so these kinds speak the envelope tool protocol by default.

A CLI that is not installed, fails, or times out raises a ``ProviderError`` that is not retried
and falls through to the next provider of a ``fallback`` chain.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

from openheim.cliagents.argv import MODEL
from openheim.cliagents.parse import CliOutcome, CliText
from openheim.cliagents.run import CliRequest, run_cli
from openheim.cliagents.spec import SPECS, CliName, CliSpec, find_binary
from openheim.errors import ConfigError, ProviderError
from openheim.events import TextDelta
from openheim.messages import (
    ContentBlock,
    ImageBlock,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from openheim.providers.base import ModelRequest, ModelResponse, ProviderSettings, StreamItem

if TYPE_CHECKING:
    import httpx

KINDS: dict[str, CliName] = {
    "claude_cli": "claude",
    "codex_cli": "codex",
    "opencode_cli": "opencode",
}
CLOSING = "Reply as the assistant to the conversation above. Write only your reply."


class CliAgentProvider:
    """Runs ``spec``'s CLI for each model call."""

    def __init__(self, settings: ProviderSettings, spec: CliSpec) -> None:
        self.name = settings.name
        self.settings = settings
        self.spec = spec
        self._folder: Path | None = None

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        cli = CliRequest(
            self.spec,
            self._binary(),
            flatten(request),
            self._workdir(),
            MODEL,
            model=request.model,
            timeout=self.settings.timeout_secs,
            env_allow=self.settings.cli_env_allow,
        )
        pieces: list[str] = []
        outcome = CliOutcome()
        async with contextlib.aclosing(run_cli(cli)) as items:  # a closed stream stops the CLI
            async for item in items:
                if isinstance(item, CliText):
                    pieces.append(item.text)
                    yield TextDelta(item.text)
                elif isinstance(item, CliOutcome):
                    outcome = item
        text = outcome.text or "".join(pieces)
        yield ModelResponse(Message.assistant(text), "end_turn", outcome.usage, request.model)

    async def aclose(self) -> None:
        """Remove the private working folder."""
        folder, self._folder = self._folder, None
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)

    def _binary(self) -> str:
        try:
            found = find_binary(self.spec, configured=self.settings.cli_path)
        except ConfigError as err:
            raise ProviderError(err.message, hint=err.hint, provider=self.name) from None
        if found is None:
            raise ProviderError(
                f"provider {self.name!r}: the {self.spec.program} CLI is not installed",
                hint=f"install it, or set {self.spec.bin_env} or cli_path to its program",
                provider=self.name,
            )
        return found

    def _workdir(self) -> Path:
        """An empty private (0700) folder, the CLI's working directory for every call."""
        if self._folder is None:
            self._folder = Path(tempfile.mkdtemp(prefix=f"openheim-{self.spec.name}-"))
        return self._folder


def flatten(request: ModelRequest) -> str:
    """The request as one prompt: the system prompt, then each message under its role."""
    sections = [f"<system>\n{request.system}\n</system>"] if request.system else []
    for message in request.messages:
        body = "\n".join(filter(None, (_block_text(block) for block in message.content)))
        sections.append(f"<{message.role}>\n{body}\n</{message.role}>")
    if len(sections) == 1 and request.messages and request.messages[0].role == "user":
        return request.messages[0].text
    return "\n\n".join([*sections, CLOSING])


def _block_text(block: ContentBlock) -> str:
    """A block as prompt text; thinking is left out (it is the model's own, not the talk)."""
    if isinstance(block, TextBlock):
        return block.text
    if isinstance(block, ToolUseBlock):
        return f"[called tool {block.name} with {json.dumps(block.arguments)}]"
    if isinstance(block, ToolResultBlock):
        return f"[tool result]\n{block.content}"
    if isinstance(block, ImageBlock):
        return "[an image was attached here; this model cannot see it]"
    return ""


def create(
    settings: ProviderSettings, http_client: httpx.AsyncClient | None = None
) -> CliAgentProvider:
    """The provider of a ``*_cli`` kind (``http_client`` is unused: the CLI does its own HTTP)."""
    return CliAgentProvider(settings, SPECS[KINDS[settings.kind]])
