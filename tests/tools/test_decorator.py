"""``@tool`` docstring parsing: argument descriptions stop at the next section."""

from __future__ import annotations

from pathlib import Path

from openheim.formats.typed import json_schema
from openheim.memory import MemoryStore, memory_tools
from openheim.tools.base import ToolContext
from openheim.tools.builtin import builtin_tools
from openheim.tools.decorator import FunctionTool, tool


@tool
def count(ctx: ToolContext, path: str, limit: int = 10, mode: str = "words") -> str:
    """Count the words in a file.

    Longer explanation that is not part of the description.

    Args:
        path: File to count, relative to the working directory.
            Continued here, default: none.
        limit (int): Most words to count.
        mode: What to count.

    Returns:
        count: the number of words.
        mode: never an argument description.
    """
    return str(ctx.path(path))


def test_argument_descriptions_and_continuations() -> None:
    props = count.parameters["properties"]
    assert count.description == "Count the words in a file."
    assert props["path"]["description"] == (
        "File to count, relative to the working directory. Continued here, default: none."
    )
    assert props["limit"]["description"] == "Most words to count."
    assert props["mode"]["description"] == "What to count."
    assert set(props) == {"path", "limit", "mode"}


def test_the_schema_comes_without_the_argument_model_and_agrees_with_it(tmp_path: Path) -> None:
    """The schema is read from the signature; the dataclass is made only when arguments are
    parsed, and its own schema is the same, for every function tool openheim ships."""
    memory = MemoryStore(tmp_path / "memory.db")
    tools = [*builtin_tools(allow_shell=False), *memory_tools(memory)]
    functions = [t for t in tools if isinstance(t, FunctionTool)]
    assert len(functions) >= 8
    fresh = memory_tools(memory)[0]
    assert isinstance(fresh, FunctionTool)
    assert fresh.parameters["required"] == ["text"]
    made = [fresh._model is not None]
    assert fresh.parse({"text": "a note"}).text == "a note"
    made.append(fresh._model is not None)
    assert made == [False, True]
    for function in functions:
        assert function.parameters == json_schema(function.args_model), function.name
    memory.close()
