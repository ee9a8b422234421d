"""``openheim.formats.schema_check`` against hostile schemas and values: nothing is fetched or read
through a reference, regexes match in linear time, every check ends in bounded time, and every
refusal is one line.

Timing bounds here are generous (seconds) against attacks that took minutes or never ended."""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openheim.errors import ConfigError
from openheim.formats.schema_check import (
    SCHEMA_MAX_DEPTH,
    VALUE_MAX_DEPTH,
    VALUE_MAX_NODES,
    BadSchema,
    TooCostly,
    check_schema,
    load_schema,
    schema_errors,
)

SECRET = "the-secret-value-42"


class _Hits(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:
        self.hits.append(self.path)
        body = json.dumps({"const": SECRET}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/schema+json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def remote() -> Iterator[tuple[str, list[str]]]:
    """A loopback server that hands out a schema holding SECRET, and the paths it was asked."""
    _Hits.hits = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hits)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", _Hits.hits
    finally:
        server.shutdown()
        thread.join(5)


def nested(depth: int, leaf: Any = None) -> Any:
    value: Any = leaf
    for _ in range(depth):
        value = [value]
    return value


def deep_schema(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "array"}
    for _ in range(depth):
        schema = {"type": "array", "items": schema}
    return schema


def doubling_anyof(levels: int) -> dict[str, Any]:
    """Each level's anyOf tries the next level twice: 2**levels checks of one value."""
    defs: dict[str, Any] = {
        f"d{i}": {"anyOf": [{"$ref": f"#/$defs/d{i + 1}"}] * 2} for i in range(levels)
    }
    defs[f"d{levels}"] = {"type": "string"}
    return {"$defs": defs, "$ref": "#/$defs/d0"}


@pytest.mark.parametrize(
    ("refs", "where"),
    [
        pytest.param({"$ref": "{url}/s.json"}, "root", id="http $ref at the root"),
        pytest.param(
            {"properties": {"a": {"$ref": "{url}/s.json"}}}, "property", id="http $ref inside"
        ),
        pytest.param({"$id": "{url}/base/", "$ref": "s.json"}, "relative", id="relative to $id"),
        pytest.param({"$dynamicRef": "{url}/s.json"}, "dynamic", id="http $dynamicRef"),
        pytest.param({"$schema": "{url}/meta", "type": "string"}, "meta", id="remote $schema"),
    ],
)
def test_nothing_is_fetched_through_a_schema(
    remote: tuple[str, list[str]], refs: dict[str, Any], where: str
) -> None:
    url, hits = remote
    schema = json.loads(json.dumps(refs).replace("{url}", url))
    with pytest.raises(BadSchema) as caught:
        schema_errors(schema, {"a": "x"})
    message = str(caught.value)
    assert "\n" not in message and SECRET not in message, where
    assert hits == []


def test_a_file_reference_reads_nothing(tmp_path: Path) -> None:
    target = tmp_path / "secret.json"
    target.write_text(json.dumps({"const": SECRET}))
    relative = {"$id": tmp_path.as_uri() + "/", "$ref": "secret.json"}
    for schema in ({"$ref": target.as_uri()}, relative):
        with pytest.raises(BadSchema, match="only references within it") as caught:
            schema_errors(schema, "x")
        assert SECRET not in str(caught.value)


def test_references_inside_the_document_still_resolve() -> None:
    schema = {
        "$id": "http://127.0.0.1:9/root.json",
        "$defs": {"n": {"type": "integer"}},
        "properties": {"a": {"$ref": "#/$defs/n"}, "b": {"$ref": "#"}},
    }
    errors = schema_errors(schema, {"a": "x", "b": {"a": 1}})
    assert [e["path"] for e in errors] == ["/a"]


@pytest.mark.parametrize(
    ("schema", "value", "error_path"),
    [
        pytest.param({"pattern": "^(a+)+$"}, "a" * 34 + "!", "", id="pattern nested plus"),
        pytest.param(
            {"patternProperties": {"(a|aa)+$": {"type": "integer"}}},
            {"a" * 5000 + "!": 1, "aa": "x"},
            "/aa",
            id="patternProperties alternation",
        ),
        pytest.param(
            {"patternProperties": {"^(a+)+$": True}, "additionalProperties": False},
            {"a" * 34 + "!": 1},
            "",
            id="additionalProperties over patterns",
        ),
        pytest.param(
            {"propertyNames": {"pattern": "^(a|a)*$"}}, {"a" * 40 + "!": 1}, "", id="names"
        ),
    ],
)
def test_regexes_match_in_linear_time(schema: Any, value: Any, error_path: str) -> None:
    started = time.monotonic()
    errors = schema_errors(schema, value)
    assert time.monotonic() - started < 2
    assert [e["path"] for e in errors] == [error_path]


@pytest.mark.parametrize(
    ("schema", "says"),
    [
        pytest.param({"pattern": "(?=a)b"}, "lookahead (?=...) is not supported", id="lookahead"),
        pytest.param({"pattern": "(a)\\1"}, "backreferences", id="backreference"),
        pytest.param({"patternProperties": {"(?<!x)y": True}}, "lookbehind", id="lookbehind key"),
        pytest.param(
            {"items": {"properties": {"p": {"pattern": "(?>a)"}}}},
            "atomic group",
            id="nested atomic group",
        ),
        pytest.param(
            {"unevaluatedProperties": False, "patternProperties": {"a": True}},
            "unevaluatedProperties and patternProperties",
            id="unevaluated with patterns",
        ),
        pytest.param({"$schema": "urn:my-dialect"}, "not a dialect", id="unknown dialect"),
        pytest.param(deep_schema(SCHEMA_MAX_DEPTH), "nested more than", id="schema too deep"),
        pytest.param(deep_schema(2000), "nested more than", id="schema 2000 deep"),
        pytest.param({"enum": list(range(30_000))}, "more than", id="schema too large"),
        pytest.param({"$ref": "#/$defs/missing"}, "does not resolve", id="missing definition"),
        pytest.param({"$ref": "#"}, "loop", id="reference loop"),
    ],
)
def test_a_schema_not_applied_is_a_one_line_error(schema: Any, says: str) -> None:
    with pytest.raises(BadSchema) as caught:
        schema_errors(schema, {"a": 1})
    assert says in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_pattern_in_data_keywords_is_data() -> None:
    check_schema({"enum": [{"pattern": "(?=x)"}], "const": {"$ref": "http://x/"}})


@pytest.mark.parametrize(
    ("value", "says"),
    [
        pytest.param(nested(VALUE_MAX_DEPTH + 1), "nested more than", id="too deep"),
        pytest.param(nested(100_000), "nested more than", id="100000 deep"),
        pytest.param(list(range(VALUE_MAX_NODES + 1)), "more than", id="too many values"),
    ],
)
def test_a_value_too_large_to_check_is_refused(value: Any, says: str) -> None:
    with pytest.raises(TooCostly, match=says):
        schema_errors({"type": "array"}, value)


def test_a_value_at_the_bounds_is_checked() -> None:
    tree = {"$defs": {"t": {"type": ["array", "null"], "items": {"$ref": "#/$defs/t"}}}}
    schema = {**tree, "$ref": "#/$defs/t"}
    assert schema_errors(schema, nested(VALUE_MAX_DEPTH)) == []
    assert schema_errors(deep_schema(SCHEMA_MAX_DEPTH - 1), []) == []


def test_a_check_that_multiplies_its_work_stops_at_the_deadline() -> None:
    started = time.monotonic()
    with pytest.raises(TooCostly, match=r"took over 0\.2 s"):
        schema_errors(doubling_anyof(40), 1, seconds=0.2)
    assert time.monotonic() - started < 3


def test_unique_items_is_linear_and_exact() -> None:
    many = [{"id": i, "tags": ["a", i]} for i in range(20_000)]
    started = time.monotonic()
    assert schema_errors({"uniqueItems": True}, many) == []
    assert time.monotonic() - started < 5
    twice = [*many[:10], {"tags": ["a", 3], "id": 3}]
    errors = schema_errors({"uniqueItems": True}, twice)
    assert [e["message"] for e in errors] == ["items 3 and 10 are equal; the items must differ"]


@pytest.mark.parametrize(
    ("items", "unique"),
    [
        pytest.param([1, 1.0], False, id="1 equals 1.0"),
        pytest.param([1, True], True, id="true is not 1"),
        pytest.param([0, False], True, id="false is not 0"),
        pytest.param([{"a": 1, "b": 2}, {"b": 2, "a": 1}], False, id="key order"),
        pytest.param([[1, 2], [2, 1]], True, id="array order"),
        pytest.param([None, "null"], True, id="null is not a string"),
    ],
)
def test_unique_items_follows_json_equality(items: list[Any], unique: bool) -> None:
    assert (schema_errors({"uniqueItems": True}, items) == []) is unique


@pytest.mark.parametrize(
    ("text", "says"),
    [
        pytest.param("[" * 100_000 + "]" * 100_000, "nested more than", id="100000 deep"),
        pytest.param('{"a":' * 2000 + "1" + "}" * 2000, "nested more than", id="2000 deep"),
        pytest.param("{", "is not JSON", id="not JSON"),
        pytest.param('{"type": 3}', "not valid at type", id="not valid"),
        pytest.param('{"$ref": "file:///etc/passwd"}', "points outside", id="file ref"),
    ],
)
def test_a_bad_schema_file_is_a_one_line_config_error(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "schema.json"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_schema(path, "--output-schema")
    assert says in caught.value.message
    assert "\n" not in caught.value.message
