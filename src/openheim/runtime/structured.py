"""Structured output: a prompt whose answer must be a JSON value valid against a JSON schema.

The model is offered a ``submit`` tool whose parameters are the schema (an object schema as it
is, any other as ``{"value": SCHEMA}``) and is told to call it with its result. Each call is
checked with ``jsonschema``: a valid value is kept; an invalid one costs an attempt, and the
model reads every error with its instance path, to fix and call again. A turn that ends without
a valid value (a final text that is itself a valid JSON document counts as one) is answered
with the errors as a new user message, while attempts are left. A prompt has ``retries + 1``
attempts in all (``retries`` defaults to 3).

The attempts run as the turns of one ``PromptRun``: its reader gets every turn's events and one
``Finished`` at the end (with the usage of all turns), and ``Attempts`` holds the value.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from functools import cached_property
from typing import Any

from openheim.errors import ConfigError, OpenheimError
from openheim.events import Event, Finished
from openheim.formats import safejson
from openheim.formats.schema_check import (
    BadSchema,
    TooCostly,
    check_schema,
    error_lines,
    schema_errors,
)
from openheim.messages import Message, TextBlock, Usage
from openheim.tools.base import Capabilities, Tool, ToolContext, ToolOutput

SUBMIT = "submit"
DEFAULT_RETRIES = 3
_FENCE = re.compile(r"\A```(?:json)?\s*\n(.*)\n```\Z", re.DOTALL)

Errors = list[dict[str, str]]


class NoValidOutput(OpenheimError):
    """A prompt with an output schema ended without a valid value; ``errors`` are the last
    attempt's, each with its instance path."""

    def __init__(self, message: str, errors: Errors, stop_reason: str) -> None:
        super().__init__(message, hint="loosen the schema, or allow more attempts")
        self.errors = errors
        self.stop_reason = stop_reason


def output_schema(schema: Any, retries: int = DEFAULT_RETRIES) -> Attempts:
    """The attempts of one prompt for ``schema``; a bad schema or a negative retry count is a
    ``ConfigError``."""
    try:
        check_schema(schema)
    except BadSchema as err:
        raise ConfigError(
            f"the output schema is not usable: {err}", hint="fix the schema"
        ) from None
    if not isinstance(schema, Mapping):
        raise ConfigError("the output schema must be a JSON object", hint="fix the schema")
    if retries < 0:
        raise ConfigError(f"output retries must be 0 or more, got {retries}", hint="use 0 or more")
    return Attempts(dict(schema), retries)


class Attempts:
    """One structured prompt: its schema, the attempts that failed, and the accepted value."""

    def __init__(self, schema: dict[str, Any], retries: int) -> None:
        self.schema = schema
        self.retries = retries
        self.failed = 0
        self.accepted = False
        self.value: Any = None
        self.errors: Errors = []

    @property
    def wrapped(self) -> bool:
        """Whether ``submit`` takes the value as ``{"value": ...}`` (a schema not of objects)."""
        return self.schema.get("type") != "object"

    @property
    def left(self) -> int:
        return self.retries + 1 - self.failed

    def offer(self, data: Any) -> Errors:
        """Check ``data``: keep it when valid, else count a failed attempt; the errors. A value
        too large or deep to check is one error; a schema found unusable only now (a ``$ref``
        that resolves nowhere) is a ``ConfigError``."""
        try:
            errors = schema_errors(self.schema, data)
        except TooCostly as err:
            errors = [{"path": "", "message": str(err)}]
        except BadSchema as err:
            raise ConfigError(
                f"the output schema is not usable: {err}", hint="fix the schema"
            ) from None
        if errors:
            self.fail(errors)
        else:
            self.accepted, self.value = True, data
        return errors

    def fail(self, errors: Errors) -> None:
        self.failed += 1
        self.errors = errors

    def instruction(self) -> str:
        """What the prompt adds so the model knows how to hand in its answer."""
        how = "as its `value` argument" if self.wrapped else "as its arguments"
        return (
            f"\n\nWhen you are done, call the `{SUBMIT}` tool with your final result {how}; it "
            "must be valid against the tool's JSON schema. Its result says whether it was "
            "accepted; if not, fix every error it lists and call it again."
        )

    def feedback(self, finished: Finished, failed_before: int) -> str | None:
        """After a turn: the message for another attempt, or None when the prompt is over.
        A turn whose ``submit`` calls already failed (``failed`` grew past ``failed_before``)
        costs no further attempt; one that handed in nothing does."""
        if self.accepted or finished.stop_reason != "end_turn" or self.left <= 0:
            return None
        parsed = _json_text(finished.text)
        if parsed is not None:
            errors = self.offer(parsed[0])
            if not errors:
                return None
            what = f"Your answer is not valid against the schema:\n{error_lines(errors)}"
        elif self.failed > failed_before:
            what = f"Your last `{SUBMIT}` call was not accepted:\n{error_lines(self.errors)}"
        else:
            self.fail([{"path": "", "message": f"no valid call of `{SUBMIT}`, and no JSON answer"}])
            what = f"You did not hand in a valid result with the `{SUBMIT}` tool."
        if self.left <= 0:
            return None
        return f"{what}\nCall `{SUBMIT}` with the corrected result ({self.left} attempts left)."

    def outcome(self, stop_reason: str) -> Any:
        """The accepted value; ``NoValidOutput`` when there is none."""
        if self.accepted:
            return self.value
        tried = f"after {self.failed} attempt{'s' if self.failed != 1 else ''}"
        why = "" if stop_reason == "end_turn" else f" (the run ended with {stop_reason})"
        detail = error_lines(self.errors) if self.errors else "nothing was submitted"
        lines = detail.replace("\n", "; ")
        raise NoValidOutput(f"no valid output {tried}{why}: {lines}", self.errors, stop_reason)


