"""Validation of every JSON-RPC message an ACP agent emits against the official ACP JSON schema.

The schema files are fetched and cached by :mod:`tests.acp.schema_fetch` and parsed by
:mod:`tests.acp.schema_load`; their public names are re-exported here.

:class:`AgentMessageValidator` watches a connection through the SDK's stream observers. It checks
each message the agent sends: the whole message against the schema's top-level ``Agent``
alternative, a request's or notification's ``params`` against the definition for its method, a
response's ``result`` against the response definition for the method of the client request it
answers (so it also watches the client's messages, to learn which id had which method) and an error
response's ``error`` against the schema's ``Error``. The method-to-definition tables come from the
schema's own ``x-method`` markers, so a new pinned version brings its methods with it. Failures are
collected, not raised, because the SDK swallows exceptions from observers.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, Literal

import jsonschema  # type: ignore[import-untyped]
import jsonschema.exceptions  # type: ignore[import-untyped]
from acp.connection import StreamDirection, StreamEvent

from tests.acp.schema_fetch import (
    CACHE_DIR_ENV,
    SCHEMA_FILES,
    SDK_INTEGRITY,
    SDK_PACKAGE,
    SDK_VERSION,
    STABLE_SCHEMA,
    UNSTABLE_SCHEMA,
    SchemaFetchError,
    ensure_schema_files,
    schema_dir,
)
from tests.acp.schema_load import JsonObject, MethodDef, ParsedSchema, load_schema

__all__ = [
    "CACHE_DIR_ENV",
    "SCHEMA_FILES",
    "SDK_INTEGRITY",
    "SDK_PACKAGE",
    "SDK_VERSION",
    "STABLE_SCHEMA",
    "UNSTABLE_SCHEMA",
    "AgentMessageValidator",
    "MethodDef",
    "SchemaFetchError",
    "ensure_schema_files",
    "schema_dir",
]

_MAX_MESSAGE_CHARS: Final = 400

Kind = Literal["request", "notification", "response"]


def _short(text: str) -> str:
    return text if len(text) <= _MAX_MESSAGE_CHARS else text[: _MAX_MESSAGE_CHARS - 3] + "..."


def _tag_mismatches(errors: list[Any]) -> list[Any]:
    """The errors that rule a ``oneOf``/``anyOf`` branch out at once: the value has the wrong
    type, or a direct member has the wrong ``const`` (a tag such as ``sessionUpdate``)."""
    return [
        e
        for e in errors
        if (e.validator == "type" and not e.path) or (e.validator == "const" and len(e.path) <= 1)
    ]


def _explain(error: Any) -> tuple[Any, str]:
    """The error to report for ``error`` and a readable reason.

    The schema's unions (``oneOf``/``anyOf``) are mostly tagged: each branch fixes a member such
    as ``sessionUpdate`` with ``const``. jsonschema's ``best_match`` then stops at "is not valid
    under any of the given schemas", which hides the real problem. So: when exactly one branch
    accepts the tag, look inside that branch; when no branch does, say which tag values exist.
    """
    while error.validator in {"anyOf", "oneOf"} and error.context:
        branches: dict[Any, list[Any]] = {}
        for sub in error.context:
            branches.setdefault(sub.relative_schema_path[0], []).append(sub)
        candidates = [subs for subs in branches.values() if not _tag_mismatches(subs)]
        if len(candidates) == 1:
            error = jsonschema.exceptions.best_match(candidates[0])
            continue
        if candidates:
            break
        # Every branch ruled out: is it because of one tag (or, for an enum-like union of
        # constants, the value itself) that has no branch?
        tags = [e for subs in branches.values() for e in _tag_mismatches(subs)]
        tags = [e for e in tags if e.validator == "const"]
        members = {tuple(e.path) for e in tags}
        if len(members) != 1:
            break
        (member,) = members
        allowed = sorted({json.dumps(e.validator_value) for e in tags})
        value = error.instance
        for key in member:
            value = value.get(key) if isinstance(value, dict) else None
        if json.dumps(value) in allowed:
            break
        subject = f"{member[0]} {json.dumps(value)}" if member else json.dumps(value)
        return error, _short(f"{subject} is none of {', '.join(allowed)}")
    return error, _short(error.message)


def _id_key(value: Any) -> str:
    """A dict key for a JSON-RPC id that keeps ``1`` and ``"1"`` apart."""
    return json.dumps(value, sort_keys=True)


class AgentMessageValidator:
    """Checks every message an ACP agent sends against the official schema; collects failures.

    Wire it into the client's connection with ``observers=[validator.observer]`` (the SDK calls it
    with each raw message: ``INCOMING`` ones come from the agent, ``OUTGOING`` ones from the
    client), or into an agent-side connection with :attr:`agent_side_observer`, or call
    :meth:`feed` directly. Then :meth:`assert_valid` at the end of the test.

    A method found in ``schema.json`` is checked against it; one found only in
    ``schema.unstable.json`` against that. With ``unstable=True`` everything is checked against the
    unstable schema, for an agent that uses the unstable protocol. Extension methods (``_name``)
    have no schema beyond the JSON-RPC envelope.
    """

    def __init__(self, *, unstable: bool = False, directory: Path | None = None) -> None:
        folder = ensure_schema_files(directory)
        unstable_schema = load_schema(folder, UNSTABLE_SCHEMA)
        schemas = [unstable_schema] if unstable else [load_schema(folder, STABLE_SCHEMA)]
        schemas.append(unstable_schema)
        self._schemas = {s.file: s for s in schemas}
        self._default = schemas[0]
        self.request_defs = self._merge(schemas, "requests")
        """Agent-to-client request methods and their params definitions."""
        self.notification_defs = self._merge(schemas, "notifications")
        """Agent-to-client notification methods and their params definitions."""
        self.response_defs = self._merge(schemas, "responses")
        """Client-to-agent request methods and the definitions of the agent's results."""
        self.checked = 0
        """How many agent messages have been validated."""
        self.seen: Counter[str] = Counter()
        """Agent messages validated, by kind and method: ``"notification session/update"``,
        ``"request fs/read_text_file"``, ``"response initialize"``, ``"error session/load"``."""
        self._errors: list[str] = []
        self._client_methods: dict[str, str] = {}
        self._unanswered: dict[str, JsonObject] = {}

    @staticmethod
    def _merge(
        schemas: list[ParsedSchema], table: Literal["requests", "notifications", "responses"]
    ) -> dict[str, MethodDef]:
        merged: dict[str, MethodDef] = {}
        for schema in schemas:  # the first schema that knows a method wins
            for method, definition in getattr(schema, table).items():
                merged.setdefault(method, MethodDef(schema.file, definition))
        return merged

    @property
    def unstable_only_methods(self) -> set[str]:
        """Methods (any kind) defined only in ``schema.unstable.json``."""
        tables = (self.request_defs, self.notification_defs, self.response_defs)
        return {m for t in tables for m, d in t.items() if d.schema_file == UNSTABLE_SCHEMA}

    @property
    def errors(self) -> list[str]:
        """Readable failures so far, including responses to ids the client never sent."""
        unmatched = [
            f"agent->client response id={message.get('id')!r}: answers no request the client sent "
            "(or answers one twice)"
            for message in self._unanswered.values()
        ]
        return [*self._errors, *unmatched]

    def assert_valid(self) -> None:
        """Fail if any message was invalid, or if none was checked (observer not wired in)."""
        errors = self.errors
        if errors:
            listing = "\n".join(f"  - {e}" for e in errors)
            raise AssertionError(
                f"{len(errors)} of the agent's ACP messages break the schema "
                f"({SDK_PACKAGE}@{SDK_VERSION}):\n{listing}"
            )
        if self.checked == 0:
            raise AssertionError(
                "no agent message was validated: was validator.observer passed to the connection?"
            )

    def observer(self, event: StreamEvent) -> None:
        """Stream observer for a client-side connection (``ClientSideConnection``,
        ``spawn_agent_process``): incoming messages are the agent's."""
        self.feed(event.message, from_agent=event.direction == StreamDirection.INCOMING)

    def agent_side_observer(self, event: StreamEvent) -> None:
        """Stream observer for an agent-side connection (``AgentSideConnection``,
        ``run_agent``): outgoing messages are the agent's."""
        self.feed(event.message, from_agent=event.direction == StreamDirection.OUTGOING)

    def feed(self, message: Mapping[str, Any], *, from_agent: bool) -> None:
        """Validate an agent message, or note which method a client request has.

        Never raises for a bad message: the SDK logs and ignores exceptions from observers, so
        every problem, even one in this validator, is recorded in :attr:`errors` instead.
        """
        try:
            if from_agent:
                self._check_agent_message(message)
            else:
                self._note_client_message(message)
        except Exception as exc:
            self._errors.append(f"validator failed on {_short(repr(message))}: {exc!r}")

    def _note_client_message(self, message: Mapping[str, Any]) -> None:
        method = message.get("method")
        if not isinstance(method, str) or "id" not in message:
            return  # a notification or a response from the client: nothing the agent answers
        key = _id_key(message["id"])
        self._client_methods[key] = method
        early = self._unanswered.pop(key, None)
        if early is not None:  # the agent's response was observed before the request
            self._check_response(early)

    def _check_agent_message(self, message: Mapping[str, Any]) -> None:
        self.checked += 1
        method = message.get("method")
        kind: Kind
        if method is not None:
            kind = "request" if "id" in message else "notification"
        elif "id" in message:
            kind = "response"
        else:
            self._errors.append(
                f"agent->client message is neither request, notification nor response: "
                f"{_short(json.dumps(message))}"
            )
            return
        if kind != "response":
            self.seen[f"{kind} {method}"] += 1
        defs = self.notification_defs if kind == "notification" else self.request_defs
        found = defs.get(method) if isinstance(method, str) else None
        schema = self._schemas[found.schema_file] if found else self._default
        before = len(self._errors)
        if kind == "response":
            self._check_response(message)
        elif found is not None:
            pointer = f"/$defs/{found.definition}"
            params = message.get("params")
            self._validate(schema, pointer, params, "params", message, kind, found.definition)
        elif not (isinstance(method, str) and method.startswith("_")):
            self._fail(message, kind, f"{method!r} is not an agent->client {kind} in the schema")
        if len(self._errors) == before:  # else the envelope check would mostly repeat the error
            self._validate(schema, schema.agent_pointer, message, "message", message, kind, "Agent")

    def _check_response(self, message: Mapping[str, Any]) -> None:
        if "result" in message and "error" in message:
            self._fail(message, "response", "has both `result` and `error`")
        request_id = message.get("id")
        method = self._client_methods.pop(_id_key(request_id), None)
        if "error" in message and (method is not None or request_id is None):
            # The error object's shape does not depend on the method. (An id of null answers a
            # request that could not be read.)
            self.seen[f"error {method}"] += 1
            definition = self._default.error_definition
            pointer = f"/$defs/{definition}"
            error = message["error"]
            self._validate(
                self._default, pointer, error, "error", message, "response", definition, method
            )
        elif method is None:
            self._unanswered[_id_key(request_id)] = dict(message)  # until the request shows up
        elif "result" in message:
            self._check_result(message, method)

    def _check_result(self, message: Mapping[str, Any], method: str) -> None:
        self.seen[f"response {method}"] += 1
        found = self.response_defs.get(method)
        if found is None:
            if not method.startswith("_"):
                self._fail(message, "response", f"the schema has no result for method {method!r}")
            return
        schema = self._schemas[found.schema_file]
        pointer = f"/$defs/{found.definition}"
        result = message["result"]
        self._validate(
            schema, pointer, result, "result", message, "response", found.definition, method
        )

    def _validate(
        self,
        schema: ParsedSchema,
        pointer: str,
        instance: Any,
        part: str,
        message: Mapping[str, Any],
        kind: Kind,
        definition: str,
        method: str | None = None,
    ) -> None:
        error = jsonschema.exceptions.best_match(schema.validator(pointer).iter_errors(instance))
        if error is None:
            return
        error, reason = _explain(error)
        where = error.json_path.replace("$", part, 1)
        detail = f"{part} does not match {definition} ({schema.file}): {reason} at {where}"
        self._fail(message, kind, detail, method)

    def _fail(
        self, message: Mapping[str, Any], kind: Kind, detail: str, method: str | None = None
    ) -> None:
        name = method or message.get("method")
        label = f"agent->client {kind}"
        if name is not None:
            label += f" {name}" if kind != "response" else f" to {name}"
        if "id" in message:
            label += f" id={message['id']!r}"
        self._errors.append(f"{label}: {detail}")
