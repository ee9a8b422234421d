"""``ChatApp``: the Textual chat. The conversation view above, the input box and the footer
below; every turn is a worker that reads the session's events into the view.

A welcome line opens the conversation (model, work folder, how to get help). Keys: Ctrl+C
clears a draft when no turn runs, else cancels the running turn (the history stays valid); a
second Ctrl+C within ``DOUBLE_PRESS`` seconds quits and the footer says so; PgUp/PgDn, the
mouse wheel and ``j``/``k`` (in the conversation) scroll; Esc closes overlays. Quitting,
SIGTERM or a crash close the session (its lease is released) and Textual restores the
terminal; a session with messages is then named with the command that resumes it.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.worker import Worker

from openheim.chat.history import InputHistory, history_for
from openheim.errors import OpenheimError
from openheim.events import CostUpdate, Event, TextDelta, ThinkingDelta, UsageUpdate
from openheim.redaction.secrets import redact
from openheim.runtime import commands
from openheim.term import exit_codes
from openheim.tui.approval import QueueResolver
from openheim.tui.items import WelcomeItem
from openheim.tui.palette import Palette, entries_of
from openheim.tui.pickers import Picker
from openheim.tui.prompt_input import PromptInput
from openheim.tui.status import StatusBar
from openheim.tui.view import Conversation

if TYPE_CHECKING:
    from openheim.chat.session import Chat
    from openheim.config.load import Settings
    from openheim.runtime import SessionOptions

DOUBLE_PRESS = 2.0
CSS = """
#conversation { height: 1fr; padding: 0 1; }
#input { height: auto; max-height: 10; border: tall $accent; }
#palette { height: auto; max-height: 12; border: none; background: $panel; padding: 0 1; }
#status { height: 1; background: $panel; color: $text-muted; padding: 0 1; }
.user { color: $accent; text-style: bold; margin-top: 1; }
.notice, .welcome { color: $text-muted; }
.notice.warning, .notice.retry { color: $warning; }
.notice.error, .notice.stop { color: $error; }
.output { color: $text; margin: 0 0 1 0; }
.tool { margin: 0; padding: 0; border: none; }
.tool-detail { height: auto; }
.tool.failed, .tool.denied { color: $error; }
ApprovalScreen, Picker { align: center middle; }
#approval-box, #picker-box { width: 90%; max-width: 120; height: auto; max-height: 90%;
  border: thick $warning; background: $surface; padding: 0 1; }
