"""Parsing a fetched ACP schema file into a ``$ref`` registry, validators and method tables."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
from referencing import Registry
from referencing.jsonschema import specification_with

from tests.acp.schema_fetch import SDK_VERSION

__all__ = ["JsonObject", "MethodDef", "ParsedSchema", "load_schema"]

JsonObject = dict[str, Any]


@dataclass(frozen=True, slots=True)
class MethodDef:
    """Where a method's params or result are defined: a schema file and a ``$defs`` name."""

    schema_file: str
    definition: str


@dataclass
class ParsedSchema:
    """One parsed schema file, its ``$ref`` registry and the method tables read from it."""

    file: str
    root: JsonObject
    uri: str
    registry: Registry[Any]
    validator_class: Any
    agent_pointer: str
    requests: dict[str, str]
    notifications: dict[str, str]
    responses: dict[str, str]
    error_definition: str
    _validators: dict[str, Any] = field(default_factory=dict)

    def validator(self, pointer: str) -> Any:
        """A validator for the subschema at JSON pointer ``pointer`` (e.g. ``/$defs/Error``)."""
        found = self._validators.get(pointer)
        if found is None:
            ref = {"$ref": f"{self.uri}#{pointer}"}
            found = self.validator_class(ref, registry=self.registry)
            self._validators[pointer] = found
        return found


def _refs_in(node: Any) -> Iterator[str]:
    """The ``$defs`` names that ``node`` refers to directly (without following the refs)."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            yield ref.removeprefix("#/$defs/")
        for value in node.values():
            yield from _refs_in(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs_in(value)


def _method_table(defs: JsonObject, node: Any) -> dict[str, str]:
    """Method name -> definition name for the definitions ``node`` refers to.

    The schema marks each method's params and result definitions with ``x-method``; the extension
    catch-alls (``ExtRequest`` and the like) have none and accept anything, so they are left out.
    """
    table: dict[str, str] = {}
    for name in _refs_in(node):
        method = defs.get(name, {}).get("x-method")
        if isinstance(method, str):
            table.setdefault(method, name)
    return table


@cache
def load_schema(directory: Path, file: str) -> ParsedSchema:
    """Parse one schema file and derive the agent-to-client method tables from it."""
    root: JsonObject = json.loads((directory / file).read_text(encoding="utf-8"))
    try:
        defs: JsonObject = root["$defs"]
        alternatives: list[JsonObject] = root["anyOf"]
        agent_index = next(i for i, alt in enumerate(alternatives) if alt.get("title") == "Agent")
        requests = _method_table(defs, defs["AgentRequest"]["properties"]["params"])
        notifications = _method_table(defs, defs["AgentNotification"]["properties"]["params"])
        for alternative in alternatives:  # `$/cancel_request` and other `$/` notifications
            if alternative.get("title") == "ProtocolLevel":
                notifications.update(_method_table(defs, alternative["properties"]["params"]))
        response_kinds: list[JsonObject] = defs["AgentResponse"]["anyOf"]
        result = next(
            k["properties"]["result"] for k in response_kinds if "result" in k["required"]
        )
        error = next(k["properties"]["error"] for k in response_kinds if "error" in k["required"])
        responses = _method_table(defs, result)
        error_definition = next(_refs_in(error))
    except (KeyError, StopIteration, TypeError) as exc:
        raise RuntimeError(
            f"{directory / file} does not have the layout tests/acp/schema_load.py expects "
            f"(Agent alternative, AgentRequest/AgentResponse/AgentNotification): {exc!r}"
        ) from exc
    uri = f"urn:acp-schema:{SDK_VERSION}:{file}"
    dialect = root.get("$schema", "https://json-schema.org/draft/2020-12/schema")
    resource = specification_with(dialect).create_resource(root)
    return ParsedSchema(
        file=file,
        root=root,
        uri=uri,
        registry=Registry().with_resource(uri, resource),
        validator_class=jsonschema.validators.validator_for(
            root, default=jsonschema.Draft202012Validator
        ),
        agent_pointer=f"/anyOf/{agent_index}",
        requests=requests,
        notifications=notifications,
        responses=responses,
        error_definition=error_definition,
    )
