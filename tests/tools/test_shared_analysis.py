"""Tools made of one function (a session's closures) share what its signature says, and call
their own closures; a function remade with other defaults or texts gets its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from openheim.memory import MemoryStore, memory_tools
from openheim.tools.base import ToolContext
from openheim.tools.decorator import _ANALYSES, FunctionTool, tool
from openheim.tools.sandbox import PathSandbox


def counter(start: int, *, description: str | None = None) -> FunctionTool:
    """A tool whose ``n`` defaults to ``start``."""

    @tool(read_only=True, description=description)
    def count(n: int = start) -> str:
        """Count to n.

        Args:
            n: Where to stop.
        """
        return f"{start}:{n}"

    return count


def test_tools_of_one_function_share_schema_model_and_capabilities(tmp_path: Path) -> None:
    one, two = MemoryStore(tmp_path / "one.db"), MemoryStore(tmp_path / "two.db")
    try:
        first, second = memory_tools(one), memory_tools(two)
        for a, b in zip(first, second, strict=True):
            assert isinstance(a, FunctionTool) and isinstance(b, FunctionTool)
            assert a is not b and a.fn is not b.fn
            assert a.parameters is b.parameters
            assert a.args_model is b.args_model
            assert a.capabilities is b.capabilities
            assert not hasattr(a, "__dict__")
    finally:
        one.close()
        two.close()


async def test_each_tool_calls_its_own_closure(tmp_path: Path) -> None:
    three, five = counter(3), counter(3)
    assert three.parameters is five.parameters
    context = ToolContext(PathSandbox(tmp_path), tmp_path)
    output = await three.call(three.parse({"n": 4}), context)
    assert output.content == "3:4"


async def test_other_defaults_or_texts_get_their_own_analysis(tmp_path: Path) -> None:
    three, five = counter(3), counter(5)
    assert three.parse({}).n == 3 and five.parse({}).n == 5
    assert three.parameters["properties"]["n"] == five.parameters["properties"]["n"]
    context = ToolContext(PathSandbox(tmp_path), tmp_path)
    assert (await five.call(five.parse({}), context)).content == "5:5"
    renamed = counter(3, description="Count up.")
    assert (renamed.description, three.description) == ("Count up.", "Count to n.")


def test_a_function_remade_with_ever_new_defaults_keeps_few_analyses() -> None:
    made = [counter(1000 + n) for n in range(30)]
    assert [t.parse({}).n for t in made[-2:]] == [1028, 1029]
    assert len(_ANALYSES[made[0].fn.__code__]) <= 8


_EVALUATED = '''
def make(kind):
    def pick(value: kind) -> str:
        """Pick a value."""
        return str(value)
    return pick
'''


def test_evaluated_annotations_that_differ_get_their_own_analysis() -> None:
    """A function whose annotations are evaluated when it is made (no ``from __future__
    import annotations``) may be annotated differently each time."""
    namespace: dict[str, Any] = {}
    exec(compile(_EVALUATED, "<evaluated>", "exec", dont_inherit=True), namespace)
    whole, text = tool(namespace["make"](int)), tool(namespace["make"](str))
    assert whole.parameters["properties"]["value"]["type"] == "integer"
    assert text.parameters["properties"]["value"]["type"] == "string"
    assert tool(namespace["make"](int)).parameters is whole.parameters
