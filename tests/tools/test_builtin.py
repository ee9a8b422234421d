"""The built-in tool set: names, order, the shell switch, schemas and capabilities."""

from __future__ import annotations

import json

from openheim.tools.base import ToolKind
from openheim.tools.builtin import builtin_tools

SAFE = ["read_file", "write_file", "edit_file", "list_dir", "glob", "search"]


def test_names_order_and_shell_switch() -> None:
    assert builtin_tools(allow_shell=False).names == SAFE
    assert builtin_tools(allow_shell=True).names == [*SAFE, "execute_command"]
    selected = builtin_tools(allow_shell=True).select(["read_*", "search"])
    assert selected.names == ["read_file", "search"]


def test_capabilities() -> None:
    tools = {t.name: t.capabilities for t in builtin_tools(allow_shell=True)}
    read_only = {name for name, caps in tools.items() if caps.read_only}
    assert read_only == {"read_file", "list_dir", "glob", "search"}
    kinds = {name: caps.kind for name, caps in tools.items()}
    assert kinds == {
        "read_file": ToolKind.READ,
        "write_file": ToolKind.EDIT,
        "edit_file": ToolKind.EDIT,
        "list_dir": ToolKind.READ,
        "glob": ToolKind.SEARCH,
        "search": ToolKind.SEARCH,
        "execute_command": ToolKind.EXECUTE,
    }


def test_schemas_are_strict_json_objects_with_described_arguments() -> None:
    required = {
        "read_file": ["path"],
        "write_file": ["path", "content"],
        "edit_file": ["path", "old_string", "new_string"],
        "list_dir": [],
        "glob": ["pattern"],
        "search": ["pattern"],
        "execute_command": ["command"],
    }
    for tool in builtin_tools(allow_shell=True):
        schema = json.loads(json.dumps(tool.parameters))
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert schema.get("required", []) == required[tool.name], tool.name
        for name, prop in schema["properties"].items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"
        assert "ctx" not in schema["properties"]
        assert len(tool.description) > 80, f"{tool.name} needs a fuller description"


def test_descriptions_state_limits_and_how_to_continue() -> None:
    tools = {t.name: t for t in builtin_tools(allow_shell=True)}
    assert "100 KiB" in tools["read_file"].description
    assert "offset=" in tools["read_file"].description
    assert "1000" in tools["glob"].description and "1000" in tools["list_dir"].description
    assert "200" in tools["search"].description
    assert "64 KiB" in tools["execute_command"].description
    props = tools["execute_command"].parameters["properties"]
    assert props["timeout"] == {
        "type": "integer",
        "description": props["timeout"]["description"],
    }
    assert tools["read_file"].parameters["properties"]["offset"]["type"] == "integer"
