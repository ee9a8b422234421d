"""Checking JSON values against a JSON schema: every error with its JSON-pointer instance path.

Shared by the structured output of a prompt (``runtime.structured``) and the JSON-schema tools
of ``openheim mcp serve``; the schema comes from a model's client, a user's file or a caller,
so it is untrusted, and so is the value. A schema that is not itself a valid JSON schema, or
that this checker will not apply, raises ``BadSchema``; it is never applied half-understood:

- references resolve only inside the schema's own document (``$ref`` values start with ``#``):
  nothing is fetched from a URL or read from a file;
- ``pattern`` and ``patternProperties`` match with RE2 (``schema_keywords``), linear in the
  text; a regex RE2 cannot express (lookaround, backreferences) is refused by name;
- a schema nests at most ``SCHEMA_MAX_DEPTH`` and holds at most ``SCHEMA_MAX_NODES`` values; a
  schema file is at most ``SCHEMA_MAX_BYTES``;
- ``$schema``, when given, names a dialect the checker knows.

A value nested deeper than ``VALUE_MAX_DEPTH`` or holding more than ``VALUE_MAX_NODES`` values,
or a check that runs past ``CHECK_SECONDS``, raises ``TooCostly``. Every message is one line.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from jsonschema import validators  # type: ignore[import-untyped]
from jsonschema.exceptions import SchemaError  # type: ignore[import-untyped]
from referencing import Registry
from referencing.exceptions import NoSuchResource, Unresolvable

from openheim.errors import ConfigError
from openheim.formats import safejson
from openheim.formats.schema_keywords import DEADLINE, BadPattern, TooSlow, regex, timed_class

SCHEMA_MAX_DEPTH = 64
SCHEMA_MAX_NODES = 20_000
SCHEMA_MAX_BYTES = 4 * 1024 * 1024
VALUE_MAX_DEPTH = safejson.MAX_DEPTH
VALUE_MAX_NODES = 500_000
CHECK_SECONDS = 5.0

_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})
"""Keywords whose values are JSON data, not schemas: what they hold is never a keyword."""
_REF_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")


class BadSchema(ValueError):
    """The schema is not a valid JSON schema, or not one this checker applies; the message
    says where and why."""


class TooCostly(ValueError):
    """The value is too large or too deep to check, or checking it took too long."""


def _refuse_retrieval(uri: str) -> Any:
    raise NoSuchResource(uri)


_NO_RETRIEVAL: Registry[Any] = Registry(retrieve=_refuse_retrieval)  # type: ignore[call-arg]


def check_schema(schema: Any) -> None:
    """Raise ``BadSchema`` unless ``schema`` is a valid JSON schema (an object or a boolean)
    that this checker applies."""
    if not isinstance(schema, Mapping | bool):
        raise BadSchema(f"the schema must be a JSON object, not {type(schema).__name__}")
    if over := _over_bounds(schema, SCHEMA_MAX_NODES, SCHEMA_MAX_DEPTH):
        raise BadSchema(f"the schema {over}; make it smaller")
    cls = _dialect(schema)
    try:
        cls.check_schema(schema)
    except SchemaError as err:
        where = "/".join(str(p) for p in err.path) or "its root"
        raise BadSchema(f"the schema is not valid at {where}: {err.message}") from None
    _check_keywords(schema)


def load_schema(path: Path, name: str) -> dict[str, Any]:
    """The JSON schema in the file ``path`` (``name`` says which setting named it); a file that
    cannot be read, is too large, is not JSON, is not an object or is not a usable schema is a
    ``ConfigError`` naming it."""
    where = f"{name} {path}"
    fix = "fix the file, or point at another"
    try:
        with path.open("rb") as file:
            raw = file.read(SCHEMA_MAX_BYTES + 1)
    except OSError as err:
        raise ConfigError(f"{where} cannot be read: {err.strerror}", hint=fix) from None
    if len(raw) > SCHEMA_MAX_BYTES:
        raise ConfigError(f"{where} is over {SCHEMA_MAX_BYTES} bytes", hint=fix)
    try:
        schema = safejson.loads(raw.decode("utf-8"), SCHEMA_MAX_DEPTH)
    except safejson.TooDeep as err:
        raise ConfigError(f"{where}: {err}", hint=fix) from None
    except ValueError as err:  # UnicodeDecodeError is one too
        raise ConfigError(f"{where} is not JSON: {err}", hint=fix) from None
    if not isinstance(schema, dict):
        raise ConfigError(f"{where} is not a JSON object", hint=fix)
    try:
        check_schema(schema)
    except BadSchema as err:
        raise ConfigError(f"{where}: {err}", hint=fix) from None
    return schema


def schema_errors(
    schema: Mapping[str, Any] | bool, data: Any, seconds: float = CHECK_SECONDS
) -> list[dict[str, str]]:
    """Every error of ``data`` against ``schema``, each with its JSON-pointer instance path,
    in document order. ``BadSchema`` for a schema not applied; ``TooCostly`` for a value too
    large or deep, or a check that takes more than ``seconds``."""
    check_schema(schema)
    if over := _over_bounds(data, VALUE_MAX_NODES, VALUE_MAX_DEPTH):
        raise TooCostly(f"the value {over}; send a smaller one")
    validator = timed_class(_dialect(schema))(schema, registry=_NO_RETRIEVAL)
    token = DEADLINE.set(time.monotonic() + seconds)
    try:
        found = list(validator.iter_errors(data))
    except TooSlow:
        raise TooCostly(
            f"checking the value took over {seconds:g} s; simplify the schema (nested "
            "anyOf/oneOf multiply the work) or send a smaller value"
        ) from None
    except Unresolvable as err:
        raise BadSchema(
            f"the schema's reference {str(err.ref)!r} does not resolve inside the schema; "
            "only references within it (#...) are followed"
        ) from None
    except BadPattern as err:
        raise BadSchema(f"the schema is not usable: {err}") from None
    except RecursionError:
        raise BadSchema(
            "the schema's references loop without reaching a check; break the $ref cycle"
        ) from None
    finally:
        DEADLINE.reset(token)
    ordered = sorted(found, key=lambda e: [str(p) for p in e.absolute_path])
    return [{"path": _pointer(e.absolute_path), "message": e.message} for e in ordered]


def error_lines(errors: list[dict[str, str]]) -> str:
    """The errors one a line, ``PATH: MESSAGE`` (``(root)`` for the whole value)."""
    return "\n".join(f"{e['path'] or '(root)'}: {e['message']}" for e in errors)


def _dialect(schema: Mapping[str, Any] | bool) -> Any:
    """The validator class of the schema's ``$schema`` (the newest when it has none)."""
    if not isinstance(schema, Mapping) or "$schema" not in schema:
        return validators.validator_for(schema)
    found = validators.validator_for(schema, default=None)
    if found is None:
        raise BadSchema(
            f"the schema's $schema {str(schema['$schema'])[:200]!r} is not a dialect this "
            "checker knows; name draft 4, 6, 7, 2019-09 or 2020-12, or leave $schema out"
        )
    return found


