"""The approval vocabulary every surface renders: the choices a person has, the answer each one
gives the gate (with the reason the model is told), and the question as a person reads it.

A surface draws these (keys in a terminal, buttons on the web page, ACP permission options, an
MCP elicitation form); it never defines its own. The choices are allow once, allow always,
reject and reject always; a rejection may carry the person's own words for the model. The
question has a plain title ("Allow openheim to write notes.txt?"), why the policy asks (in
plain words, to show below the title), the risks found, the arguments with secrets redacted,
and the diff an edit would write.

Every surface ends a run that had calls denied with ``closing_warning``, so an answer
describing refused work is flagged; the surfaces with no one to ask refuse through
``runtime.headless``, which adds how to let such calls run.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openheim.approval import Allow, ApprovalRequest, Ask, Deny
from openheim.files.hostile import read_regular
from openheim.redaction.secrets import SecretPolicy, redact, redact_data
from openheim.runtime.titles import absolute_path, tool_action, tool_title

MAX_SHOWN = 4000
"""Characters of a call's arguments or diff a question shows; more is cut and ends with "…"."""
MAX_BEFORE = 1 << 20
"""Bytes of a file's present text read to show the diff of an edit; a bigger file has none."""
MAX_REASON = 500
"""Characters of a person's own reason passed on to the model."""


@dataclass(frozen=True, slots=True)
class Choice:
    """One answer a person can give: ``id`` on the wire, ``key`` to press, ``label`` to read."""

    id: str
    key: str
    label: str
    allow: bool
    always: bool
    told: str = ""
    """What the model is told when the call is refused this way (empty for allowing)."""


ONCE = Choice("once", "y", "allow once", allow=True, always=False)
ALWAYS = Choice("always", "a", "allow always", allow=True, always=True)
REJECT = Choice(
    "reject", "n", "reject", allow=False, always=False, told="the user rejected this tool call"
)
REJECT_ALWAYS = Choice(
    "reject_always",
    "r",
    "reject always",
    allow=False,
    always=True,
    told="the user rejected this tool call and will reject calls like it for the rest of "
    "the session",
)
CHOICES: tuple[Choice, ...] = (ONCE, ALWAYS, REJECT, REJECT_ALWAYS)
"""Every choice, in the order a question offers them."""
BY_ID: Mapping[str, Choice] = {choice.id: choice for choice in CHOICES}
BY_KEY: Mapping[str, Choice] = {choice.key: choice for choice in CHOICES}
_TYPED: Mapping[str, Choice] = {
    **BY_KEY,
    **BY_ID,
    **{choice.label: choice for choice in CHOICES},
    "yes": ONCE,
    "no": REJECT,
}
"""What a person may type for each choice: its key, id or label, or yes / no."""


def answer(choice: Choice, reason: str = "") -> Allow | Deny:
    """The gate's answer for ``choice``; a rejection passes ``reason`` (the person's own words,
    on one line, redacted and cut to ``MAX_REASON``) on to the model."""
    if choice.allow:
        return Allow(always=choice.always)
    said = redact(" ".join(reason.split()))[:MAX_REASON]
    told = f"{choice.told}, saying: {said}" if said else choice.told
    return Deny(told, always=choice.always)


def choice_named(name: str) -> Choice:
    """The choice with the wire id ``name``; ValueError naming the valid ones otherwise."""
    found = BY_ID.get(name)
    if found is None:
        valid = ", ".join(BY_ID)
        raise ValueError(f"unknown choice {name[:40]!r}: answer one of {valid}")
    return found


def typed_answer(line: str) -> Allow | Deny | None:
    """The answer a person typed: a choice (``y``, ``always``, ``reject always`` ...) and, after
    a rejection, their reason (``n use notes.md instead``); an empty line rejects; None when
    it is not an answer."""
    text = line.strip()
    words = text.split()
    if not words:
        return answer(REJECT)
    for count in (2, 1):
        choice = _TYPED.get(" ".join(words[:count]).lower()) if len(words) >= count else None
        if choice is None:
            continue
        reason = text.split(maxsplit=count)[count] if len(words) > count else ""
        return None if choice.allow and reason else answer(choice, reason)
    return None


TYPED_HINT = (
    "y (allow once), a (allow always), n (reject), r (reject always); after n or r, a reason"
)
"""How to answer in a terminal, for its prompt line and when a typed answer is not one."""


@dataclass(frozen=True, slots=True)
class Question:
    """An approval question as every surface shows it."""

    title: str
    """Plain words: "Allow openheim to write notes.txt?" (a subagent's names it first)."""
    why: str
    """Why the policy asks, one line in plain words; empty when ``reasons`` say it (risks)."""
    reasons: tuple[str, ...]
    """The risks that made the gate ask, redacted; empty when only the mode asked."""
    arguments: str
    """The call's arguments as indented JSON, redacted and cut to ``MAX_SHOWN``."""
    diff: str
    """What the call would write (a unified diff), redacted and cut; empty for other calls."""


