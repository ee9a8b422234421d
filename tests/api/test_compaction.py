"""Compaction against ``FakeLLMServer`` with a small context window: older turns become a
summary the model wrote once a request nears the window; a failed, cancelled or useless
summary never wedges the session; the stored history keeps every message."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from openheim.api import Runtime
from openheim.errors import ConfigError
from openheim.events import ContextCompacted, ContextTrimmed, Event
from openheim.messages import Message
from openheim.providers.context import estimate_tokens
from openheim.runtime.compaction import SUMMARY_HEAD, TRIM_NOTE, pin_prompt, request_for
from openheim.runtime.session import Session
from openheim.runtime.summary import SUMMARY_SYSTEM
from openheim.runtime.undo import undo_stored
from openheim.store import open_store, repair_history
from openheim.store.export import export_json
from openheim.testing import FakeLLMServer, FakeReply, FakeToolCall
from openheim.testing.fake_replies import RecordedRequest, Responder

WINDOW = 4000
"""Tokens; the system prompt and tools take about 1,700 of them."""
THRESHOLD = 0.8
ANSWER = " ".join(f"answer-{n}" for n in range(40))
"""About 400 characters that do not repeat (the repetition guard stops a reply that loops)."""
SUMMARY = "SUMMARY: the user asked numbered questions and got answers."


def is_summary(request: RecordedRequest) -> bool:
    return any(m.get("content") == SUMMARY_SYSTEM for m in request.messages)


def responder(summary: Callable[[RecordedRequest], FakeReply] | None = None) -> Responder:
    """Answers prompts with ``ANSWER`` and summary requests with ``summary`` (or SUMMARY)."""

    def answer(request: RecordedRequest) -> FakeReply:
        if is_summary(request):
            return summary(request) if summary else FakeReply(text=SUMMARY)
        return FakeReply(text=ANSWER)

    return answer


def configure(home: Path, server: FakeLLMServer, threshold: float = THRESHOLD) -> None:
    (home / "config.toml").write_text(
        f'default_provider = "fake"\n[providers.fake]\napi_base = "{server.base_url}"\n'
        f'default_model = "fake-model"\ncontext_window = {WINDOW}\n'
        f"[compaction]\nthreshold = {threshold}\n"
    )


@contextlib.asynccontextmanager
async def session_on(
    home: Path, work: Path, server: FakeLLMServer, threshold: float = THRESHOLD
) -> AsyncIterator[Session]:
    """A new session of a runtime configured for ``server``; both closed at the end."""
    configure(home, server, threshold)
    runtime = Runtime.from_config(cwd=work)
    try:
        async with await runtime.new_session() as session:
            yield session
    finally:
        await runtime.aclose()


async def turns(
    home: Path, work: Path, reply: Responder, count: int
) -> tuple[list[Event], FakeLLMServer]:
    """The events of ``count`` numbered prompts against a server answering with ``reply``."""
    with FakeLLMServer(default=reply) as server:
        async with session_on(home, work, server) as session:
            events = [
                e for n in range(count) for e in (await session.prompt(prompt_text(n))).events
            ]
    return events, server


def prompt_text(n: int) -> str:
    return f"question {n}: " + "tell me more " * 30


def compactions(events: list[Event]) -> list[ContextCompacted]:
    return [e for e in events if isinstance(e, ContextCompacted)]


def message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    parts = content if isinstance(content, list) else [{"text": content or ""}]
    return "".join(str(p.get("text", "")) for p in parts)


def text_of(request: RecordedRequest) -> str:
    """Every text the request sends, one message a line."""
    return "\n".join(message_text(m) for m in request.messages)


def chat_requests(server: FakeLLMServer) -> list[RecordedRequest]:
    return [r for r in server.requests if not is_summary(r)]


def estimate_next(session: Session, text: str) -> int:
    """The estimated tokens the next prompt's request would have without a new compaction."""
    history = [*session.history, Message.user(text)]
    assert session.compactor is not None
    return estimate_tokens(session.compactor.view(request_for(session.agent, history)))


