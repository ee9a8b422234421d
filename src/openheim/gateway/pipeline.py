"""The gateway's pipeline, the same for every platform: a stored inbound message is
rate-limited (whoever sent it: a flood from a sender not admitted is not answered message by
message), authorised, then either a chat command or a prompt for the sender's conversation;
each conversation runs one turn at a time, with a bounded queue behind it.

``deliver`` decides at once and returns (a platform acknowledges a message as soon as it is
stored); replies and turns run in tasks of their own. The state is asked off the event loop
(``GatewayState.off_loop``), and messages are decided one at a time, in the order they
arrive. A message stays unhandled in the database until it has been answered, so one in flight
when the process stopped is handled at the next start, in the same conversation.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from openheim.errors import ConfigError, OpenheimError, SessionNotFound
from openheim.gateway.auth import Authoriser
from openheim.gateway.format import render
from openheim.gateway.inbound import Inbound, Platform
from openheim.gateway.ratelimit import RateLimiter
from openheim.gateway.state import Conversation, GatewayState
from openheim.gateway.turn import TurnResult, run_turn
from openheim.redaction.secrets import redact
from openheim.runtime import Runtime, SessionHost, commands, models, prompt_commands

log = logging.getLogger(__name__)

GUESSES_PER_SENDER = 5
GUESSES_IN_ALL = 50
GUESS_WINDOW = 3600.0
"""``/auth`` attempts taken per hour: from one sender, and from all senders together (one
attacker may hold many accounts). Counted apart from the message limit, which may be high."""
NOT_PRIVATE = (
    "Send /auth only in a private chat with the bot: others here can read this chat, so it "
    "was not checked, and the message is deleted where the bot may. If it held the "
    "passphrase, ask the owner to change it."
)
NOT_ADMITTED = "You are not authorised. Send /auth and the passphrase in a private chat with me."


def _is_auth(text: str) -> bool:
    command = commands.parse(text, "gateway")
    return isinstance(command, commands.Invocation) and command.name == "auth"


@dataclass
class _Conversation:
    """A conversation's messages waiting behind its running turn."""

    key: str
    pending: deque[Inbound] = field(default_factory=deque)
    task: asyncio.Task[None] | None = None
    cancel: asyncio.Event | None = None
    generation: int = 0
    """Counts ``/new``: a turn started before one does not store its session afterwards."""


@dataclass(frozen=True)
class AgentChoice:
    """What the gateway's sessions run: an agent profile, and the models ``/model`` offers."""

    agent: str | None = None
    models: Sequence[str] = ()