def question(request: ApprovalRequest, ask: Ask) -> Question:
    """The question a person answers about ``request``."""
    shown = json.dumps(redact_data(dict(request.arguments)), indent=2, ensure_ascii=False)
    return Question(
        title=title(request, ask),
        why=why_asked(ask),
        reasons=tuple(redact(reason) for reason in ask.reasons or request.reasons),
        arguments=clip(shown),
        diff=clip(redact(ask.detail or edit_diff(request))),
    )


def title(request: ApprovalRequest, ask: Ask) -> str:
    """ "Allow openheim to write notes.txt?", or "Allow openheim to use github: create_issue?"
    when the arguments say nothing plainer: a person reads what the agent would do, not a tool's
    internal name; a subagent's question starts with its label ("[subagent helper]")."""
    cwd = Path(request.cwd or ".")
    action = tool_action(request.tool, request.arguments, cwd)
    what = (
        f"{action[:1].lower()}{action[1:]}"
        if action
        else f"use {tool_title(request.tool, request.arguments, cwd)}"
    )
    label = ask.prompt.partition("]")[0] + "]" if ask.prompt.startswith(SUBAGENT) else ""
    return redact(f"{label} Allow openheim to {what}?".strip())


MODE_ASKS = "asked because the approval mode is ask and no permission rule allows this call"
"""Why a call is asked when only the mode asks (``approval = "auto"`` would run it)."""
EDITS_ASKS = (
    "asked because the approval mode is auto for edits, which runs only file edits unasked, "
    "and no permission rule allows this call"
)
"""The same in the mode ``edits``, where only a file edit inside the work dir runs unasked."""


def why_asked(ask: Ask) -> str:
    """Why the policy asks, in plain words: nothing when risks were found (they are shown),
    ``MODE_ASKS`` (``EDITS_ASKS`` in the mode edits) when only the mode asks, else the gate's
    own words (a hook's), redacted, on one line and without a subagent's label."""
    if ask.reasons:
        return ""
    if ask.auto_allows:
        return EDITS_ASKS if ask.mode == "edits" else MODE_ASKS
    prompt = ask.prompt.partition("] ")[2] if ask.prompt.startswith(SUBAGENT) else ask.prompt
    return clip(redact(" ".join(prompt.split())))


SUBAGENT = "[subagent "
"""How the prompt of a subagent's question starts (``agents.delegate.labelled_resolver``)."""


def clip(text: str) -> str:
    """``text`` cut to ``MAX_SHOWN`` characters, ending with "…" when cut."""
    return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN] + "\n…"


def edit_diff(request: ApprovalRequest) -> str:
    """A unified diff of what a write_file / edit_file call would change, else ''. The file's
    present text is read only where ``read_file`` could read it (see ``_before``); where not,
    there is no diff."""
    args = request.arguments
    raw = args.get("path")
    if request.tool not in ("write_file", "edit_file") or not isinstance(raw, str):
        return ""
    before = _before(raw, Path(request.cwd or "."))
    after = None if before is None else _after(request.tool, before, args)
    if before is None or after is None:
        return ""
    return unified(before, after, raw)


def unified(before: str, after: str, name: str) -> str:
    """A unified diff (three lines of context) from ``before`` to ``after`` of file ``name``."""
    import difflib  # only when a diff is shown: ``run`` imports no more than it uses

    diff = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{name}", f"b/{name}"
    )
    return "".join(diff)


def _before(raw: str, cwd: Path) -> str | None:
    """The text of the file ``raw`` names ('' when there is none), or None when it may not be
    shown: outside ``cwd`` (by ``..``, an absolute path or a symlinked folder), a secret by the
    default deny-read patterns, a symlink, a file with another name (a hard link), not a
    regular file, or over ``MAX_BEFORE``. The question goes to editors and web clients, so it
    must not show what the model's tools would refuse to read."""
    path, base = absolute_path(raw, cwd), absolute_path(".", cwd)
    if not path.is_relative_to(base) or SecretPolicy.from_config().match(path, raw):
        return None
    try:
        if not path.parent.resolve().is_relative_to(base.resolve()):
            return None
        data = read_regular(path, MAX_BEFORE, follow_symlinks=False, check=_one_name)
    except FileNotFoundError:
        return ""
    except (OSError, ValueError):
        return None
    return data.decode("utf-8", "replace")


def _one_name(info: os.stat_result) -> None:
    if info.st_nlink > 1:
        raise ValueError("it has more than one name (a hard link)")


def _after(tool: str, before: str, args: Mapping[str, Any]) -> str | None:
    if tool == "write_file":
        content = args.get("content")
        return content if isinstance(content, str) else None
    old, new = args.get("old_string"), args.get("new_string")
    if not isinstance(old, str) or not isinstance(new, str) or old not in before:
        return None
    return before.replace(old, new) if args.get("replace_all") else before.replace(old, new, 1)


def closing_warning(denied: int) -> str:
    """The line that ends a run with ``denied`` calls refused (empty when none was): its answer
    may describe work that never happened, such as a file it says it wrote."""
    if not denied:
        return ""
    calls = "1 tool call was" if denied == 1 else f"{denied} tool calls were"
    return f"{calls} denied; the answer above may describe work that was refused"
