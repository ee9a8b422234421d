"""``@tool`` docstring parsing: argument descriptions stop at the next section."""

from __future__ import annotations

from openheim.tools.base import ToolContext
from openheim.tools.decorator import tool


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
