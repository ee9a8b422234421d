"""The demo agent ``FakeLLMServer --demo`` plays: list the work directory, then summarise it."""

from __future__ import annotations

from openheim.testing.fake_replies import FakeReply, FakeToolCall, RecordedRequest


def demo_reply(request: RecordedRequest) -> FakeReply:
    """The demo agent: list the work directory, then summarise what the tool returned."""
    result = request.last_tool_result
    if result is None:
        return FakeReply(
            text="Let me look at the work directory.",
            tool_calls=[FakeToolCall("list_dir", {"path": "."})],
        )
    return FakeReply(text=summarise_listing(result))


def summarise_listing(output: str) -> str:
    """One sentence about a ``list_dir`` result: how many entries, and their names."""
    if output.startswith("Error:"):
        return f"The list_dir tool failed: {output.removeprefix('Error:').strip()}"
    entries = [line.strip() for line in output.splitlines() if line.strip()]
    if not entries:
        return "The work directory is empty."
    noun = "entry" if len(entries) == 1 else "entries"
    return f"The work directory contains {len(entries)} {noun}: {', '.join(entries)}."
