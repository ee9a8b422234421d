"""Approvals in the terminal UI: one modal per request (``y`` allow once, ``a`` allow always,
``n`` reject once, ``r`` reject always, or arrows and Enter; Esc does not dismiss it).

Requests of concurrent calls queue and are shown one at a time; a request whose turn was
cancelled leaves the queue, or its modal closes. A subagent's request names it (its prompt
starts ``[subagent NAME]``)."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from openheim.approval import Allow, ApprovalRequest, Ask, Deny
from openheim.secrets import redact
from openheim.term.approve import MAX_SHOWN, edit_diff

if TYPE_CHECKING:
    from textual.app import App

Answer = Allow | Deny
CHOICES: dict[str, tuple[str, Answer]] = {
    "y": ("allow once", Allow()),
    "a": ("allow always", Allow(always=True)),
    "n": ("reject once", Deny("the user said no to this tool call")),
    "r": ("reject always", Deny("the user always rejects this tool call", always=True)),
}


def _clip(text: str) -> str:
    return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN] + "\n…"


class ApprovalScreen(ModalScreen[Answer]):
    """The question about one tool call: the tool, its arguments, why it is asked, the diff."""

    BINDINGS = [
        Binding("y", "choose('y')", "allow once"),
        Binding("a", "choose('a')", "allow always"),
        Binding("n", "choose('n')", "reject once"),
        Binding("r", "choose('r')", "reject always"),
        Binding("escape", "stay", show=False),
    ]

    def __init__(self, request: ApprovalRequest, ask: Ask) -> None:
        super().__init__(classes="approval")
        self.request = request
        self.ask = ask
        self.diff = redact(ask.detail or edit_diff(request))
        """What an edit would change (empty for other calls)."""

    def compose(self) -> ComposeResult:
        request, ask = self.request, self.ask
        args = redact(json.dumps(dict(request.arguments), indent=2, ensure_ascii=False))
        with Vertical(id="approval-box"):
            yield Static(
                Text(redact(f"{ask.prompt or 'approve'}: {request.tool}")), id="approval-title"
            )
            with VerticalScroll(id="approval-detail"):
                yield Static(Text(_clip(args)), id="approval-args")
                for reason in ask.reasons:
                    yield Static(Text(redact(f"! {reason}")), classes="approval-reason")
                if self.diff:
                    yield Static(
                        Syntax(_clip(self.diff), "diff", word_wrap=True), id="approval-diff"
                    )
            options = [Option(f"[{key}] {label}", id=key) for key, (label, _) in CHOICES.items()]
            yield OptionList(*options, id="approval-choices")

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.action_choose(event.option.id or "n")

    def action_choose(self, key: str) -> None:
        self.dismiss(CHOICES[key][1])

    def action_stay(self) -> None:
        """Esc does not answer the question: a choice is needed."""
        self.notify("choose y, a, n or r", timeout=2)


class QueueResolver:
    """Settles asks with the modal, one at a time, in the order they came."""

    def __init__(self, app: App[Any]) -> None:
        self.app = app
        self._turn = asyncio.Lock()
        self.waiting = 0
        """Requests asked and not yet answered (the one shown included)."""

    async def __call__(self, request: ApprovalRequest, ask: Ask) -> Answer:
        self.waiting += 1
        try:
            async with self._turn:
                return await self._show(request, ask)
        finally:
            self.waiting -= 1

    async def _show(self, request: ApprovalRequest, ask: Ask) -> Answer:
        answered: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        screen = ApprovalScreen(request, ask)

        def settle(answer: Answer | None) -> None:
            if not answered.done():
                answered.set_result(answer if answer is not None else CHOICES["n"][1])

        self.app.push_screen(screen, settle)
        try:
            return await answered
        except asyncio.CancelledError:  # the turn was cancelled: its question goes away
            if screen.is_attached:
                screen.dismiss(None)
            raise
