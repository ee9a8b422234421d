"""A stored session closed and opened again at once goes on numbering its frames where it left
off, though its last frames may not have reached the store's frame log yet."""

from __future__ import annotations

from pathlib import Path

from openheim.config.load import Overrides, load_settings
from openheim.runtime import Runtime, SessionOptions
from openheim.server.hub import Hub
from openheim.testing import FakeLLMServer
from tests.server.support import write_config


async def test_a_session_reopened_at_once_numbers_on(home: Path, work: Path) -> None:
    with FakeLLMServer([]) as llm:
        write_config(home, llm, "", "")
        settings = load_settings(
            Overrides(work_dir=str(work)), cwd=work, env={"OPENHEIM_HOME": str(home)}
        )
        runtime = Runtime(settings=settings)
        store = runtime.shared.borrow_store(settings.data_dir)
        hub = Hub(runtime, store)
        live = await hub.open(SessionOptions())
        key = live.key
        for n in range(3):
            live.publish("note", {"n": n})
        await hub.forget(key)
        again = await hub.open(SessionOptions(resume=key))
        seq = again.seq
        again.publish("note", {"n": 3})
        await hub.close_all()
        frames = list(store.frames.after(key, 0))
        runtime.shared.give_back(store)
    assert seq == 3
    assert [n for n, _ in frames] == [1, 2, 3, 4]
    assert [f'"n": {n}' in text for n, (_, text) in enumerate(frames)] == [True] * 4