async def test_compaction_starts_at_the_threshold_and_sends_the_summary(
    home: Path, work: Path
) -> None:
    with FakeLLMServer(default=responder()) as server:
        async with session_on(home, work, server) as session:
            seen: list[tuple[int, bool]] = []
            for n in range(12):
                expected = estimate_next(session, prompt_text(n))
                result = await session.prompt(prompt_text(n))
                seen.append((expected, bool(compactions(result.events))))
                assert result.stop_reason == "end_turn"
    assert any(done for _, done in seen)
    assert all(done == (tokens > THRESHOLD * WINDOW) for tokens, done in seen), seen
    last = chat_requests(server)[-1]
    assert last.messages[1]["role"] == "user"
    assert message_text(last.messages[1]).startswith(SUMMARY_HEAD.format(summary=SUMMARY))
    assert "question 0:" not in text_of(last)  # the oldest turns are only in the summary
    summarised = next(r for r in server.requests if is_summary(r))
    assert "question 0:" in text_of(summarised)


async def test_an_event_reports_tokens_before_and_after(home: Path, work: Path) -> None:
    events, _ = await turns(home, work, responder(), 10)
    found = compactions(events)
    assert found and all(e.method == "summary" and e.reason is None for e in found)
    assert all(e.after_tokens < e.before_tokens for e in found)
    assert found[0].before_tokens > THRESHOLD * WINDOW
    assert not [e for e in events if isinstance(e, ContextTrimmed)]


def _paired(request: RecordedRequest) -> bool:
    """Whether every tool message answers a call of the assistant message before it."""
    calls: set[str] = set()
    for message in request.messages:
        if message["role"] == "assistant":
            calls = {c["id"] for c in message.get("tool_calls") or []}
        elif message["role"] == "tool" and message["tool_call_id"] not in calls:
            return False
    return True


async def test_tool_calls_stay_with_their_results(home: Path, work: Path) -> None:
    (work / "notes.txt").write_text("some notes " * 40)

    def tools(request: RecordedRequest) -> FakeReply:
        if is_summary(request):
            return FakeReply(text=SUMMARY)
        if request.last_tool_result is None:
            return FakeReply(tool_calls=[FakeToolCall("read_file", {"path": "notes.txt"})])
        return FakeReply(text=ANSWER)

    events, server = await turns(home, work, tools, 8)
    assert compactions(events)
    for request in chat_requests(server):
        assert _paired(request)
        assert request.messages[0]["role"] == "system"
        assert request.messages[1]["role"] == "user"


async def test_a_failed_summary_falls_back_to_trimming(home: Path, work: Path) -> None:
    refuse = responder(lambda r: FakeReply(status=400, error_body="no summaries today"))
    with FakeLLMServer(default=refuse) as server:
        async with session_on(home, work, server) as session:
            results = [await session.prompt(prompt_text(n)) for n in range(10)]
    assert all(r.stop_reason == "end_turn" for r in results)
    found = compactions([e for r in results for e in r.events])
    assert found and found[0].method == "trim"
    assert found[0].reason is not None and "no summaries today" in found[0].reason
    assert found[0].after_tokens < found[0].before_tokens
    note = TRIM_NOTE.format(n=found[0].messages)
    assert note in text_of(chat_requests(server)[-1])


async def test_a_summary_that_is_not_smaller_is_a_trim(home: Path, work: Path) -> None:
    wordy = responder(lambda r: FakeReply(text=" ".join(f"blah{n}" for n in range(5000))))
    events, server = await turns(home, work, wordy, 10)
    found = compactions(events)
    assert found and found[0].method == "trim"
    assert found[0].reason == "the summary was not smaller than what it replaced"
    assert "blah" not in text_of(chat_requests(server)[-1])