class SubmitTool(Tool):
    """``submit``: the model hands in its result; the reply says whether it was accepted."""

    name = SUBMIT
    description = (
        "Hand in your final result. It is checked against this tool's JSON schema: when "
        "accepted you are done; otherwise fix every error listed and call it again."
    )
    capabilities = Capabilities(read_only=True)
    args_model = dict

    def __init__(self, attempts: Attempts) -> None:
        self.attempts = attempts

    @cached_property
    def parameters(self) -> dict[str, Any]:
        schema = {k: v for k, v in self.attempts.schema.items() if k != "$schema"}
        if not self.attempts.wrapped:
            return schema
        return {"type": "object", "properties": {"value": schema}, "required": ["value"]}

    def parse(self, arguments: Mapping[str, Any]) -> Any:
        return dict(arguments)

    async def call(self, args: Any, ctx: ToolContext) -> ToolOutput:
        attempts = self.attempts
        if attempts.accepted:
            return ToolOutput("already accepted; answer with one short line")
        if attempts.left <= 0:
            return ToolOutput.failure("no attempts are left; stop and answer with one short line")
        if attempts.wrapped and "value" not in args:
            errors = [{"path": "", "message": "'value' is a required property"}]
            attempts.fail(errors)
        else:
            errors = attempts.offer(args["value"] if attempts.wrapped else args)
        if not errors:
            return ToolOutput("accepted; answer with one short line, without repeating it")
        if attempts.left <= 0:
            return ToolOutput.failure(
                f"not accepted, and no attempts are left:\n{error_lines(errors)}"
            )
        return ToolOutput.failure(
            f"not accepted ({attempts.left} attempts left); fix every error and call "
            f"{SUBMIT} again:\n{error_lines(errors)}"
        )


def with_instruction(message: Message, attempts: Attempts) -> Message:
    """The user's message with the instruction to call ``submit`` after its text."""
    return dataclasses.replace(
        message, content=(*message.content, TextBlock(attempts.instruction()))
    )


async def attempt_events(
    turn: Callable[[Message], AsyncIterator[Event]], message: Message, attempts: Attempts
) -> AsyncGenerator[Event, None]:
    """The events of every attempt: each turn's, without its ``Finished``, and one ``Finished``
    at the end carrying the usage of all turns. ``turn(message)`` runs one turn."""
    usage = Usage()
    while True:
        finished: Finished | None = None
        failed_before = attempts.failed
        async for event in turn(message):
            if isinstance(event, Finished):
                finished = event
            else:
                yield event
        assert finished is not None  # a turn always ends with exactly one Finished
        usage = usage + finished.usage
        feedback = attempts.feedback(finished, failed_before)
        if feedback is None:
            yield dataclasses.replace(finished, usage=usage)
            return
        message = Message.user(feedback)


def _json_text(text: str) -> tuple[Any] | None:
    """The JSON value of a final answer (a fenced block's too), or None when it is no JSON."""
    stripped = text.strip()
    if (fenced := _FENCE.match(stripped)) is not None:
        stripped = fenced.group(1)
    try:
        return (safejson.loads(stripped),)
    except ValueError:
        return None
