"""The ``agent`` channel of ``/ws``: open or resume sessions, prompt them, watch their events.

Requests (``data`` of a frame on channel ``agent``; ``id`` is echoed in the reply):

- ``open``: a new session (``model``, ``agent``, ``skills``), attached at once;
- ``resume``: a session by id; one open on the server is attached and sends the frames after
  ``after`` (the last ``seq`` the client saw), first a ``missed`` notice for those no longer
  kept; one only stored is opened with its history;
- ``prompt``: ``text`` (``@path`` words attach files of the work dir; ``/skill`` and
  ``/template`` expand as in the chat) and ``images`` (``{"mime_type", "data"}``, base64); the
  events follow as ``event`` frames;
- ``cancel``, ``approve`` (``approval_id``, ``choice``: once, always, reject or reject_always,
  and for a rejection an optional ``reason`` the model is told), ``set_model``,
  ``detach`` and ``close``;
- ``compact``, ``undo`` and ``pin`` between prompts (``server.session_ops``).

Each session's frames carry its ``session_id`` and a ``seq``; replies are ``opened``, ``ok``
or ``error`` (with ``message`` and ``hint``). A request for an attached session that another
client closed meanwhile is an ``error`` saying so, with how to go on.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from openheim.errors import OpenheimError, SessionNotFound
from openheim.messages import ImageBlock, Message, TextBlock
from openheim.redaction.secrets import SecretPolicy
from openheim.runtime import SessionOptions, approvals, attach, models, prompt_commands
from openheim.server import relay
from openheim.server.context import ServerContext
from openheim.server.frames import BadRequest, opt_str, req_str, str_list
from openheim.server.live import Live, Subscriber
from openheim.server.session_ops import ACTIONS, session_action

MAX_IMAGES = 16
_AFTER = "session_id, after: the last seq you saw"
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


class AgentChannel:
    """The agent channel of one connection: the sessions it is attached to."""

    def __init__(self, context: ServerContext, subscriber: Subscriber) -> None:
        self.context = context
        self.subscriber = subscriber
        self.attached: dict[str, Live] = {}
        self._ops: dict[str, Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]] = {
            "open": self._open,
            "resume": self._resume,
            "prompt": self._prompt,
            "cancel": self._cancel,
            "approve": self._approve,
            "set_model": self._set_model,
            "detach": self._detach,
            "close": self._close,
        }
        self._ops.update(dict.fromkeys(ACTIONS, self._session_action))

    async def handle(self, data: dict[str, Any]) -> dict[str, Any]:
        """The reply to one request (BadRequest or an openheim error for a refused one)."""
        op = self._ops.get(req_str(data, "type"))
        if op is None:
            raise BadRequest(
                f"unknown agent request {data['type']!r}", f"use one of {', '.join(self._ops)}"
            )
        return await op(data)

    def detach_all(self) -> None:
        """The connection is gone: its sessions go on without it."""
        for live in self.attached.values():
            live.unsubscribe(self.subscriber)
        self.attached.clear()

    def _attach(self, live: Live, after: int | None) -> dict[str, Any]:
        """Subscribe, and send the frames after ``after`` first (none when None), after a
        ``missed`` notice when some of them are no longer kept."""
        kept = live.since(after) if after is not None else []
        gap = _gap(live, after, kept[0][0] if kept else live.seq + 1)
        missed = [text for _, text in kept]
        asked = [text for seq, text, _ in live.pending.values() if after is None or seq <= after]
        hub = self.context.hub
        elsewhere = relay.asked_elsewhere(hub, live, after) if after is not None else []
        self.subscriber.replay([*gap, *missed, *asked, *elsewhere])
        live.subscribers.add(self.subscriber)
        self.attached[live.key] = live
        assert live.session is not None
        return {
            "type": "opened",
            "session_id": live.key,
            "model": live.session.model,
            "seq": live.seq,
            "busy": live.busy or relay.runs_elsewhere(hub, live),
            "replayed": len(missed),
        }

    def _live(self, data: dict[str, Any]) -> Live:
        """The open session a request names; one this connection is attached to that was
        closed since (by another client, or deleted) is refused with what to do instead."""
        key = req_str(data, "session_id")
        live = self.attached.get(key)
        if live is not None and self.context.hub.get(key) is not live:
            raise self._closed_elsewhere(key)
        live = live or self.context.hub.get(key)
        if live is None:
            raise BadRequest(f"session {key} is not open", "open or resume it first")
        return live

    def _closed_elsewhere(self, key: str) -> BadRequest:
        """The error for an attached session that is closed now: resume it if it is stored."""
        message = f"session {key} was closed by another client"
        try:
            self.context.store.get(key)
        except OpenheimError:
            return BadRequest(f"{message} and is not stored", "open a new session with open")
        return BadRequest(message, f"resume it with resume ({_AFTER})")

    async def _open(self, data: dict[str, Any]) -> dict[str, Any]:
        options = SessionOptions(
            model=opt_str(data, "model"),
            agent=opt_str(data, "agent"),
            skills=tuple(str_list(data, "skills")),
        )
        live = await self.context.hub.open(options)
        return self._attach(live, None)

    async def _resume(self, data: dict[str, Any]) -> dict[str, Any]:
        key = req_str(data, "session_id")
        after = data.get("after", 0)
        if not isinstance(after, int) or isinstance(after, bool) or after < 0:
            raise BadRequest("after must be a whole number >= 0", "send the last seq you saw")
        live = self.context.hub.get(key) or self.context.hub.stored(key)
        if live is None:
            try:
                live = await self.context.hub.open(SessionOptions(resume=key))
            except SessionNotFound:
                raise BadRequest(
                    f"no session {key}", "list sessions with GET /api/sessions"
                ) from None
        return self._attach(live, after)

    async def _prompt(self, data: dict[str, Any]) -> dict[str, Any]:
        live = self._live(data)
        await live.start(self._message(data))
        self.context.busy.started(live)
        return {"type": "ok"}

    def _message(self, data: dict[str, Any]) -> Message:
        raw = req_str(data, "text")
        settings = self.context.settings
        policy = SecretPolicy.from_config(settings.deny_read, home=settings.home)
        expand = prompt_commands.PromptCommands.of(settings).expand_text
        text = prompt_commands.compose(raw, attach.Attacher(settings.work_dir, policy), expand)
        images = data.get("images", [])
        if not isinstance(images, list) or len(images) > MAX_IMAGES:
            raise BadRequest("images must be a list of at most 16", "send fewer images")
        blocks = [_image(image) for image in images]
        if not text.strip() and not blocks:
            raise BadRequest("the prompt is empty", "send some text or an image")
        return Message("user", (TextBlock(text), *blocks))

    async def _cancel(self, data: dict[str, Any]) -> dict[str, Any]:
        relay.cancel(self.context.hub, self._live(data))
        return {"type": "ok"}

    async def _approve(self, data: dict[str, Any]) -> dict[str, Any]:
        live = self._live(data)
        try:
            choice = approvals.choice_named(req_str(data, "choice"))
        except ValueError as err:
            raise BadRequest(str(err), "pick one of the request's choices") from None
        reason = data.get("reason", "")
        if not isinstance(reason, str):
            raise BadRequest("reason must be a string", "send the words for the model as text")
        if not relay.answer(self.context.hub, live, req_str(data, "approval_id"), choice, reason):
            raise BadRequest("no such pending approval", "it was answered or its prompt ended")
        return {"type": "ok"}

    async def _set_model(self, data: dict[str, Any]) -> dict[str, Any]:
        live = self._live(data)
        assert live.session is not None
        models.switch_model(self.context.settings, live.session, req_str(data, "model"))
        return {"type": "ok", "model": live.session.model}

    async def _session_action(self, data: dict[str, Any]) -> dict[str, Any]:
        return await session_action(self._live(data), data)

    async def _detach(self, data: dict[str, Any]) -> dict[str, Any]:
        live = self._live(data)
        live.unsubscribe(self.subscriber)
        self.attached.pop(live.key, None)
        return {"type": "ok"}

    async def _close(self, data: dict[str, Any]) -> dict[str, Any]:
        live = self._live(data)
        self.attached.pop(live.key, None)
        await self.context.hub.forget(live.key)
        return {"type": "ok"}


def _gap(live: Live, after: int | None, first_kept: int) -> list[str]:
    """The ``missed`` notice for frames numbered above ``after`` and below ``first_kept`` (the
    oldest one kept), which a client re-attaching can no longer get: which ones, and where
    the conversation they carried is kept (none when nothing is missing)."""
    if after is None or first_kept <= after + 1:
        return []
    first, last, key = after + 1, first_kept - 1, live.key
    hint = (
        f"read the conversation from the session's stored messages: GET /api/sessions/{key}"
        if live.writer is not None
        else "the session is not stored: those frames cannot be recovered"
    )
    notice = {
        "type": "missed",
        "session_id": key,
        "first": first,
        "last": last,
        "message": f"frames {first} to {last} of session {key} are no longer kept",
        "hint": hint,
    }
    return [json.dumps(notice)]


def _image(raw: Any) -> ImageBlock:
    if not isinstance(raw, dict):
        raise BadRequest("each image must be an object", 'send {"mime_type", "data"}')
    mime = req_str(raw, "mime_type")
    if mime not in IMAGE_TYPES:
        raise BadRequest(f"image type {mime!r} is not supported", "send png, jpeg, gif or webp")
    return ImageBlock(req_str(raw, "data"), mime)
