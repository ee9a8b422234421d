"""``openheim run --output-schema FILE``: the answer is a JSON value valid against the schema,
handed in through the ``submit`` tool, retried with the validation errors, printed on stdout;
against FakeLLMServer."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from openheim.term import exit_codes
from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from tests.cli.test_cli import configure, openheim

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
    "required": ["name", "age"],
    "additionalProperties": False,
}

NESTED = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "title": {"type": "string"},
        "meta": {
            "type": "object",
            "properties": {
                "color": {"enum": ["red", "green", "blue"]},
                "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            },
            "required": ["color", "tags"],
        },
    },
    "required": ["title", "meta"],
}


def schema_file(work: Path, schema: Any, name: str = "schema.json") -> str:
    path = work / name
    path.write_text(json.dumps(schema))
    return str(path)


def run_with(home: Path, work: Path, schema: Any, *args: str) -> subprocess.CompletedProcess[str]:
    """``openheim run --output-schema FILE ARGS... go`` against the configured server."""
    return openheim(
        "run", "--output-schema", schema_file(work, schema), *args, "go", home=home, cwd=work
    )


def submit(arguments: dict[str, Any]) -> FakeReply:
    return FakeReply(tool_calls=[FakeToolCall("submit", arguments)])


def submit_tool(body: Any) -> dict[str, Any]:
    tools = {t["function"]["name"]: t["function"] for t in body["tools"]}
    found: dict[str, Any] = tools["submit"]
    return found


def test_valid_the_first_time(home: Path, work: Path) -> None:
    replies = [submit({"name": "Ada", "age": 36}), FakeReply(text="Done.")]
    with FakeLLMServer(replies) as server:
        configure(home, server)
        done = run_with(home, work, PERSON)
        first = server.requests[0].body
    assert done.returncode == exit_codes.OK, done.stderr
    assert json.loads(done.stdout) == {"name": "Ada", "age": 36}
    assert "Done." in done.stderr  # the model's words go to stderr, stdout is the JSON's
    assert submit_tool(first)["parameters"] == PERSON
    assert "call the `submit` tool" in json.dumps(first["messages"][-1])


def test_valid_after_one_retry_with_every_error_and_its_path(home: Path, work: Path) -> None:
    replies = [
        submit({"name": 7, "age": -1}),
        submit({"name": "Ada", "age": 36}),
        FakeReply(text="Done."),
    ]
    with FakeLLMServer(replies) as server:
        configure(home, server)
        done = run_with(home, work, PERSON)
        feedback = server.requests[1].last_tool_result
    assert done.returncode == exit_codes.OK, done.stderr
    assert json.loads(done.stdout) == {"name": "Ada", "age": 36}
    assert feedback is not None
    assert "/age: -1 is less than the minimum of 0" in feedback
    assert "/name: 7 is not of type 'string'" in feedback
    assert "3 attempts left" in feedback


def test_an_answer_without_submit_is_answered_with_another_attempt(home: Path, work: Path) -> None:
    replies = [
        FakeReply(text="Ada is 36."),
        FakeReply(text='```json\n{"name": "Ada", "age": 36}\n```'),
    ]
    with FakeLLMServer(replies) as server:
        configure(home, server)
        done = run_with(home, work, PERSON)
        retry = server.requests[1].messages[-1]
    assert done.returncode == exit_codes.OK, done.stderr
    assert json.loads(done.stdout) == {"name": "Ada", "age": 36}
    assert retry["role"] == "user"
    assert "did not hand in a valid result" in json.dumps(retry)


def test_never_valid_exits_with_no_valid_output(home: Path, work: Path) -> None:
    bad = {"name": "Ada", "age": "old"}
    replies = [submit(bad), submit(bad), FakeReply(text="I give up.")]
    with FakeLLMServer(replies) as server:
        configure(home, server)
        done = run_with(home, work, PERSON, "--output-retries", "1")
        assert server.remaining == 0
        last = server.requests[-1].last_tool_result
    assert done.returncode == exit_codes.NO_VALID_OUTPUT == 7
    assert done.stdout == ""
    assert "no valid output after 2 attempts: /age: 'old' is not of type 'integer'" in done.stderr
    assert last is not None and "no attempts are left" in last


def test_nested_objects_and_enums(home: Path, work: Path) -> None:
    good = {"title": "t", "meta": {"color": "green", "tags": ["a"]}}
    replies = [
        submit({"title": "t", "meta": {"color": "purple", "tags": []}}),
        submit(good),
        FakeReply(text="ok"),
    ]
    with FakeLLMServer(replies) as server:
        configure(home, server)
        done = run_with(home, work, NESTED)
        feedback = server.requests[1].last_tool_result
        offered = submit_tool(server.requests[0].body)["parameters"]
    assert done.returncode == exit_codes.OK, done.stderr
    assert json.loads(done.stdout) == good
    assert feedback is not None
    assert "/meta/color: 'purple' is not one of ['red', 'green', 'blue']" in feedback
    assert "/meta/tags: [] should be non-empty" in feedback
    assert "$schema" not in offered and offered["properties"] == NESTED["properties"]


def test_a_schema_of_no_object_is_handed_in_as_value(home: Path, work: Path) -> None:
    schema = {"type": "array", "items": {"type": "integer"}}
    with FakeLLMServer([submit({"value": [1, 2]}), FakeReply(text="ok")]) as server:
        configure(home, server)
        done = run_with(home, work, schema)
        offered = submit_tool(server.requests[0].body)["parameters"]
    assert done.returncode == exit_codes.OK, done.stderr
    assert json.loads(done.stdout) == [1, 2]
    assert offered["properties"]["value"] == schema


def test_a_bad_schema_file_is_a_usage_error(home: Path, work: Path) -> None:
    configure(home, None)
    cases = {
        schema_file(work, {"type": "nope"}, "bad.json"): ": the schema is not valid at type",
        schema_file(work, [1], "list.json"): " is not a JSON object",
        str(work / "missing.json"): " cannot be read: No such file or directory",
    }
    (work / "text.json").write_text("{not json")
    cases[str(work / "text.json")] = " is not JSON: Expecting property name"
    for path, message in cases.items():
        done = openheim("run", "--output-schema", path, "go", home=home, cwd=work)
        assert done.returncode == exit_codes.USAGE, (path, done.stderr)
        assert f"--output-schema {path}{message}" in done.stderr
        assert "Traceback" not in done.stderr
        assert done.stderr.count("\n") == 1
    both = openheim("run", "--json", "--output-schema", path, "go", home=home, cwd=work)
    assert both.returncode == exit_codes.USAGE


@pytest.mark.parametrize(
    ("text", "says"),
    [
        pytest.param("[" * 100_000 + "]" * 100_000, "is nested more than 64", id="100000 deep"),
        pytest.param('{"$ref": "file:///etc/hostname"}', "points outside", id="file ref"),
        pytest.param('{"$ref": "http://127.0.0.1:9/s.json"}', "points outside", id="http ref"),
        pytest.param('{"pattern": "(?<=a)b"}', "lookbehind", id="lookbehind"),
    ],
)
def test_a_hostile_schema_file_is_a_one_line_usage_error(
    home: Path, work: Path, text: str, says: str
) -> None:
    configure(home, None)
    (work / "hostile.json").write_text(text)
    done = openheim("run", "--output-schema", "hostile.json", "go", home=home, cwd=work)
    assert done.returncode == exit_codes.USAGE, done.stderr
    assert says in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1


def test_a_catastrophic_pattern_is_matched_at_once(home: Path, work: Path) -> None:
    schema = {
        "type": "object",
        "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}},
        "patternProperties": {"^(x|xx)+$": {"type": "integer"}},
        "required": ["s"],
    }
    replies = [
        submit({"s": "a" * 34 + "!", "x" * 40 + "!": 1}),
        submit({"s": "aaaa", "xxxx": 4}),
        FakeReply(text="ok"),
    ]
    with FakeLLMServer(replies) as server:
        configure(home, server)
        done = run_with(home, work, schema)
        feedback = server.requests[1].last_tool_result
    assert done.returncode == exit_codes.OK, done.stderr
    assert json.loads(done.stdout) == {"s": "aaaa", "xxxx": 4}
    assert feedback is not None and "does not match '^(a+)+$'" in feedback
