"""``@tool`` docstring parsing: argument descriptions stop at the next section."""

from __future__ import annotations

from openheim.tools.base import ToolContext
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


def _made(default: int, tags: tuple[str, ...] = ()) -> FunctionTool:
    """A tool made anew, as a session makes its closures over its own state."""

    @tool
    def pick(limit: int = default) -> str:
        """Pick some."""
        return str((limit, tags))

    return pick


def test_a_function_made_again_reuses_its_argument_model() -> None:
    first, second = _made(3), _made(3)
    assert first is not second
    assert first.args_model is second.args_model
    assert first.parameters is second.parameters


def test_a_different_default_gets_its_own_model() -> None:
    three, four, true = _made(3), _made(4), _made(True)
    assert three.args_model is not four.args_model
    assert three.parse({}).limit == 3
    assert four.parse({}).limit == 4
    assert true.parse({}).limit is True  # 1 == True: the default's type is part of the key