class Gateway:
    """Routes every platform's messages to the agent and its answers back."""

    def __init__(
        self,
        runtime: Runtime,
        state: GatewayState,
        auth: Authoriser,
        limiter: RateLimiter,
        platforms: Mapping[str, Platform],
        *,
        choice: AgentChoice = AgentChoice(),
        queue: int = 3,
    ) -> None:
        self._sessions = SessionHost(runtime)
        """Each conversation's open session, kept across its messages until idle or ``/new``."""
        self._state = state
        self._auth = auth
        self._limiter = limiter
        self._platforms = platforms
        self._choice = choice
        self._queue = queue
        self._conversations: dict[str, _Conversation] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._replies: dict[str, asyncio.Task[None]] = {}
        """Each conversation's last queued reply, which the next one waits for."""
        self._guesses = RateLimiter(state, GUESSES_PER_SENDER, GUESS_WINDOW)
        self._all_guesses = RateLimiter(state, GUESSES_IN_ALL, GUESS_WINDOW)
        self._deciding = asyncio.Lock()
        """Held while a message is stored and decided, so messages are routed in order."""

    async def deliver(self, message: Inbound) -> None:
        """Store ``message`` and decide what to do with it; a duplicate is dropped."""
        async with self._deciding:
            if not await self._state.off_loop(self._state.receive, message):
                log.info(
                    "%s: message %s delivered again; ignored", message.platform, message.message_id
                )
                return
            log.info("%s: message %s from %s", message.platform, message.message_id, message.sender)
            if not _is_auth(message.text):  # a passphrase, or a guess at it, is never logged
                log.debug("%s: message %s: %s", message.platform, message.message_id, message.text)
            await self._route(message)

    async def resume(self, platform: str) -> int:
        """Handle ``platform``'s messages left unanswered by the last run; how many."""
        async with self._deciding:
            messages = await self._state.off_loop(self._state.unhandled, platform)
            for message in messages:
                await self._route(message)
        return len(messages)

    async def _handled(self, message: Inbound) -> None:
        await self._state.off_loop(self._state.handled, message)

    async def _stored(self, key: str) -> Conversation:
        return await self._state.off_loop(self._state.conversation, key)

    async def _save(self, conversation: Conversation) -> None:
        await self._state.off_loop(self._state.save, conversation)

    async def aclose(self) -> None:
        """Cancel running turns and replies (their messages stay unhandled for next time),
        then close the conversations' sessions."""
        tasks = [*self._tasks, *(c.task for c in self._conversations.values() if c.task)]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._sessions.aclose()

    async def _route(self, message: Inbound) -> None:
        command = commands.parse(message.text, "gateway")
        if (
            isinstance(command, commands.Invocation)
            and command.name == "auth"
            and not message.private
        ):
            await self._refuse_auth(message)
        elif isinstance(command, commands.Invocation) and command.name == "auth":
            self._answer(message, await self._authenticate(message, command))
        elif (refusal := await self._rate_refusal(message)) is not None:
            self._answer(message, refusal or None)
        elif not await self._auth.admitted(message.platform, message.sender):
            log.info("%s: sender %s is not admitted", message.platform, message.sender)
            self._answer(message, NOT_ADMITTED if self._auth.has_passphrase else None)
        elif isinstance(command, commands.Invocation):
            self._answer(message, await self._command(message, command))
        elif isinstance(unknown := self._unknown(message, command), commands.Unknown):
            self._answer(message, unknown.message())
        else:
            self._enqueue(message)

    def _unknown(
        self, message: Inbound, command: commands.Unknown | None
    ) -> commands.Unknown | None:
        """An admitted sender's ``/word`` that is no command: unknown unless it names a skill
        or template (read only now, never for a sender not admitted)."""
        if command is None:
            return None
        again = commands.parse(message.text, "gateway", self._prompts().names())
        return again if isinstance(again, commands.Unknown) else None

    def _prompts(self) -> prompt_commands.PromptCommands:
        """The skills and templates a message may start with (``/name``), expanded."""
        return prompt_commands.PromptCommands.of(self._sessions.runtime.settings)

    async def _rate_refusal(self, message: Inbound) -> str | None:
        """None when the message is within the sender's limit; else the answer to give (empty
        after the first refusal of a window, so a flood is not answered message by message)."""
        verdict = await self._limiter.check(message.platform, message.sender)
        if verdict.allowed:
            return None
        log.info("%s: sender %s is over the rate limit", message.platform, message.sender)
        if not verdict.first_refusal:
            return ""
        return f"Too many messages: try again in {max(1, round(verdict.retry_in))} s."

    async def _authenticate(self, message: Inbound, command: commands.Invocation) -> str | None:
        refusal = await self._rate_refusal(message)
        if refusal is not None:
            return refusal or None
        if self._auth.has_passphrase and not await self._may_guess(message):
            log.warning(
                "%s: sender %s: too many passphrase attempts", message.platform, message.sender
            )
            return "Too many passphrase attempts: try again in an hour."
        if await self._auth.try_passphrase(message.platform, message.sender, command.argument):
            log.info("%s: sender %s admitted by passphrase", message.platform, message.sender)
            return "You are authorised. Send /help for the commands."
        log.info("%s: sender %s sent a wrong passphrase", message.platform, message.sender)
        return "That passphrase is not right." if self._auth.has_passphrase else None

    async def _refuse_auth(self, message: Inbound) -> None:
        """``/auth`` outside a private chat: not checked, counted as a failed attempt, deleted
        where the platform lets the bot, and answered with where to send it instead."""
        log.warning(
            "%s: sender %s sent /auth in a chat that is not private; refused",
            message.platform,
            message.sender,
        )
        task = asyncio.create_task(self._delete(message))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        answer = await self._rate_refusal(message)
        if answer is None and self._auth.has_passphrase:
            await self._may_guess(message)
            answer = NOT_PRIVATE
        self._answer(message, answer or None)

    async def _delete(self, message: Inbound) -> None:
        try:
            await self._platforms[message.platform].delete(message)
        except OpenheimError as err:
            log.warning("%s: message %s not deleted: %s", message.platform, message.message_id, err)

    async def _may_guess(self, message: Inbound) -> bool:
        """Count one ``/auth`` attempt; whether it is within both hourly limits."""
        own = await self._guesses.check(f"auth:{message.platform}", message.sender)
        return own.allowed and (await self._all_guesses.check("auth", "*")).allowed

    async def _command(self, message: Inbound, command: commands.Invocation) -> str:
        conversation = self._conversations.get(message.key)
        stored = await self._stored(message.key)
        if command.name == "help":
            return commands.help_text("gateway", self._prompts().names())
        if command.name == "new":
            if conversation is not None:
                conversation.generation += 1
            self._sessions.retire(message.key)  # closed once a running turn ends
            await self._save(Conversation(message.key, None, stored.model))
            return "Started a new conversation."
        if command.name == "stop":
            return await self._stop(conversation)
        assert command.name == "models"  # the last command the registry offers here
        return await self._model(stored, command.argument)

    async def _stop(self, conversation: _Conversation | None) -> str:
        if conversation is None or conversation.cancel is None:
            return "Nothing is running."
        conversation.cancel.set()
        dropped = list(conversation.pending)
        conversation.pending.clear()
        for message in dropped:
            await self._handled(message)
        return "Stopping."

    async def _model(self, stored: Conversation, name: str) -> str:
        """``/model``: the model in use and the others offered, or a switch to ``name``; a
        model the gateway's ``models`` do not list is refused as on every surface."""
        offered = list(self._choice.models)
        if not offered:
            return "Changing the model is not enabled here."
        current = stored.model or offered[0]
        if not name:
            return f"Model: {current}. Available: {', '.join(offered)}."
        provider = self._sessions.runtime.settings.provider or ""
        try:
            models.check_listed(provider, current, name, offered, "[gateway]")
        except ConfigError as err:
            return str(err)
        await self._save(Conversation(stored.key, stored.session_id, name))
        return f"Model set to {name}."

    def _enqueue(self, message: Inbound) -> None:
        conversation = self._conversations.setdefault(message.key, _Conversation(message.key))
        if conversation.task is not None and len(conversation.pending) >= self._queue:
            self._answer(message, "Busy with your earlier messages: send this again later.")
            return
        conversation.pending.append(message)
        if conversation.task is None:
            conversation.task = asyncio.create_task(self._drain(conversation))

    async def _drain(self, conversation: _Conversation) -> None:
        """Run the conversation's turns one at a time until its queue is empty."""
        try:
            while conversation.pending:
                message = conversation.pending.popleft()
                await self._turn(conversation, message)
                await self._handled(message)
        finally:
            conversation.task = None
            if self._conversations.get(conversation.key) is conversation:
                del self._conversations[conversation.key]

    async def _turn(self, conversation: _Conversation, message: Inbound) -> None:
        generation = conversation.generation
        try:
            text = self._prompts().expand_text(message.text)
        except OpenheimError as err:  # a template's missing argument: the sender's to fix
            await self._queue_reply(message, redact(str(err)))
            return
        conversation.cancel = cancel = asyncio.Event()
        try:
            result = await self._run(message, text, cancel)
        except OpenheimError as err:
            log.warning("%s: a turn failed: %s", message.platform, err)
            await self._queue_reply(message, f"Sorry, the agent failed: {redact(str(err))}")
            return
        except Exception:  # a bug must not leave the conversation stuck
            log.warning("%s: a turn failed", message.platform, exc_info=True)
            await self._queue_reply(message, "Sorry, something went wrong. Try again, or /new.")
            return
        finally:
            conversation.cancel = None
        if result.denied:
            log.info("%s: %d tool call(s) refused", message.platform, result.denied)
        if generation == conversation.generation:
            stored = await self._stored(message.key)
            await self._save(Conversation(message.key, result.session_id, stored.model))
        if result.stop_reason == "cancelled":
            text = "Stopped."
        else:
            text = result.text or f"(no answer: {result.stop_reason})"
        closing = "\n".join(result.closing)
        await self._queue_reply(message, f"{text}\n\n{closing}" if closing else text)

    async def _run(self, message: Inbound, text: str, cancel: asyncio.Event) -> TurnResult:
        """Prompt ``text`` (``message``'s, a skill or template expanded) in its conversation."""
        stored = await self._stored(message.key)
        args: dict[str, Any] = {"model": stored.model, "agent": self._choice.agent}
        try:
            return await run_turn(
                self._sessions,
                message.key,
                text,
                session_id=stored.session_id,
                cancel=cancel,
                **args,
            )
        except SessionNotFound:  # deleted with `openheim sessions delete`: start afresh
            log.info("%s: stored session %s is gone", message.platform, stored.session_id)
            self._sessions.retire(message.key)  # open still, maybe: it can store nothing
            return await run_turn(
                self._sessions, message.key, text, session_id=None, cancel=cancel, **args
            )

    def _answer(self, message: Inbound, text: str | None) -> None:
        """Reply ``text`` (if any) in a task of its own; the message is then handled."""
        self._queue_reply(message, text, handled=True)

    def _queue_reply(
        self, message: Inbound, text: str | None, *, handled: bool = False
    ) -> asyncio.Task[None]:
        """A task that sends ``text`` once every reply queued before in the conversation has
        been sent, so a conversation's replies arrive in the order they were decided."""
        previous = self._replies.get(message.key)
        task = asyncio.create_task(self._reply_after(previous, message, text, handled))
        self._replies[message.key] = task
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(functools.partial(self._sent, message.key))
        return task

    def _sent(self, key: str, task: asyncio.Task[None]) -> None:
        """``task`` ended: forget it when it is the conversation's last queued reply."""
        if self._replies.get(key) is task:
            del self._replies[key]

    async def _reply_after(
        self,
        previous: asyncio.Task[None] | None,
        message: Inbound,
        text: str | None,
        handled: bool,
    ) -> None:
        if previous is not None:
            await asyncio.wait([previous])
        if text:
            await self._reply(message, text)
        if handled:
            await self._handled(message)

    async def _reply(self, message: Inbound, text: str) -> None:
        platform = self._platforms[message.platform]
        for chunk in render(message.platform, text):
            try:
                await platform.send(message, chunk)
            except OpenheimError as err:
                log.warning("%s: a reply could not be sent: %s", message.platform, err)
                return
