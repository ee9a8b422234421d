"""openheim.acp.notices: the agent's answer and each notice as separate ACP messages (their
chunks' ``messageId``), and openheim's own folders named, never shown, in a notice."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from openheim.acp.notices import AgentMessages, own_folders
from openheim.config.load import Overrides, load_settings
from openheim.events import Notice

HOME = "/home/alice/.openheim"
FOLDERS = [(HOME, "$OPENHEIM_HOME"), ("/srv/openheim-data", "<data_dir>")]


def wire(model: BaseModel) -> dict[str, Any]:
    """The JSON shape a client receives."""
    return model.model_dump(by_alias=True, exclude_none=True)


@pytest.mark.parametrize(
    ("notice", "text"),
    [
        (Notice("added guidance", "warning"), "note: added guidance\n\n"),
        (
            Notice("MCP server 'x' is down", "warning", "mcp"),
            "openheim: MCP server 'x' is down\n\n",
        ),
    ],
)
def test_a_notice_is_text_for_the_user_marked_as_a_notice(notice: Notice, text: str) -> None:
    update = wire(AgentMessages().notice(notice))
    assert update["sessionUpdate"] == "agent_message_chunk"
    assert update["content"] == {
        "type": "text",
        "text": text,
        "annotations": {"audience": ["user"]},
    }
    assert update["_meta"] == {"openheim": {"notice": {"kind": notice.kind, "level": notice.level}}}


def test_the_answer_is_one_message_and_each_notice_another() -> None:
    messages = AgentMessages()
    first, second = messages.text("Hel"), messages.text("lo")
    notice = messages.notice(Notice("a hook failed", "warning", "loop"))
    other = messages.notice(Notice("another", "warning", "loop"))
    after = messages.text("More.")
    ids = [u.message_id for u in (first, second, notice, other, after)]
    assert all(ids)
    assert ids[0] == ids[1]  # one answer, one message
    assert len({ids[0], ids[2], ids[3], ids[4]}) == 4  # each notice apart; the answer resumes anew
    assert AgentMessages().text("x").message_id != ids[0]  # every turn's answer is its own


@pytest.mark.parametrize(
    ("message", "shown"),
    [
        (f"{HOME}/system.md is empty", "$OPENHEIM_HOME/system.md is empty"),
        (
            f"cannot read {HOME}/skills/a.md: denied",
            "cannot read $OPENHEIM_HOME/skills/a.md: denied",
        ),
        (f"'{HOME}' is not writable", "'$OPENHEIM_HOME' is not writable"),
        (f"{HOME}", "$OPENHEIM_HOME"),
        ("/srv/openheim-data/agents/x.md: bad", "<data_dir>/agents/x.md: bad"),
        (f"{HOME}2/other is not ours", f"{HOME}2/other is not ours"),
        (f"{HOME}-old/x is not ours", f"{HOME}-old/x is not ours"),
        (f"{HOME}.bak is not ours", f"{HOME}.bak is not ours"),
        ("/home/alice/project/a.py changed", "/home/alice/project/a.py changed"),
        (f"{HOME}/a and {HOME}/b", "$OPENHEIM_HOME/a and $OPENHEIM_HOME/b"),
    ],
)
def test_a_notice_names_openheims_folders_instead_of_showing_them(message: str, shown: str) -> None:
    update = AgentMessages(FOLDERS).notice(Notice(message, "warning", "skills"))
    assert update.content.text == f"openheim: {shown}\n\n"


def test_a_data_dir_inside_the_home_has_its_own_name() -> None:
    folders = [(HOME, "$OPENHEIM_HOME"), (f"{HOME}/data", "<data_dir>")]
    update = AgentMessages(folders).notice(Notice(f"{HOME}/data/x and {HOME}/y", "info", "agents"))
    assert update.content.text == "openheim: <data_dir>/x and $OPENHEIM_HOME/y\n\n"


def test_own_folders_are_the_home_and_the_data_dir_as_written_and_resolved(
    tmp_path: Path,
) -> None:
    real = tmp_path / "real-home"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    loaded = load_settings(Overrides(), cwd=tmp_path, env={"OPENHEIM_HOME": str(real)})
    settings = dataclasses.replace(loaded, home=link, data_dir=link)
    assert dict(own_folders(settings)) == {str(link): "$OPENHEIM_HOME", str(real): "$OPENHEIM_HOME"}
    data = tmp_path / "data"
    moved = dict(own_folders(dataclasses.replace(settings, data_dir=data)))
    assert moved == {
        str(link): "$OPENHEIM_HOME",
        str(real): "$OPENHEIM_HOME",
        str(data): "<data_dir>",
    }
