"""Usage of a local llama.cpp server that streams none, counted by that server.

``llama_cpp.server`` ignores ``stream_options.include_usage``: a streamed answer ends without a
``usage`` object. When that happens the managed server is asked for its own counts, so usage and
cost stay exact rather than guessed:

* prompt tokens: the same request again, not streamed and limited to one new token; its
  ``usage.prompt_tokens`` is the server's count of the prompt as its chat template rendered it.
  The server's prompt cache holds that prompt already, so only about one token is evaluated.
* completion tokens: the answer (thinking, text and tool calls as the model wrote them) through
  the server's tokenizer: ``/extras/tokenize`` (``llama_cpp.server``, less the tokens it adds to
  any text, such as a BOS) or ``/tokenize`` without special tokens (``llama-server``).

A count the server cannot give stays 0 and is logged at debug level: usage is a report, never a
reason to fail a call that succeeded.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import httpx

from openheim.messages import Message, TextBlock, ThinkingBlock, ToolUseBlock, Usage
from openheim.providers.base import ModelRequest, ModelResponse, StreamItem
from openheim.providers.openai_chat import OpenAIChatProvider
from openheim.providers.openai_wire import build_body

log = logging.getLogger(__name__)

_FAILURES = (httpx.HTTPError, ValueError, KeyError, TypeError)


async def with_counted_usage(
    client: httpx.AsyncClient,
    root: str,
    chat: OpenAIChatProvider,
    request: ModelRequest,
    item: StreamItem,
) -> StreamItem:
    """``item``, or when it is a response that came without usage, that response with the
    usage counted by the server at ``root`` (which ``chat`` sent ``request`` to)."""
    if not isinstance(item, ModelResponse) or item.usage != Usage():
        return item
    body = build_body(request, chat.settings, chat.dialect)
    return replace(item, usage=await counted_usage(client, root, body, item.message))


async def counted_usage(
    client: httpx.AsyncClient, root: str, body: Mapping[str, Any], answer: Message
) -> Usage:
    """The usage of the streamed call that sent ``body`` to the server at ``root`` and got
    ``answer``, counted by that server."""
    return Usage(
        input_tokens=await _prompt_tokens(client, root, body),
        output_tokens=await _completion_tokens(client, root, generated_text(answer)),
    )


def generated_text(answer: Message) -> str:
    """What the model generated for ``answer``: its thinking, text and tool calls."""
    parts: list[str] = []
    for block in answer.content:
        if isinstance(block, ThinkingBlock):
            parts.append(block.thinking)
        elif isinstance(block, TextBlock):
            parts.append(block.text)
        elif isinstance(block, ToolUseBlock):
            parts.append(block.name + block.arguments_json)
    return "".join(parts)


async def _prompt_tokens(client: httpx.AsyncClient, root: str, body: Mapping[str, Any]) -> int:
    twin = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
    twin.update(stream=False, max_tokens=1)
    try:
        response = await client.post(f"{root}/v1/chat/completions", json=twin)
        response.raise_for_status()
        return _count(response.json()["usage"]["prompt_tokens"])
    except _FAILURES as err:
        log.debug("the server at %s did not count the prompt: %s", root, err)
        return 0


async def _completion_tokens(client: httpx.AsyncClient, root: str, text: str) -> int:
    if not text:
        return 0
    try:
        return await _tokenized_length(client, root, text)
    except _FAILURES as err:
        log.debug("the server at %s did not count the answer: %s", root, err)
        return 0


async def _tokenized_length(client: httpx.AsyncClient, root: str, text: str) -> int:
    """Tokens in ``text``: ``llama_cpp.server``'s endpoint, else ``llama-server``'s."""
    extras = await client.post(f"{root}/extras/tokenize", json={"input": text})
    if extras.status_code != 404:
        extras.raise_for_status()
        bare = await client.post(f"{root}/extras/tokenize", json={"input": ""})
        bare.raise_for_status()  # what it adds to every text (a BOS token, say)
        return len(extras.json()["tokens"]) - len(bare.json()["tokens"])
    plain = await client.post(f"{root}/tokenize", json={"content": text, "add_special": False})
    plain.raise_for_status()
    return len(plain.json()["tokens"])


def _count(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise ValueError(f"not a token count: {value!r}")
