"""Approvals in the terminal UI: one modal per request showing the runtime's question
(``runtime.approvals``: its title, why the policy asks in dim text below, the risks, the
diff, and the arguments, folded when there is a diff) and its choices: ``y`` allow once,
``a`` allow always, ``n`` reject, ``r`` reject always, or arrows and Enter; Esc does not
dismiss it. ``t`` ("no, and tell the model why") moves to the field below the choices (so does
Tab): type the reason, and Enter rejects with it (``n`` or ``r`` chosen afterwards pass it on
too).

The risks, diff and arguments scroll in the space the title, the choices and the reason's
field leave, so the choices stay on the screen of any size (80x24 included).

Requests of concurrent calls queue and are shown one at a time; a request whose turn was
cancelled leaves the queue, or its modal closes. A subagent's request names it (its prompt
starts ``[subagent NAME]``)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from rich.syntax import Syntax
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Collapsible, Input, OptionList, Static
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


def hunks(diff: str) -> str:
    """A unified diff without its ``---``/``+++`` header: the title names the file already,
    and on a small screen the two lines are better spent on the change."""
    lines = diff.splitlines(keepends=True)
    headed = len(lines) > 2 and lines[0].startswith("--- ") and lines[1].startswith("+++ ")
    return "".join(lines[2:]) if headed else diff


TELL = ("t", "no, and tell the model why")
"""The key and label of rejecting with a reason: it opens the field for the reason."""


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
        self.telling = False
        """Whether ``t`` was pressed and the reason's field not left since: every key typed
        is part of the reason, even one that reaches the choices first."""

    def compose(self) -> ComposeResult:
        asked = self.question
        with Vertical(id="approval-box"):
            yield Static(Text(asked.title), id="approval-title")
            if asked.why:
                yield Static(Text(asked.why, style="dim"), id="approval-why-asked")
            with VerticalScroll(id="approval-detail"):
                for reason in asked.reasons:
                    yield Static(Text(f"! {reason}"), classes="approval-reason")
                if asked.diff:
                    shown = Syntax(hunks(asked.diff), "diff", word_wrap=True)
                    yield Static(shown, id="approval-diff")
                with Collapsible(title="arguments", collapsed=bool(asked.diff)):
                    yield Static(Text(asked.arguments), id="approval-args")
            options = [Option(option_text(c.key, c.label), id=c.key) for c in approvals.CHOICES]
            options.append(Option(option_text(*TELL), id=TELL[0]))
            yield OptionList(*options, id="approval-choices")
            yield Input(
                placeholder="why, for the model (t or Tab to type here; Enter rejects with it)",
                max_length=approvals.MAX_REASON,
                select_on_focus=False,  # what was typed before it took the keys is kept
                id="approval-why",
            )

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        if event.option.id == TELL[0]:
            self.action_tell()
        else:
            self.action_choose(event.option.id or approvals.REJECT.key)

    def action_tell(self) -> None:
        """ "No, and tell the model why": the field for the reason takes the keys."""
        self.telling = True
        self.set_focus(self.query_one(Input))

    def on_key(self, event: events.Key) -> None:
        """``t``, and every key after it: keys reach this screen in the order typed, before
        any binding acts and before a change of focus takes effect, so keys typed fast after
        ``t`` still reach the choices. Here they go to the reason (Enter rejects with it),
        never to a choice."""
        if not self.telling:
            if event.key == TELL[0]:
                event.stop()
                self.action_tell()
            return
        if event.key == "enter":
            event.stop()
            self.dismiss(approvals.answer(approvals.REJECT, self.query_one(Input).value))
        elif event.character and event.character.isprintable():
            event.stop()
            self.query_one(Input).insert_text_at_cursor(event.character)

    def on_descendant_blur(self, event: events.DescendantBlur) -> None:
        """Leaving the reason's field (Shift+Tab back to the choices): keys choose again."""
        if isinstance(event.widget, Input):
            self.telling = False

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
        self.allowed: set[str] = set()
        """The calls a person allowed whose result the view has not shown yet (by call id):
        the view shows the result of an allowed edit expanded."""

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
            given = await answered
            if isinstance(given, Allow):
                self.allowed.add(request.tool_call_id)
            return given
        except asyncio.CancelledError:  # the turn was cancelled: its question goes away
            if screen.is_attached:
                screen.dismiss(None)
            raise
