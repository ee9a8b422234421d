"""Reading a reply in the envelope protocol: text, and at most one block of actions.

``parse_reply`` turns the reply text into what the assistant message holds:

* no block: the text, a final answer;
* one valid block: the text around it, its ``assistant_text``, and one ``ToolUseBlock`` per
  action (``skill`` actions call ``load_skill``, ``subagent`` actions call ``delegate_task``);
  actions that cannot run (unknown tool, no name, arguments that are not an object, a skill or
  subagent where none is available) carry an ``error`` the loop sends back as their result;
* a block that cannot be read (two or more blocks, empty, invalid JSON, not an object, no
  actions array): one ``ToolUseBlock`` named ``ENVELOPE_ERROR`` whose error says what was wrong
  and how to write a valid block, so the model gets one clear error result.

Actions without an id get one; a later action that reuses an id is dropped with a warning. Yips'
legacy ``tool_calls`` / ``skill_calls`` / ``subagent_calls`` arrays are read as actions too.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from openheim.envelope.fence import FENCE_TAG, Block, Text, split_text
from openheim.messages import ContentBlock, TextBlock, ToolUseBlock

SKILL_TOOL = "load_skill"
DELEGATE_TOOL = "delegate_task"
ENVELOPE_ERROR = "invalid_envelope"
"""Name of the call that reports an unreadable block; its ``raw_arguments`` is the block text."""
ENVELOPE_ERROR_ID = "envelope"
INVALID_ACTION = "invalid_action"
"""Name of a call whose action had no usable name; ``raw_arguments`` is the action's JSON."""

HOW_TO = (
    f'Write at most one block per reply: a line "```{FENCE_TAG}", then one JSON object such as '
    '{"actions": [{"type": "tool", "id": "t1", "name": "<tool>", "arguments": {"<argument>": '
    '"<value>"}}]}, then a line "```". Use double quotes, no comments and no trailing commas, '
    'and put every action of this step in that one "actions" array.'
)

_LEGACY_KEYS = {"tool_calls": "tool", "skill_calls": "skill", "subagent_calls": "subagent"}


@dataclass(frozen=True, slots=True)
class ParsedReply:
    """A reply read in the envelope protocol."""

    text: tuple[str, ...]
    """The text outside the blocks, piece by piece, exactly as it streams."""
    assistant_text: str
    """The block's ``assistant_text``, with a separator from the text before it ("" if none)."""
    calls: tuple[ToolUseBlock, ...]
    warnings: tuple[str, ...] = ()

    @property
    def visible_text(self) -> str:
        """Everything the user sees, as streamed: the text outside blocks, then the note."""
        return "".join(self.text) + self.assistant_text

    @property
    def content(self) -> tuple[ContentBlock, ...]:
        """The visible text as one block (none if blank), then the calls."""
        text = self.visible_text
        return ((TextBlock(text),) if text.strip() else ()) + self.calls


def parse_reply(text: str, tools: Sequence[str], *, truncated: bool = False) -> ParsedReply:
    """Read ``text`` given the names of the tools the model may call; ``truncated`` says the reply
    hit the output token limit (it sharpens the error for a block cut off before its end)."""
    segments = split_text(text)
    outside = tuple(s.text for s in segments if isinstance(s, Text))
    blocks = [s for s in segments if isinstance(s, Block)]
    if not blocks:
        return ParsedReply(outside, "", ())
    if len(blocks) > 1:
        problem = f"your reply has {len(blocks)} action blocks, but only one is allowed"
        return ParsedReply(outside, "", (envelope_error(blocks, problem),))
    envelope = read_envelope(blocks[0], truncated)
    if isinstance(envelope, str):
        return ParsedReply(outside, "", (envelope_error(blocks, envelope),))
    entries = action_entries(envelope)
    if isinstance(entries, str):
        return ParsedReply(outside, "", (envelope_error(blocks, entries),))
    note = envelope.get("assistant_text")
    note = _separated("".join(outside), note) if isinstance(note, str) and note.strip() else ""
    calls, warnings = read_actions(entries, tools)
    return ParsedReply(outside, note, calls, warnings)


