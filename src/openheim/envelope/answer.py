"""The turn a small model answers from: its request and the results, told as one message.

When a small model must answer from tool results (no tools are offered any more), the replayed
exchange (its request, its action block, ``Result of action t1 (list_dir):``) invites it to
write another block or to drift into made-up text. So the current turn is told again as one
user message: each result framed in plain words (``The folder . holds 3 entries: a.txt, b.md,
src/.``, ``The file README.md says:``, ``The tool search returned:``), then the request, to be
answered in one sentence. Earlier turns stay as they were. A history that does not end with
results is left alone.

A listing is told as one sentence, not one name a line: given a column of names, a 135M model
copies it and then goes on writing names that look like them, or the list again, until its
output limit; given a sentence, it answers with that sentence and stops.

When the results are one listing with entries, the answer is also started for the model: the
turn ends with an assistant message holding the listing's opening (``The folder . holds 12
entries: ``), which the provider continues and which is part of the reply. Asked for a sentence
of its own, the model named 4 of 12 entries and wrote that sentence three times; continuing the
opening, it copies the list (11 of 12, 36 of 50) and stops. The listing's names go with it
(``answer_items``): a provider that can constrain decoding holds the continuation to them, so
a name that is not in the folder cannot come up (unconstrained, with 30 entries it did).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from openheim.messages import Message, ToolResultBlock, ToolUseBlock

ANSWER = "Using only this result, answer in one sentence: {request}"
_FRAMES = {"read_file": "The file {path} says:"}
_FALLBACK = "The tool {name} returned:"
_FAILED = "The tool {name} failed:"


@dataclass(frozen=True)
class _Turn:
    """The last turn: where its request is, its calls by id, and their results."""

    start: int
    calls: Mapping[str, ToolUseBlock]
    results: Sequence[ToolResultBlock]


def answer_turn(messages: Sequence[Message]) -> tuple[Message, ...] | None:
    """The messages with their last turn told as one message (see the module docstring), or
    None when they do not end with tool results after a request."""
    turn = _last_turn(messages)
    if turn is None:
        return None
    told = "\n\n".join(_told(result, turn.calls) for result in turn.results)
    request = messages[turn.start].text.strip()
    said = Message.user(f"{told}\n\n{ANSWER.format(request=request)}")
    opening = _opening(turn)
    return (*messages[: turn.start], said, *((Message.assistant(opening),) if opening else ()))


def answer_items(messages: Sequence[Message]) -> tuple[str, ...]:
    """The entries the answer that ``answer_turn`` starts may go on with: the listing's names
    when it starts one (see ``ModelRequest.answer_items``), else ()."""
    turn = _last_turn(messages)
    listed = _listed(turn) if turn is not None else None
    return tuple(listed[1]) if listed is not None else ()


def answer_opening(messages: Sequence[Message]) -> str:
    """The start of the answer that ``answer_turn``'s messages end with ("" when none)."""
    return messages[-1].text if messages and messages[-1].role == "assistant" else ""


def _last_turn(messages: Sequence[Message]) -> _Turn | None:
    """The last turn, or None when the messages do not end with tool results after a request."""
    if not messages or not _has_results(messages[-1]):
        return None
    start = next((i for i in range(len(messages) - 1, -1, -1) if _is_request(messages[i])), None)
    if start is None:
        return None
    calls = {c.id: c for m in messages[start:] for c in m.tool_uses}
    results = [b for m in messages[start:] for b in m.content if isinstance(b, ToolResultBlock)]
    return _Turn(start, calls, results)


def _listed(turn: _Turn) -> tuple[str, list[str]] | None:
    """The folder and its entries when the turn's only result is a listing with entries."""
    if len(turn.results) != 1 or turn.results[0].is_error:
        return None
    call = turn.calls.get(turn.results[0].tool_use_id)
    if call is None or call.name != "list_dir":
        return None
    names, _ = _entries(turn.results[0].content)
    return (call.arguments.get("path") or ".", names) if names else None


def _opening(turn: _Turn) -> str:
    """The listing's opening when the only result is a listing with entries, else ""."""
    listed = _listed(turn)
    return f"{_holds(*listed)}: " if listed is not None else ""


def _told(result: ToolResultBlock, calls: Mapping[str, ToolUseBlock]) -> str:
    call = calls.get(result.tool_use_id)
    name = call.name if call is not None else "unknown"
    path = call.arguments.get("path", ".") if call is not None else "."
    if result.is_error:
        frame = _FAILED.format(name=name)
    elif name == "list_dir":
        return _listing(path or ".", result.content)
    else:
        frame = _FRAMES.get(name, _FALLBACK).format(path=path or ".", name=name)
    return f"{frame}\n{result.content.strip()}"


def _listing(path: str, content: str) -> str:
    """A ``list_dir`` result as one sentence (see the module docstring); its notes (``[...]``,
    such as entries left out) follow as they were."""
    names, notes = _entries(content)
    if not names:
        return f"The folder {path} is empty."
    return f"{_holds(path, names)}: {', '.join(names)}.{notes}"


def _entries(content: str) -> tuple[list[str], str]:
    """A ``list_dir`` result's names, and its notes (``[...]`` lines) as they were."""
    lines = [line for line in content.strip().splitlines() if line.strip()]
    names = [line for line in lines if not line.startswith("[")]
    return names, "".join(f"\n{line}" for line in lines if line.startswith("["))


def _holds(path: str, names: Sequence[str]) -> str:
    count = "1 entry" if len(names) == 1 else f"{len(names)} entries"
    return f"The folder {path} holds {count}"


def _has_results(message: Message) -> bool:
    return any(isinstance(b, ToolResultBlock) for b in message.content)


def _is_request(message: Message) -> bool:
    """A message the user wrote (not tool results, which also travel as user messages)."""
    return message.role == "user" and bool(message.text) and not _has_results(message)
