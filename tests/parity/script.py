"""The parity script: the inputs a person types on every surface, what each must do, and how
what reached the model (or the refusal a surface answered with) is reduced to one comparable
outcome.

A step's outcome is ``("sent", content)`` (the last user message the model got),
``("model", name)`` (the model the next request went to), ``("refused", key)`` (the surface
refused and said so, ``key`` being the words every surface's refusal contains) or, for the
refused write, ``("denied", how)`` with ``how`` the kind of refusal the model was told.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from openheim.runtime.approvals import REJECT
from openheim.testing import FakeReply, FakeToolCall
from openheim.testing.fake_replies import RecordedRequest
from tests.prompt_commands import SENT, TYPED
from tests.prompt_commands import install as install_prompts

MODELS = ("fake-model", "fake-large")
"""What the provider (and the gateway's ``models``) offers."""
SECRET_WORD = "pineapple"
WRITE = "write out.txt"
DENIED = "Error: denied: "
"""How the tool result of a denied call starts."""
NO_ONE = "and there is no one to ask in this session"
"""The one line (``approval.unanswered``) a headless surface tells the model first."""

Outcome = tuple[str, str]


@dataclass(frozen=True)
class Step:
    """One step of the script: the lines typed, in order (a ``/models NAME`` line is the
    surface's own model switch where it has one), and what the step's outcome must be."""

    name: str
    lines: tuple[str, ...]
    expected: Outcome


LINK = "it is a hard link (2 names)"
"""Why ``runtime.attach`` refuses a hard-linked file."""
ATTACHED = f'read @notes.txt\n\n<file path="notes.txt">\nthe word is {SECRET_WORD}\n</file>'
"""The prompt ``read @notes.txt`` sends (``runtime.attach``)."""

UNLISTED = "unknown model 'fake-huge' for provider 'fake' (known: "
"""How the refusal of a switch to a model not offered starts on every surface
(``runtime.models``); the list of every offered model follows (the one in use first)."""

STEPS: tuple[Step, ...] = (
    Step("skill", (TYPED[0],), ("sent", SENT[0])),
    Step("template", (TYPED[1],), ("sent", SENT[1])),
    Step("mention", ("read @notes.txt",), ("sent", ATTACHED)),
    Step("hard-link", ("read @linked.txt",), ("refused", f"refused to attach @linked.txt: {LINK}")),
    Step("listed model", ("/models fake-large", "hi"), ("model", "fake-large")),
    Step("unlisted model", ("/models fake-huge",), ("refused", UNLISTED)),
    Step("refused write", (WRITE,), ("denied", "rejected by the person asked")),
)
"""The script, in the order every surface runs it."""

SURFACES = ("repl", "tui", "acp", "ws", "gateway")

EXCEPTIONS: dict[tuple[str, str], tuple[Outcome, str]] = {
    ("repl", "refused write"): (
        ("denied", "headless: no one to ask"),
        "the REPL over pipes has no terminal to ask on: it refuses headless (docs/safety.md)",
    ),
    ("gateway", "refused write"): (
        ("denied", "headless: no one to ask"),
        "the gateway asks no one in the chat: it refuses headless (docs/gateway.md, Run headless)",
    ),
    ("acp", "mention"): (
        ("sent", "read @notes.txt"),
        "text blocks go as they are; an editor sends a file as a resource (docs/acp.md)",
    ),
    ("acp", "hard-link"): (
        ("sent", "read @linked.txt"),
        "text blocks go as they are; an editor sends a file as a resource (docs/acp.md)",
    ),
    ("gateway", "mention"): (
        ("sent", "read @notes.txt"),
        "a chat sender is not at the work dir: `@path` goes as typed (docs/gateway.md)",
    ),
    ("gateway", "hard-link"): (
        ("sent", "read @linked.txt"),
        "a chat sender is not at the work dir: `@path` goes as typed (docs/gateway.md)",
    ),
}
"""Where a surface does a step otherwise by design: its outcome there, and why."""


def expected(surface: str, step: Step) -> Outcome:
    """What ``step`` must come to on ``surface``."""
    exception = EXCEPTIONS.get((surface, step.name))
    return exception[0] if exception is not None else step.expected


def prepare(home: Path, work: Path) -> None:
    """The user's skill and template, a file to mention and a hard-linked one."""
    install_prompts(home)
    (work / "notes.txt").write_text(f"the word is {SECRET_WORD}\n")
    (work / "original.txt").write_text("linked\n")
    os.link(work / "original.txt", work / "linked.txt")


def respond(request: RecordedRequest) -> FakeReply | str:
    """The model: asked to write, it calls ``write_file`` (once); otherwise it answers ``ok``."""
    last = request.messages[-1]
    if last.get("role") == "user" and last.get("content") == WRITE:
        call = FakeToolCall("write_file", {"path": "out.txt", "content": "x"})
        return FakeReply(tool_calls=[call])
    return "ok"


REPLIES = [respond] * 64
"""Enough replies for the whole script on one surface."""


def outcome(step: Step, requests: Sequence[RecordedRequest], said: str, work: Path) -> Outcome:
    """``step``'s outcome from the requests it caused and what the surface said meanwhile."""
    if step.name == "refused write":
        return _denied(requests, work)
    if requests and step.name == "listed model":
        return ("model", str(requests[-1].body["model"]))
    if requests:
        return ("sent", str(requests[-1].messages[-1]["content"]))
    refusal = step.expected[1]
    listed = step.name != "unlisted model" or all(model in said for model in MODELS)
    if refusal.lower() in said.lower() and listed:
        return ("refused", refusal)
    return ("silent", said[-300:])


def _denied(requests: Sequence[RecordedRequest], work: Path) -> Outcome:
    if (work / "out.txt").exists():
        return ("written", "out.txt")
    told = [m["content"] for r in requests for m in r.messages if m.get("role") == "tool"]
    if not told:
        return ("not asked", f"{len(requests)} requests")
    reason = told[-1].removeprefix(DENIED)
    if reason == REJECT.told:
        return ("denied", "rejected by the person asked")
    first = reason.partition("\n")[0]
    if first.startswith("write_file needs approval (") and NO_ONE in first:
        return ("denied", "headless: no one to ask")
    return ("denied", reason)