async def test_a_cancelled_compaction_leaves_a_valid_history(home: Path, work: Path) -> None:
    hang = responder(lambda r: FakeReply(text=SUMMARY, hang_at=1))
    with FakeLLMServer(default=hang) as server:
        async with session_on(home, work, server) as session:
            n = 0
            while not any(is_summary(r) for r in server.requests):
                assert n < 20, "no compaction started"
                run = session.prompt(prompt_text(n))
                task = asyncio.ensure_future(run.result())
                summary_sent = asyncio.to_thread(_wait_summary, server, len(server.requests))
                done, _ = await asyncio.wait(
                    [task, asyncio.ensure_future(summary_sent)],
                    return_when=asyncio.FIRST_COMPLETED,
                )
                if task not in done:
                    session.cancel()
                result = await asyncio.wait_for(task, 10)
                n += 1
            assert result.stop_reason == "cancelled"
            assert not compactions(result.events)
            history = list(session.history)
            assert repair_history(history) == history and history[-1].role == "user"
            server.default = responder()
            after = await session.prompt("go on")
            assert after.stop_reason == "end_turn" and compactions(after.events)


def _wait_summary(server: FakeLLMServer, seen: int) -> None:
    """Returns once a summary request arrived after the first ``seen`` requests (bounded: the
    server's own wait gives up after 10 s, and at most two requests are waited for)."""
    for count in (seen + 1, seen + 2):
        requests = server.wait_for_requests(count, timeout=10)
        if is_summary(requests[-1]):
            return


async def test_the_stored_history_and_export_keep_everything(home: Path, work: Path) -> None:
    with FakeLLMServer(default=responder()) as server:
        async with session_on(home, work, server) as session:
            for n in range(6):
                await session.prompt(prompt_text(n))
            sid = session.id
            assert sid is not None
            with open_store(home) as store:
                exported = export_json(store, sid)
            compacted = await session.compact()
            assert compacted is not None and compacted.method == "summary"
            with open_store(home) as store:
                assert export_json(store, sid) == exported
            for n in range(6, 12):
                await session.prompt(prompt_text(n))
            live = list(session.history)
        with open_store(home) as store:
            stored = store.messages(sid)
            entries = store.compactions.entries(sid)
        assert [m.text for m in stored] == [m.text for m in live]
        assert [m.text for m in stored if m.role == "user"] == [prompt_text(n) for n in range(12)]
        assert entries and entries[-1].covered <= len(stored)
        resumed_runtime = Runtime.from_config(cwd=work)
        async with await resumed_runtime.resume_session(sid) as resumed:
            await resumed.prompt("one more")
        await resumed_runtime.aclose()
    sent = text_of(chat_requests(server)[-1])
    assert entries[-1].head in sent and "question 0:" not in sent


async def test_a_long_session_never_exceeds_the_window(home: Path, work: Path) -> None:
    with FakeLLMServer(default=responder()) as server:
        async with session_on(home, work, server) as session:
            assert session.compactor is not None
            largest = 0
            events: list[Event] = []
            for n in range(200):
                result = await session.prompt(prompt_text(n))
                assert result.stop_reason == "end_turn"
                events += result.events
                sent = session.compactor.view(request_for(session.agent, session.history[:-1]))
                largest = max(largest, estimate_tokens(sent))
            stored = len(session.history)
    assert largest <= WINDOW
    assert not [e for e in events if isinstance(e, ContextTrimmed)]
    assert len(compactions(events)) >= 10
    assert stored == 400


async def test_nothing_to_compact_in_a_one_turn_session(home: Path, work: Path) -> None:
    with FakeLLMServer(default=responder()) as server:
        async with session_on(home, work, server) as session:
            await session.prompt("hello")
            assert await session.compact() is None
    assert not any(is_summary(r) for r in server.requests)


async def test_a_pinned_prompt_is_sent_verbatim_after_compaction(home: Path, work: Path) -> None:
    with FakeLLMServer(default=responder()) as server:
        async with session_on(home, work, server) as session:
            with pytest.raises(ConfigError, match="no prompt of yours to pin"):
                pin_prompt(session)
            await session.prompt("always answer in French")
            assert pin_prompt(session).text == "always answer in French"
            with pytest.raises(ConfigError, match="message 1 is not a prompt of yours"):
                pin_prompt(session, 1)  # the answer
            for n in range(4):
                await session.prompt(prompt_text(n))
            assert await session.compact() is not None
            sid = session.id
        assert sid is not None
        configure(home, server)
        runtime = Runtime.from_config(cwd=work)
        async with await runtime.resume_session(sid) as resumed:  # the pin is stored
            await resumed.prompt("and now?")
        await runtime.aclose()
    sent = text_of(chat_requests(server)[-1])
    assert "always answer in French" in sent and "question 0:" not in sent
    assert "[Pinned by the user" in sent


