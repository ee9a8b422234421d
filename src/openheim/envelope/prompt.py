"""The envelope protocol's side of a request: the instructions, and history as plain text.

The instructions (added to the system prompt) explain the fenced block and list every offered
tool with its description and compact argument schema. History is rewritten so a provider with
no notion of tool calls can replay it: an assistant message's calls become the block they came
from, after its text, and tool results become user text (``Result of action t1 (read_file):``),
errors marked ``[error]``. Everything else passes through unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from openheim.envelope.fence import FENCE_TAG
from openheim.envelope.parse import (
    DELEGATE_TOOL,
    ENVELOPE_ERROR,
    INVALID_ACTION,
    SKILL_TOOL,
)
from openheim.envelope.schema import offered_tools
from openheim.formats import safejson
from openheim.messages import ContentBlock, Message, TextBlock, ToolResultBlock, ToolUseBlock
from openheim.providers.base import NamedTool, ToolChoice, ToolSpec

_INTRO = f"""\
# Actions

Tools are not called natively in this conversation. To use them, end your reply with one fenced \
block tagged {FENCE_TAG} that holds a single JSON object, like this:

```{FENCE_TAG}
{{"assistant_text": "<optional short note for the user>", "actions": [{{"type": "tool", \
"id": "t1", "name": "<tool>", "arguments": {{"<argument>": "<value>"}}}}]}}
```

