"""The agent's messages in one ``session/prompt`` turn: the answer, and each notice on its own.

An editor shows the ``agent_message_chunk`` updates of one message together, so a notice
(something openheim tells the user that is not the model's text) sent as a plain chunk was
glued to the answer. Here each notice is a message of its own: its chunk carries a
``messageId`` no other chunk has, and the answer text after it starts a new message (in ACP "a
change in messageId indicates a new message has started"). A notice's text is for the user
(``annotations.audience: ["user"]``), and its ``_meta`` marks it as a notice with its kind and
level, for clients that show notices apart.

A notice never carries the absolute path of openheim's own folders: ``$OPENHEIM_HOME`` and the
data dir are named instead (``$OPENHEIM_HOME/system.md``). The client, an editor or a web page
on another machine, needs the file's place in openheim's folders, not the layout of this
machine's home folders and the user name in them.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence

from acp.helpers import text_block
from acp.schema import AgentMessageChunk, Annotations, TextContentBlock

from openheim.config.load import Settings
from openheim.events import Notice, notice_line

HOME_NAME = "$OPENHEIM_HOME"
DATA_DIR_NAME = "<data_dir>"

Folders = Sequence[tuple[str, str]]
"""Absolute folder paths and the names that stand for them in what the client is sent."""


def own_folders(settings: Settings) -> Folders:
    """openheim's own folders (the data dir and ``$OPENHEIM_HOME``) as written and resolved,
    each with its name; the data dir is named ``$OPENHEIM_HOME`` when it is that folder."""
    named: dict[str, str] = {}
    for path, name in ((settings.home, HOME_NAME), (settings.data_dir, DATA_DIR_NAME)):
        for form in (str(path), str(path.resolve())):
            named.setdefault(form, name)
    return list(named.items())


class AgentMessages:
    """The ``agent_message_chunk`` updates of one turn, each with the id of its message: the
    answer's chunks share one id until a notice comes between them; each notice has its own."""

    def __init__(self, folders: Folders = ()) -> None:
        self._answer: str | None = None
        self._names = {path.rstrip("/") or "/": name for path, name in folders}
        longest_first = sorted(self._names, key=len, reverse=True)
        # A folder's path, not the start of a longer name such as ``.openheim2``.
        alternatives = "|".join(re.escape(path) for path in longest_first if path != "/")
        self._paths = re.compile(f"(?:{alternatives})(?![\\w.-])") if alternatives else None

    def text(self, text: str) -> AgentMessageChunk:
        """A chunk of the model's answer."""
        if self._answer is None:
            self._answer = _new_id()
        return AgentMessageChunk(
            session_update="agent_message_chunk", content=text_block(text), message_id=self._answer
        )

    def notice(self, notice: Notice) -> AgentMessageChunk:
        """``notice`` as a message of its own: the line ``openheim run`` writes to stderr, with
        openheim's folders named, followed by a blank line (for clients that join messages)."""
        self._answer = None
        block = TextContentBlock(
            type="text",
            text=f"{self.without_folders(notice_line(notice))}\n\n",
            annotations=Annotations(audience=["user"]),
        )
        meta = {"openheim": {"notice": {"kind": notice.kind, "level": notice.level}}}
        return AgentMessageChunk(
            session_update="agent_message_chunk",
            content=block,
            message_id=_new_id(),
            field_meta=meta,
        )

    def without_folders(self, text: str) -> str:
        """``text`` with each of openheim's folders replaced by its name."""
        if self._paths is None:
            return text
        return self._paths.sub(lambda found: self._names[found.group()], text)


def _new_id() -> str:
    return str(uuid.uuid4())