async def test_a_pinned_prompt_survives_compaction_in_the_live_session(
    home: Path, work: Path
) -> None:
    with FakeLLMServer(default=responder()) as server:
        async with session_on(home, work, server) as session:
            await session.prompt("always answer in French")
            pin_prompt(session)
            for n in range(4):
                await session.prompt(prompt_text(n))
            assert await session.compact() is not None
            await session.prompt("and now?")
    sent = text_of(chat_requests(server)[-1])
    assert "always answer in French" in sent and "question 0:" not in sent
    assert "[Pinned by the user" in sent and SUMMARY in sent


async def test_a_summary_too_big_for_one_request_is_chunked(home: Path, work: Path) -> None:
    def numbered(request: RecordedRequest) -> FakeReply:
        count = sum(is_summary(r) for r in server.requests)
        return FakeReply(text=f"SUMMARY {count}") if is_summary(request) else FakeReply(ANSWER)

    with FakeLLMServer(default=numbered) as server:
        async with session_on(home, work, server, threshold=0) as session:  # only on demand
            for n in range(12):
                await session.prompt(prompt_text(n))
            done = await session.compact()
            assert session.compactor is not None
            head = session.compactor.head
    asked = [r for r in server.requests if is_summary(r)]
    assert len(asked) >= 2 and done is not None and done.method == "summary"
    for number, request in enumerate(asked[1:], 1):  # each carries the summary so far
        assert f"Summary of what came before:\nSUMMARY {number}" in text_of(request)
        assert len(text_of(request)) // 4 < WINDOW * 0.6
    assert head == SUMMARY_HEAD.format(summary=f"SUMMARY {len(asked)}")
    everything = "\n".join(text_of(r) for r in asked)
    assert all(f"question {n}:" in everything for n in range(11))  # the latest turn is kept
    assert "question 11:" not in everything


async def test_the_stored_summary_is_redacted(home: Path, work: Path) -> None:
    key = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"
    leaky = responder(lambda r: FakeReply(text=f"the user's key is {key}"))
    with FakeLLMServer(default=leaky) as server:
        async with session_on(home, work, server, threshold=0) as session:
            for n in range(3):
                await session.prompt(prompt_text(n))
            assert await session.compact() is not None
            sid = session.id
    assert sid is not None
    with open_store(home) as store:
        [entry] = store.compactions.entries(sid)
    assert key not in entry.head and "[REDACTED]" in entry.head


async def test_an_undo_below_the_cut_ends_the_compaction(home: Path, work: Path) -> None:
    with FakeLLMServer(default=responder()) as server:
        async with session_on(home, work, server, threshold=0) as session:
            for n in range(4):
                await session.prompt(prompt_text(n))
            compacted = await session.compact()
            assert compacted is not None and compacted.messages == 6
            sid = session.id
            assert sid is not None
            _, report = undo_stored(home, sid, "", turns=3)  # back to after the first turn
            del session.history[report.kept_messages :]  # as the chat's :undo does
            for n in range(3):  # the history grows past the old cut again
                await session.prompt(f"after the undo {n}")
            live = text_of(chat_requests(server)[-1])
        configure(home, server, threshold=0)
        runtime = Runtime.from_config(cwd=work)
        async with await runtime.resume_session(sid) as resumed:
            await resumed.prompt("resumed")
        await runtime.aclose()
    resumed_text = text_of(chat_requests(server)[-1])
    for sent in (live, resumed_text):
        assert "[Summary" not in sent and "question 0:" in sent and "question 1:" not in sent