#picker-box { border: thick $accent; }
#approval-detail { height: 1fr; }
#approval-choices, #picker-list { height: auto; max-height: 12; }
"""


class ChatApp(App[int]):
    """The chat UI over one ``Chat``."""

    CSS = CSS
    BINDINGS = [
        Binding("ctrl+c", "interrupt", "cancel / quit", priority=True, show=False),
        Binding("ctrl+q", "quit", "quit", priority=True, show=False),
        Binding("pageup", "page(-1)", show=False, priority=True),  # before the input's own
        Binding("pagedown", "page(1)", show=False, priority=True),
        Binding("escape", "focus_input", show=False),
    ]

    def __init__(
        self,
        settings: Settings,
        options: SessionOptions | Callable[[], SessionOptions],
        history: InputHistory,
        first: str | None = None,
    ) -> None:
        """``options`` may be a function that makes them, called once the first frame is
        drawn (making them imports the runtime)."""
        super().__init__()
        self.resolver = QueueResolver(self)
        self.settings = settings
        self.options = options
        self._chat: Chat | None = None
        self.history = history
        self.first = first
        self.conversation = Conversation(self.resolver.allowed, settings.show_thinking)
        self.status_bar = StatusBar()
        self.prompt_input = PromptInput(history, self._complete)
        self.palette = Palette()
        self.prompt_input.palette = self.palette
        self.turn: Worker[None] | None = None
        self._last_interrupt = -DOUBLE_PRESS
        self._files: list[str] | None = None
        self._chat_closed = False
        self.failure: str | None = None
        """Why the session could not open (printed once the terminal is restored)."""
        self.resume_id: str | None = None
        """The stored session with messages the chat left (named once the terminal is back)."""
        if settings.theme and settings.theme in self.available_themes:
            self.theme = settings.theme

    @property
    def chat(self) -> Chat:
        """The chat, once the session is open (the first frame comes before: see ``_open``)."""
        if self._chat is None:
            raise RuntimeError("the session is still opening")
        return self._chat

    @property
    def ready(self) -> bool:
        """Whether the session is open."""
        return self._chat is not None and self._chat.opened

    def compose(self) -> ComposeResult:
        yield self.conversation
        yield self.palette
        yield self.prompt_input
        yield self.status_bar

    async def on_mount(self) -> None:
        self.prompt_input.focus()
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, self.request_quit, exit_codes.TERMINATED)
        self.call_after_refresh(self.run_worker, self._open(), group="session")

    async def _open(self) -> None:
        """Open the session after the first frame: the runtime is imported only now."""
        from openheim.chat.session import Chat

        options = self.options() if callable(self.options) else self.options
        self._chat = Chat(self.settings, options, self.resolver)
        try:
            session = await self._chat.open()
        except OpenheimError as err:  # as any command: one line, once the terminal is back
            code = exit_codes.USAGE if err.usage_error else exit_codes.ERROR
            self._chat_closed = True
            self.failure = f"openheim: error: {redact(str(err))}"
            self.exit(code, return_code=code, message=self.failure)
            return
        from openheim.chat.info import welcome_text

        await self.conversation.add(WelcomeItem(welcome_text(self._chat)))
        for notice in session.notices:
            await self.conversation.show(notice)
        self.palette.entries = entries_of(self._chat)
        self.update_status()
        if self.first:
            self.submit(self.first)

    def update_status(self, last: UsageUpdate | None = None) -> None:
        """The footer's facts from the session as it is now."""
        from openheim.chat.info import context_text

        if not self.ready:
            return
        bar, chat = self.status_bar, self.chat
        session = chat.session
        bar.model = f"{chat.provider}/{session.model}"
        bar.mode = chat.approval_mode() or ""
        if last is not None or not bar.context:
            bar.context = context_text(chat, last.usage if last is not None else None)
        bar.usage = session.agent.meter.usage
        bar.cost = session.agent.meter.cost
        bar.refresh_line()

    @property
    def busy(self) -> bool:
        return self.turn is not None and self.turn.is_running

    def on_prompt_input_submitted(self, message: PromptInput.Submitted) -> None:
        self.submit(message.text)

    def submit(self, text: str) -> None:
        """A typed line: a command, or a prompt sent as a turn."""
        from openheim.tui.commands import run_command

        if not self.ready:
            self.notify("the session is still opening", severity="warning")
            return
        parsed = commands.parse(text, "tui", self.chat.command_names())
        if isinstance(parsed, commands.Unknown):
            self.run_worker(self.conversation.line(parsed.message(), "error"))
        elif isinstance(parsed, commands.Invocation):
            self.run_worker(run_command(self, parsed), group="command")
        elif self.busy:
            self.notify("a turn is running: wait, or Ctrl+C to cancel it", severity="warning")
        else:
            self.turn = self.run_worker(self._turn(text), group="turn")

    async def _turn(self, text: str) -> None:
        await self.conversation.user(text)
        self.status_bar.start()
        try:
            async with self.chat.prompt(text) as events:
                async for event in events:
                    await self._event(event)
        except OpenheimError as err:
            await self.conversation.line(f"error: {err}", "error")
        finally:
            self.conversation.end_stream()
            self.status_bar.stop()
            self.update_status()

    async def _event(self, event: Event) -> None:
        await self.conversation.show(event)
        if isinstance(event, TextDelta | ThinkingDelta):
            self.status_bar.streamed_chars += len(event.text)
        elif isinstance(event, UsageUpdate):
            self.update_status(event)
        elif isinstance(event, CostUpdate):
            self.update_status()

    def on_prompt_input_mode_cycled(self, message: PromptInput.ModeCycled) -> None:
        """Shift+Tab: the next approval mode for the rest of the session, in the footer."""
        if not self.ready:
            return
        if self.chat.next_approval_mode() is None:
            self.notify("this session has no approval mode to change", severity="warning")
        self.update_status()

    def action_interrupt(self) -> None:
        """Ctrl+C: with no turn running, clear the draft if there is one; else cancel the
        running turn; a second press within 2 s quits."""
        now = time.monotonic()
        if not self.busy and self.prompt_input.text:
            self.prompt_input.load_text("")
            self._last_interrupt = -DOUBLE_PRESS  # a press to clear never counts towards quit
            return
        if now - self._last_interrupt < DOUBLE_PRESS:
            self.request_quit()
            return
        self._last_interrupt = now
        if self.busy and self.ready:
            self.chat.session.cancel()
        self.status_bar.hint = "press Ctrl+C again to quit"
        self.status_bar.refresh_line()
        self.set_timer(DOUBLE_PRESS, self._clear_hint)

    def _clear_hint(self) -> None:
        self.status_bar.hint = ""
        self.status_bar.refresh_line()

    def request_quit(self, code: int = exit_codes.OK) -> None:
        """Quit soon, from a plain callback (a signal handler, a key binding)."""
        self.call_later(self.action_quit, code)

    async def action_quit(self, code: int = exit_codes.OK) -> None:
        """Close the session (a running turn is cancelled, the lease released), then leave
        with ``code`` (143 after SIGTERM, as shells report it)."""
        await self.close_chat()
        self.exit(code, return_code=code)

    async def close_chat(self) -> None:
        """Close the session once, whichever way the app ends."""
        if not self._chat_closed and self._chat is not None:
            self._chat_closed = True
            self.resume_id = await self._chat.close()

    async def on_unmount(self) -> None:
        """The app ends without ``action_quit`` (a crash): close the session all the same."""
        await self.close_chat()

    def action_page(self, direction: int) -> None:
        if direction < 0:
            self.conversation.scroll_page_up()
        else:
            self.conversation.scroll_page_down()

    def action_focus_input(self) -> None:
        self.prompt_input.focus()

    def _complete(self, head: str, word: str) -> list[str]:
        """Tab completion: commands and skills after ``:``/``/``; a skill, theme or model
        after its command; else work-dir paths."""
        if not self.ready:
            return []
        if not head and word[:1] in (":", "/"):
            return commands.complete(word, "tui", self.chat.command_names())
        names = self._arguments(head.strip()[1:]) if head[:1] in (":", "/") else None
        if names is not None:
            return [name for name in names if name.startswith(word)]
        at = "@" if word.startswith("@") else ""
        prefix = word[len(at) :]
        return [at + path for path in self.files() if path.startswith(prefix)][:50]

    def _arguments(self, command: str) -> list[str] | None:
        """What a command's argument may be, for the commands that take a name."""
        if command == "skill":
            return self.chat.skill_names()
        if command == "theme":
            return sorted(self.available_themes)
        if command in ("models", "model"):
            from openheim.chat.info import model_choices

            return [f"{p}/{m}" for p, m in model_choices(self.settings)]
        return None

    def files(self) -> list[str]:
        from openheim.chat.files import work_files

        if self._files is None:
            self._files = work_files(self.chat.settings.work_dir, self.chat.policy)
        return self._files

    def on_prompt_input_mention_started(self, message: PromptInput.MentionStarted) -> None:
        self.run_worker(self._pick_file(), group="picker")

    def on_palette_picked(self, message: Palette.Picked) -> None:
        self.prompt_input.use_command(message.name)
        self.prompt_input.focus()

    async def _pick_file(self) -> None:
        if not self.ready:
            self.prompt_input.end_mention()
            return
        choices = [(path, path) for path in self.files()]
        picker = Picker("attach a file", choices)
        self.prompt_input.mention_to(picker.type_text)
        try:
            picked = await self.push_screen_wait(picker)
        finally:
            self.prompt_input.end_mention()
        if picked is not None:
            self.prompt_input.insert_mention(picked)
        self.prompt_input.focus()


def run_app(settings: Settings, options: Callable[[], SessionOptions], first: str | None) -> int:
    """Run the chat UI in this terminal until it quits; its exit code."""
    app = ChatApp(settings, options, history_for(settings.data_dir), first)
    app.run()
    if app.resume_id is not None:
        print(f"resume this session with: openheim chat --session {app.resume_id}")
    return app.return_code or 0