def envelope_error(blocks: Sequence[Block], problem: str) -> ToolUseBlock:
    """The one call that reports unreadable blocks back to the model."""
    raw = "\n".join(b.raw for b in blocks)
    message = f"{problem}, so nothing was run. {HOW_TO}"
    return ToolUseBlock(ENVELOPE_ERROR_ID, ENVELOPE_ERROR, {}, raw_arguments=raw, error=message)


def read_envelope(block: Block, truncated: bool = False) -> dict[str, Any] | str:
    """The block's JSON object, or what is wrong with it."""
    body = block.body.strip()
    if not block.closed:  # tolerate a closing fence glued to the JSON
        body = body.removesuffix("```").rstrip()
    if not body:
        return f"the {block.tag} block is empty"
    try:
        value = json.loads(body, strict=False)  # raw newlines in strings are common
    except json.JSONDecodeError as err:
        problem = (
            f"the {block.tag} block is not valid JSON "
            f"({err.msg} at line {err.lineno}, column {err.colno})"
        )
        if not block.closed:
            problem += ", and it has no closing ``` line"
        if truncated:
            problem += "; the reply was cut off at the output token limit, so keep it shorter"
        return problem
    if not isinstance(value, dict):
        return f"the {block.tag} block holds a JSON {json_type(value)}, not an object"
    return value


def json_type(value: object) -> str:
    """How JSON would name the type of a decoded value."""
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number")


def _separated(before: str, note: str) -> str:
    """``note`` a paragraph apart from the text before it, when there is such text."""
    if not before.strip():
        return note
    newlines = len(before) - len(before.rstrip("\n"))
    return "\n" * max(0, 2 - newlines) + note


def read_actions(
    entries: Sequence[tuple[str, Any]], tools: Sequence[str]
) -> tuple[tuple[ToolUseBlock, ...], tuple[str, ...]]:
    """One call per action entry, and warnings about the duplicates dropped."""
    ids = _assign_ids([entry for _, entry in entries])
    calls: list[ToolUseBlock] = []
    warnings: list[str] = []
    seen: set[str] = set()
    for (kind, entry), call_id in zip(entries, ids, strict=True):
        if call_id in seen:
            warnings.append(f"dropped a second action with id {call_id!r}: ids must be unique")
            continue
        seen.add(call_id)
        calls.append(_action_call(call_id, kind, entry, tools))
    return tuple(calls), tuple(warnings)


def action_entries(envelope: Mapping[str, Any]) -> list[tuple[str, Any]] | str:
    """The actions as (default type, entry) pairs, or what is wrong with the envelope."""
    keys = [k for k in ("actions", *_LEGACY_KEYS) if k in envelope]
    if not keys and "assistant_text" not in envelope:
        return 'the block has no "actions" array'
    entries: list[tuple[str, Any]] = []
    for key in keys:
        value = envelope[key]
        if not isinstance(value, list):
            return f'"{key}" must be an array of action objects, not a {json_type(value)}'
        entries.extend((_LEGACY_KEYS.get(key, "tool"), entry) for entry in value)
    return entries


def _assign_ids(entries: Sequence[Any]) -> list[str]:
    """Each entry's id as given (strings or numbers), or a fresh ``tN`` no entry uses."""
    given = [_given_id(e) for e in entries]
    taken = {i for i in given if i is not None}
    counter = 0
    out: list[str] = []
    for call_id in given:
        while call_id is None:
            counter += 1
            candidate = f"t{counter}"
            call_id = candidate if candidate not in taken else None
        taken.add(call_id)
        out.append(call_id)
    return out


