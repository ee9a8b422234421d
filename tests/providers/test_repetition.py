"""The repetition guard: degenerate replies are stopped mid-stream, on every provider kind, and
text that repeats for good reason is not."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from openheim.config.load import load_settings
from openheim.events import Notice, TextDelta, ThinkingDelta
from openheim.messages import Message, TextBlock
from openheim.providers.base import ModelRequest, ModelResponse, ProviderSettings, StreamItem
from openheim.providers.repetition import REPETITION, RepetitionDetector, RepetitionGuard
from openheim.runtime.provider import build_provider
from openheim.testing import FakeLLMServer, FakeReply, Reply, ScriptedProvider
from tests.cli.test_cli import configure, openheim

NAMES = [f"{w}_{i}" for i, w in enumerate(["alpha", "bravo", "charlie", "delta", "echo"] * 8)]
PYTHON = "\n".join(
    f"def check_{n}(value):\n    if value is None:\n        return None\n    if not value:\n"
    f"        return None\n    return value.{n}\n"
    for n in NAMES[:12]
)
C_CODE = (
    "int main(void) {\n"
    + "".join(
        f"    if (x == {i}) {{\n        for (;;) {{\n            y += {i};\n            break;\n"
        "        }\n    }\n"
        for i in range(15)
    )
    + "    return 0;\n}\n"
)
VERSE = "Row, row, row your boat\nGently down the stream\n"
QUOTE = 'The README says: "It reliably makes one tool call and answers from the result."\n'
SECTIONS = "".join(f"### Option {n}\nPros:\n- fast\nCons:\n- {n} is new\n\n" for n in NAMES[:8])

DEGENERATE: list[tuple[str, str]] = [
    ("same line", "The folder holds:\n" + "- tests/\n" * 200),
    ("numbered same item", "".join(f"{i}. tests/\n" for i in range(1, 200))),
    ("phrase in one line", "The files are " + "and the file and " * 100),
    ("block of lines", "Here:\n" + "The folder holds:\nREADME.md\nsrc/\n" * 40),
    ("line among others", "".join(f"- tests/\n- {n}.md\n" for n in NAMES)),
    ("code loop", "```python\n" + "    x = compute(x)\n" * 100),
    ("single word", "tests " * 200),
    ("indented list item", "".join(f"  - tests/\n  - {n}/\n" for n in NAMES)),
]

LEGITIMATE: list[tuple[str, str]] = [
    (
        "table of similar rows",
        "| file | lines |\n|---|---|\n"
        + "".join(f"| {n}.py | {i * 7} |\n" for i, n in enumerate(NAMES)),
    ),
    ("list with a shared prefix", "".join(f"- tests/test_{n}.py\n" for n in NAMES)),
    ("numbered similar items", "".join(f"{i}. Add a test for {n}\n" for i, n in enumerate(NAMES))),
    ("fenced code with repeated lines", f"Here it is:\n```python\n{PYTHON}```\nDone.\n"),
    ("unfenced code with repeated lines", PYTHON),
    ("closing braces", f"```c\n{C_CODE}```\n"),
    ("a quote given twice", QUOTE + "That is about one call.\n" * 1 + QUOTE + "So it holds.\n"),
    ("a chorus three times", "".join(f"{VERSE}Verse {n} goes here.\n" for n in NAMES[:3])),
    ("rules and separators", "Title\n" + "=" * 300 + "\n" + "-" * 300 + "\nText.\n"),
    ("sections with the same headings", SECTIONS),
    (
        "a long varied answer",
        " ".join(f"Sentence {i} talks about {n}." for i, n in enumerate(NAMES * 3)),
    ),
]


def fed(text: str, size: int = 4) -> RepetitionDetector:
    detector = RepetitionDetector()
    for start in range(0, len(text), size):
        if detector.feed(text[start : start + size]):
            break
    return detector


@pytest.mark.parametrize("text", [t for _, t in DEGENERATE], ids=[n for n, _ in DEGENERATE])
def test_degenerate_text_is_caught(text: str) -> None:
    assert fed(text).found is not None


@pytest.mark.parametrize("text", [t for _, t in LEGITIMATE], ids=[n for n, _ in LEGITIMATE])
@pytest.mark.parametrize("size", [1, 4, 4096])
def test_text_that_repeats_for_good_reason_passes(text: str, size: int) -> None:
    assert fed(text, size).found is None


def test_a_loop_is_caught_within_a_few_hundred_characters() -> None:
    text = "The folder holds:\n" + "- tests/\n" * 200
    detector = RepetitionDetector()
    seen = 0
    for char in text:
        seen += 1
        if detector.feed(char):
            break
    assert seen < 300 and detector.found is not None and "'tests/'" in detector.found


Step = Callable[[ModelRequest], AsyncIterator[StreamItem]]


def endless(piece: str, thinking: bool = False) -> tuple[list[int], Step]:
    """A scripted step streaming ``piece`` without end; ``sent[0]`` counts what it sent."""
    sent = [0]

    async def step(request: ModelRequest) -> AsyncIterator[StreamItem]:
        for _ in itertools.count():
            sent[0] += 1
            yield ThinkingDelta(piece) if thinking else TextDelta(piece)
            if sent[0] > 100_000:  # bound: the guard must have stopped long before
                break
        yield ModelResponse(Message.assistant("never"), "end_turn")

    return sent, step


async def drain(provider: RepetitionGuard) -> list[StreamItem]:
    request = ModelRequest("m", (Message.user("list"),))
    return [item async for item in provider.stream(request)]


@pytest.mark.parametrize("thinking", [False, True], ids=["text", "thinking"])
async def test_the_guard_stops_an_endless_stream_and_says_what_to_do(thinking: bool) -> None:
    sent, step = endless("- tests/\n", thinking)
    items = await drain(RepetitionGuard(ScriptedProvider([step])))
    assert sent[0] < 40
    *_, notice, response = items
    assert isinstance(notice, Notice) and notice.level == "warning"
    assert "repeating itself" in notice.message and "openheim models add" in notice.message
    assert isinstance(response, ModelResponse)
    assert (response.finish, response.raw_finish) == ("repetition", REPETITION)
    body = response.message.content[0]
    assert (body.thinking if thinking else body.text).startswith("- tests/\n- tests/")  # type: ignore[union-attr]


async def test_a_healthy_stream_passes_untouched() -> None:
    text = LEGITIMATE[0][1]
    chunks = [text[i : i + 5] for i in range(0, len(text), 5)]
    items = await drain(RepetitionGuard(ScriptedProvider([Reply(chunks=chunks)])))
    assert not any(isinstance(i, Notice) for i in items)
    response = items[-1]
    assert isinstance(response, ModelResponse) and response.finish == "end_turn"
    assert response.message.content == (TextBlock(text),)


@pytest.mark.parametrize("kind", ["openai", "anthropic", "gemini"])
async def test_every_session_provider_stops_a_repeating_stream(kind: str, tmp_path: Path) -> None:
    settings = load_settings(None, cwd=tmp_path, env={"OPENHEIM_HOME": str(tmp_path)})
    with FakeLLMServer([FakeReply(chunks=["- tests/\n"] * 5000)]) as server:
        base = server.base_url
        base = base.removesuffix("/v1") + "/v1beta" if kind == "gemini" else base
        chosen = ProviderSettings("fake", kind, base, "m", api_key="k" * 12, max_retries=0)
        provider = build_provider(settings, chosen)
        try:
            request = ModelRequest("m", (Message.user("list"),))
            items = [item async for item in provider.stream(request)]
        finally:
            await provider.aclose()
    response = items[-1]
    assert isinstance(response, ModelResponse) and response.finish == "repetition"
    assert len(response.message.text) < 400  # stopped after a few dozen of the 5000 lines
    assert any(isinstance(i, Notice) and "repeating itself" in i.message for i in items)


def test_a_repeating_run_exits_8_and_says_what_to_do(home: Path, work: Path) -> None:
    with FakeLLMServer([FakeReply(chunks=["The files are:\n", *["- tests/\n"] * 3000])]) as server:
        configure(home, server)
        done = openheim("run", "--no-session", "list the files", home=home, cwd=work)
    assert done.returncode == 8, done.stderr
    assert done.stdout.count("- tests/") < 40
    assert "openheim: the model started repeating itself (the line 'tests/' 5 times" in done.stderr
    assert "openheim models add" in done.stderr
    assert done.stderr.rstrip().endswith("stopped: max_tokens (repetition)")