def _check_keywords(schema: Mapping[str, Any] | bool) -> None:
    """Refuse references that leave the document and regexes RE2 cannot compile."""
    unevaluated = pattern_properties = False
    for key, value in _keywords(schema):
        if key in _REF_KEYWORDS and isinstance(value, str) and not value.startswith("#"):
            raise BadSchema(
                f"the schema's {key} {value[:200]!r} points outside the schema; only "
                "references within it (#...) are followed: put the definition under $defs"
            )
        try:
            if key == "pattern" and isinstance(value, str):
                regex(value)
            elif key == "patternProperties" and isinstance(value, Mapping):
                pattern_properties = True
                for pattern in value:
                    regex(pattern)
        except BadPattern as err:
            raise BadSchema(f"the schema is not usable: {err} (RE2 syntax)") from None
        unevaluated = unevaluated or key == "unevaluatedProperties"
    if unevaluated and pattern_properties:
        raise BadSchema(
            "the schema uses unevaluatedProperties and patternProperties together, which "
            "this checker does not apply; use additionalProperties instead"
        )


def _keywords(schema: Any) -> Iterator[tuple[str, Any]]:
    """Every ``(key, value)`` of every object in the schema, not entering data keywords."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, Mapping):
            for key, value in node.items():
                yield key, value
                if key not in _DATA_KEYWORDS:
                    stack.append(value)


def _over_bounds(value: Any, max_nodes: int, max_depth: int) -> str | None:
    """What makes ``value`` exceed the bounds (``None`` when it does not), found without
    recursion and stopping at the first excess."""
    stack = [(value, 1)]
    nodes = 0
    while stack:
        node, depth = stack.pop()
        nodes += 1
        if nodes > max_nodes:
            return f"holds more than {max_nodes} values"
        if isinstance(node, Mapping):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > max_depth:
            return f"is nested more than {max_depth} levels deep"
        stack.extend((child, depth + 1) for child in children)
        if nodes + len(stack) > max_nodes:
            return f"holds more than {max_nodes} values"
    return None


def _pointer(path: Any) -> str:
    parts = [str(p).replace("~", "~0").replace("/", "~1") for p in path]
    return "/" + "/".join(parts) if parts else ""