- Write at most one block per reply and put every action of this step in its "actions" array, \
each with its own id (t1, t2, ...).
- "arguments" is a JSON object that follows the tool's schema below. Write valid JSON: double \
quotes, no comments, no trailing commas.
- Stop after the closing ```: the actions run after your reply, and their results come back in \
the next message as "Result of action <id> (<name>):". Never guess a result.
- When you need no action, for instance once the task is done, answer in plain text with no \
block."""

_COMPACT_INTRO = f"""\
# Actions

You cannot see files or run anything yourself. To use a tool, reply with only a block like \
this:
```{FENCE_TAG}
{{"actions": [{{"type": "tool", "id": "t1", "name": "{{example}}", "arguments": {{args}}}}]}}
```
The result comes back in the next message. Then answer in plain text, using only what the \
results say."""
_EXAMPLES = (("list_dir", "{}"), ("read_file", '{"path": "README.md"}'))

_SKILL = '- To load a skill, use the action {"type": "skill", "id": "s1", "name": "<skill name>"}.'
_SUBAGENT = (
    '- To hand a task to a subagent, use the action {"type": "subagent", "id": "d1", '
    '"name": "<agent name>", "task": "<what it should do>"}.'
)
_REQUIRED = "- This reply must contain the block, with at least one action."
_NAMED = "- This reply must contain the block, and its actions may only call the tool {name}."
_SHORTHANDS = ((SKILL_TOOL, _SKILL), (DELEGATE_TOOL, _SUBAGENT))


def protocol_section(
    tools: Sequence[ToolSpec], choice: ToolChoice, *, compact: bool = False
) -> str:
    """The instructions for the offered tools under ``choice`` (only the named tool, if any);
    ``compact`` for a small model: a short intro with an example, a line per tool."""
    offered = offered_tools(tools, choice)
    names = {t.name for t in offered}
    rules = [_compact_intro(offered) if compact else _INTRO]
    if isinstance(choice, NamedTool):
        rules.append(_NAMED.format(name=choice.name))
    else:
        rules.extend(line for tool, line in _SHORTHANDS if tool in names)
        if choice == "required":
            rules.append(_REQUIRED)
    entry = _compact_entry if compact else _tool_entry
    listing = "\n".join(entry(t) for t in offered)
    return "\n".join(rules) + f"\n\n## Tools\n\n{listing}"


def _compact_intro(offered: Sequence[ToolSpec]) -> str:
    """The short intro, its example calling an offered tool."""
    names = [t.name for t in offered]
    name, args = next(((n, a) for n, a in _EXAMPLES if n in names), (names[0], "{}"))
    return _COMPACT_INTRO.replace("{example}", name).replace("{args}", args)


def _compact_entry(spec: ToolSpec) -> str:
    """``- name(required): description``: a small model is offered only the arguments a tool
    requires (``envelope_schema``'s ``required_only``)."""
    required = spec.parameters.get("required") or ()
    return f"- {spec.name}({', '.join(required)}): {spec.description}"


def _tool_entry(spec: ToolSpec) -> str:
    schema = json.dumps(dict(spec.parameters), ensure_ascii=False, separators=(",", ":"))
    return f"- {spec.name}: {spec.description}\n  arguments: {schema}"


def with_protocol(system: str | None, section: str) -> str:
    """The system prompt with the protocol section after it."""
    return f"{system.rstrip()}\n\n{section}" if system else section


def render_history(messages: Sequence[Message]) -> tuple[Message, ...]:
    """The messages with calls and results rewritten as text (see the module docstring)."""
    names: dict[str, str] = {}
    out: list[Message] = []
    for message in messages:
        names.update((call.id, call.name) for call in message.tool_uses)
        if message.tool_uses:
            out.append(_with_block(message))
        elif any(isinstance(b, ToolResultBlock) for b in message.content):
            out.append(_with_result_text(message, names))
        else:
            out.append(message)
    return tuple(out)


def _with_block(message: Message) -> Message:
    kept = [b for b in message.content if not isinstance(b, ToolUseBlock)]
    said = "".join(b.text for b in kept if isinstance(b, TextBlock))
    lead = "\n" if said and not said.endswith("\n") else ""
    block = TextBlock(lead + render_block(message.tool_uses))
    return Message(message.role, (*kept, block))


def _with_result_text(message: Message, names: Mapping[str, str]) -> Message:
    """Results become text; adjacent results share one text block."""
    content: list[ContentBlock] = []
    results: list[str] = []
    for block in message.content:
        if isinstance(block, ToolResultBlock):
            results.append(result_text(block, names.get(block.tool_use_id, "unknown")))
            continue
        if results:
            content.append(TextBlock("\n\n".join(results)))
            results = []
        content.append(block)
    if results:
        content.append(TextBlock("\n\n".join(results)))
    return Message(message.role, tuple(content))


def result_text(result: ToolResultBlock, name: str) -> str:
    """How the model reads one result."""
    mark = " [error]" if result.is_error else ""
    return f"Result of action {result.tool_use_id} ({name}){mark}:\n{result.content}"


def render_block(calls: Sequence[ToolUseBlock]) -> str:
    """The fenced block the calls came from (an unreadable block replays verbatim)."""
    for call in calls:
        if call.name == ENVELOPE_ERROR and call.raw_arguments is not None:
            return call.raw_arguments
    envelope = {"actions": [_action(call) for call in calls]}
    return f"```{FENCE_TAG}\n{json.dumps(envelope, ensure_ascii=False)}\n```"


def _action(call: ToolUseBlock) -> Any:
    """The action JSON that yields ``call`` when parsed."""
    args = call.arguments
    if call.name == INVALID_ACTION and call.raw_arguments is not None:
        return _decoded(call.raw_arguments)
    if call.name == SKILL_TOOL and set(args) == {"name"}:
        return {"type": "skill", "id": call.id, "name": args["name"]}
    if call.name == DELEGATE_TOOL and set(args) == {"agent", "task"}:
        return {"type": "subagent", "id": call.id, "name": args["agent"], "task": args["task"]}
    arguments = _decoded(call.raw_arguments) if call.raw_arguments is not None else dict(args)
    return {"type": "tool", "id": call.id, "name": call.name, "arguments": arguments}


def _decoded(raw: str) -> Any:
    """The JSON value of ``raw``, or ``raw`` itself as a string when it is not JSON."""
    try:
        return safejson.loads(raw)
    except ValueError:
        return raw
