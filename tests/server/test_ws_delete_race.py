"""A session deleted over REST while a client resumes it: the delete and the resume cannot
both win, or the server would go on running prompts on a session the store no longer has."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from openheim.server.live import Live
from openheim.testing import FakeLLMServer
from tests.server.support import served


async def test_a_resume_during_a_delete_does_not_reopen_the_deleted_session(
    home: Path, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    closing, go_on = asyncio.Event(), asyncio.Event()
    close = Live.close

    async def held_close(live: Live) -> None:
        closing.set()
        await go_on.wait()
        await close(live)

    with FakeLLMServer(["late"]) as llm:
        async with served(home, work, llm) as server, server.socket() as ws:
            sid = (await ws.call("agent", type="open"))["session_id"]
            monkeypatch.setattr(Live, "close", held_close)
            async with server.client() as http, server.socket() as other:
                delete = asyncio.create_task(http.delete(f"/api/sessions/{sid}"))
                async with asyncio.timeout(10):
                    await closing.wait()
                resumed = await other.call("agent", type="resume", session_id=sid)
                go_on.set()
                async with asyncio.timeout(10):
                    status = (await delete).status_code
                prompt = await other.call("agent", type="prompt", session_id=sid, text="go")
            still_open = server.context.hub.get(sid) is not None
    assert status == 200
    assert resumed["type"] == "error" and prompt["type"] == "error"
    assert not still_open