def _given_id(entry: Any) -> str | None:
    value = entry.get("id") if isinstance(entry, dict) else None
    if isinstance(value, bool) or not isinstance(value, str | int) or value == "":
        return None
    return str(value)


def _action_call(call_id: str, kind: str, entry: Any, tools: Sequence[str]) -> ToolUseBlock:
    if not isinstance(entry, dict):
        return _invalid(call_id, entry, f"action {call_id} is a JSON {json_type(entry)}")
    action_type = entry.get("type", kind)
    reader = _READERS.get(action_type) if isinstance(action_type, str) else None
    if reader is None:
        problem = f'action {call_id} has type {action_type!r}; use "tool", "skill" or "subagent"'
        return _invalid(call_id, entry, problem)
    return reader(call_id, entry, tools)


def _invalid(call_id: str, entry: Any, problem: str) -> ToolUseBlock:
    """A call for an action that names nothing runnable; it replays as the action's JSON."""
    raw = json.dumps(entry, ensure_ascii=False)
    message = f"{problem}, so it was not run. {_ACTION_SHAPES}"
    return ToolUseBlock(call_id, INVALID_ACTION, {}, raw_arguments=raw, error=message)


_ACTION_SHAPES = (
    'An action is {"type": "tool", "id": "t1", "name": "<tool>", "arguments": {...}}, '
    '{"type": "skill", "id": "s1", "name": "<skill>"} or '
    '{"type": "subagent", "id": "d1", "name": "<agent>", "task": "<task>"}.'
)


def _text_field(entry: Mapping[str, Any], *keys: str) -> str | None:
    """The first of ``keys`` that holds a non-blank string."""
    for key in keys:
        value = entry.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


def _tool_action(call_id: str, entry: Mapping[str, Any], tools: Sequence[str]) -> ToolUseBlock:
    name = _text_field(entry, "name")
    if name is None:
        return _invalid(call_id, entry, f'tool action {call_id} has no "name"')
    arguments = entry.get("arguments", {})
    if not isinstance(arguments, dict):
        problem = (
            f"the arguments of action {call_id} ({name}) are a JSON {json_type(arguments)}; "
            "send them as one JSON object matching the tool's schema"
        )
        raw = json.dumps(arguments, ensure_ascii=False)
        return ToolUseBlock(call_id, name, {}, raw_arguments=raw, error=problem)
    if name not in tools:
        available = ", ".join(tools) or "none"
        problem = f"unknown tool {name!r} in action {call_id}; available tools: {available}"
        return ToolUseBlock(call_id, name, arguments, error=problem)
    return ToolUseBlock(call_id, name, arguments)


def _skill_action(call_id: str, entry: Mapping[str, Any], tools: Sequence[str]) -> ToolUseBlock:
    skill = _text_field(entry, "name")
    if skill is None:
        return _invalid(call_id, entry, f'skill action {call_id} has no "name" of a skill')
    error = None
    if SKILL_TOOL not in tools:
        error = f"skills are not available here, so skill {skill!r} was not loaded; use the tools"
    return ToolUseBlock(call_id, SKILL_TOOL, {"name": skill}, error=error)


def _subagent_action(call_id: str, entry: Mapping[str, Any], tools: Sequence[str]) -> ToolUseBlock:
    agent = _text_field(entry, "name", "agent")
    task = _text_field(entry, "task")
    if agent is None or task is None:
        problem = f'subagent action {call_id} needs a "name" (the agent) and a "task"'
        return _invalid(call_id, entry, problem)
    error = None
    if DELEGATE_TOOL not in tools:
        error = f"subagents are not available here, so the task for {agent!r} was not delegated"
    return ToolUseBlock(call_id, DELEGATE_TOOL, {"agent": agent, "task": task}, error=error)


_READERS: dict[str, Callable[[str, Mapping[str, Any], Sequence[str]], ToolUseBlock]] = {
    "tool": _tool_action,
    "skill": _skill_action,
    "subagent": _subagent_action,
}
