"""Tool name sanitisation, shortening and collisions; schema capping; result rendering."""

from __future__ import annotations

import re

import mcp_types

from openheim.mcp.names import MAX_NAME, tool_name, unique_names
from openheim.mcp.schema import cap_schema
from openheim.mcp.tools import render_result

VALID = re.compile(r"^[A-Za-z_-][A-Za-z0-9_-]{0,63}$")


def test_sanitised_names() -> None:
    assert tool_name("git hub", "read.file/v2") == "git_hub__read_file_v2"
    assert tool_name("9lives", "x") == "_9lives__x"
    assert tool_name("s", "ünï") == "s___n_"


def test_long_names_get_a_stable_hash() -> None:
    a = tool_name("server", "a" * 100)
    b = tool_name("server", "a" * 99 + "b")
    assert len(a) == MAX_NAME and VALID.match(a)
    assert a != b and a[:40] == b[:40]
    assert a == tool_name("server", "a" * 100)


def test_collisions_resolved_in_order() -> None:
    names = [tool_name("s", "a.b"), tool_name("s", "a/b"), tool_name("s", "a b")]
    assert unique_names(names) == ["s__a_b", "s__a_b_2", "s__a_b_3"]
    long = tool_name("s", "x" * 80)
    resolved = unique_names([long, long])
    assert resolved[0] != resolved[1] and all(len(n) <= MAX_NAME for n in resolved)
    assert unique_names(["s__a"], taken=["s__a"]) == ["s__a_2"]


def test_schema_depth_and_size_capped() -> None:
    deep: dict[str, object] = {"type": "string"}
    for _ in range(40):
        deep = {"type": "object", "properties": {"x": deep}}
    capped = cap_schema(deep, max_depth=6)
    assert "{}" in str(capped) and str(capped).count("properties") <= 3
    huge = {
        "type": "object",
        "properties": {f"p{i}": {"description": "d" * 500} for i in range(200)},
    }
    small = cap_schema(huge)
    assert set(small["properties"]) == set(huge["properties"])
    assert all(v == {} for v in small["properties"].values())
    assert cap_schema(["not", "a", "schema"]) == {"type": "object", "properties": {}}
    ok = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    assert cap_schema(ok) == ok


def test_results_rendered_as_text() -> None:
    result = mcp_types.CallToolResult(
        content=[
            mcp_types.TextContent(text="one"),
            mcp_types.ImageContent(data="aGVsbG8=", mime_type="image/jpeg"),
            mcp_types.ResourceLink(uri="file:///x.txt", name="x"),
        ],
        is_error=True,
    )
    out = render_result(result)
    assert out.is_error
    assert out.content == "one\n[image: image/jpeg, 5 bytes]\n[resource: file:///x.txt (x)]"
    structured = mcp_types.CallToolResult(content=[], structured_content={"a": 1})
    assert render_result(structured).content == '{"a": 1}'
    assert render_result(mcp_types.CallToolResult(content=[])).content == "(no output)"
