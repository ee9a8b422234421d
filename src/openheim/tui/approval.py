"""Approvals in the terminal UI: one modal per request showing the runtime's question
(``runtime.approvals``) and its choices: ``y`` allow once, ``a`` allow always, ``n`` reject,
``r`` reject always, or arrows and Enter; Esc does not dismiss it. Below the choices a field
takes the person's reason for the model: Tab to it, type, and Enter rejects with it (``n`` or
``r`` chosen afterwards pass it on too).

Requests of concurrent calls queue and are shown one at a time; a request whose turn was
cancelled leaves the queue, or its modal closes. A subagent's request names it (its prompt
starts ``[subagent NAME]``)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from openheim.approval import Allow, ApprovalRequest, Ask, Deny
from openheim.runtime import approvals

if TYPE_CHECKING:
    from textual.app import App

Answer = Allow | Deny


def option_text(key: str, label: str) -> Text:
    """An option as plain text: "[y] allow once" given to Textual as a string is read as
    markup, and the "[y]" would vanish."""
    return Text(f"[{key}] {label}")


class ApprovalScreen(ModalScreen[Answer]):
    """The question about one tool call: the tool, its arguments, why it is asked, the diff."""

    BINDINGS = [
        *(Binding(c.key, f"choose('{c.key}')", c.label) for c in approvals.CHOICES),
        Binding("escape", "stay", show=False),
    ]

    def __init__(self, request: ApprovalRequest, ask: Ask) -> None:
        super().__init__(classes="approval")
        self.request = request
        self.question = approvals.question(request, ask)
        self.diff = self.question.diff
        """What an edit would change (empty for other calls)."""

    def compose(self) -> ComposeResult:
        asked = self.question
        with Vertical(id="approval-box"):
            yield Static(Text(asked.title), id="approval-title")
            with VerticalScroll(id="approval-detail"):
                yield Static(Text(asked.arguments), id="approval-args")
                for reason in asked.reasons:
                    yield Static(Text(f"! {reason}"), classes="approval-reason")
                if asked.diff:
                    yield Static(Syntax(asked.diff, "diff", word_wrap=True), id="approval-diff")
            options = [Option(option_text(c.key, c.label), id=c.key) for c in approvals.CHOICES]
            yield OptionList(*options, id="approval-choices")
            yield Input(
                placeholder="reason for the model (optional; Enter rejects with it)",
                max_length=approvals.MAX_REASON,
                id="approval-why",
            )

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.action_choose(event.option.id or approvals.REJECT.key)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(approvals.answer(approvals.REJECT, event.value))

    def action_choose(self, key: str) -> None:
        self.dismiss(approvals.answer(approvals.BY_KEY[key], self.query_one(Input).value))

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

        def settle(given: Answer | None) -> None:
            if not answered.done():
                answered.set_result(
                    given if given is not None else approvals.answer(approvals.REJECT)
                )

        self.app.push_screen(screen, settle)
        try:
            return await answered
        except asyncio.CancelledError:  # the turn was cancelled: its question goes away
            if screen.is_attached:
                screen.dismiss(None)
            raise
