"""StreamRedactor and the CLI renderers: a secret split over streamed deltas is still redacted.

Every case of the secret list (``secret_cases``) is streamed in pieces of every size from 1 to
its whole length; the joined output must equal the redaction of the whole text.
"""

from __future__ import annotations

import io
import json
import random

import pytest

from openheim.events import Finished, TextDelta, ThinkingDelta, ToolCall
from openheim.redaction.secrets import REDACTED, Redactor
from openheim.redaction.stream import StreamRedactor
from openheim.term.render import JsonRenderer, TextRenderer
from tests.safety.secret_cases import FORMATS, PREFIXED, REGISTERED

TEXTS = {
    **{name: f"before {secret} after\nnext line" for name, secret in FORMATS.items()},
    **{name: f"the value {secret}, said twice: {secret}." for name, secret in REGISTERED.items()},
    **{name: f"{prefix}{rest} tail" for name, (prefix, rest) in PREFIXED.items()},
    "lookalike in a word": "disk-usage-monitoring-service-and-more",
    "too long for an AWS key": "AKIAIOSFODNN7EXAMPLEX and more",
    "plain prose": "Nothing secret here: ask about 'sk-' prefixes, or https://example.com/a.",
}


@pytest.fixture
def redactor() -> Redactor:
    redactor = Redactor()
    for value in REGISTERED.values():
        redactor.add(value)
    return redactor


def streamed(redactor: Redactor, pieces: list[str]) -> str:
    stream = StreamRedactor(redactor)
    return "".join(stream.feed(p) for p in pieces) + stream.flush()


def split(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


@pytest.mark.parametrize("text", TEXTS.values(), ids=TEXTS.keys())
def test_every_piece_size_gives_the_whole_redaction(redactor: Redactor, text: str) -> None:
    whole = redactor.redact(text)
    for size in range(1, len(text) + 1):
        assert streamed(redactor, split(text, size)) == whole, f"pieces of {size}"


@pytest.mark.parametrize("text", TEXTS.values(), ids=TEXTS.keys())
def test_random_cuts_give_the_whole_redaction(redactor: Redactor, text: str) -> None:
    rng = random.Random(text)
    whole = redactor.redact(text)
    for _ in range(50):
        cuts = sorted(rng.sample(range(1, len(text)), k=min(len(text) - 1, rng.randint(1, 12))))
        pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
        assert streamed(redactor, pieces) == whole, cuts


def test_the_table_holds_secrets(redactor: Redactor) -> None:
    """Each secret case is redacted at all (or the tests above would prove nothing)."""
    harmless = {"lookalike in a word", "too long for an AWS key", "plain prose"}
    for name, text in TEXTS.items():
        assert (redactor.redact(text) != text) is (name not in harmless), name


def test_nothing_of_a_secret_is_let_out_before_it_is_whole(redactor: Redactor) -> None:
    key = REGISTERED["provider key of no known format"]
    stream = StreamRedactor(redactor)
    shown = stream.feed("my key: " + key[:-1])
    assert shown == "my key: "
    assert stream.feed(key[-1] + " end") + stream.flush() == REDACTED + " end"


def test_prose_is_let_out_at_once(redactor: Redactor) -> None:
    stream = StreamRedactor(redactor)
    fed = shown = ""
    for word in ["Here", "is", "the", "plan:", "read", "a", "file,", "then", "fix", "the", "bug."]:
        fed += word + " "
        shown += stream.feed(word + " ")
        assert len(fed) - len(shown) <= 1, (fed, shown)  # at most a letter that may begin a key
    assert shown + stream.flush() == fed


def test_text_renderer_prints_a_key_streamed_in_pieces_redacted() -> None:
    key = FORMATS["anthropic"]
    out, err = io.StringIO(), io.StringIO()
    render = TextRenderer(out, err)
    for piece in split(f"The key is {key}, keep it safe.", 7):
        render(TextDelta(piece))
    assert key[:12] not in out.getvalue()
    render(ToolCall("c1", "read_file", {"path": "x"}))  # shows what it held back first
    render(Finished("end_turn"))
    assert out.getvalue() == f"The key is {REDACTED}, keep it safe.\n"
    assert err.getvalue().startswith("→ read_file")


def test_json_renderer_joined_deltas_are_redacted_in_order() -> None:
    key = FORMATS["github classic"]
    out = io.StringIO()
    render = JsonRenderer(out)
    render(ThinkingDelta(f"thinking of {key[:9]}"))
    render(ThinkingDelta(key[9:]))
    for piece in split(f"Use {key} now", 7):
        render(TextDelta(piece))
    render(Finished("end_turn", text=f"Use {key} now"))
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert key not in out.getvalue() and key[:10] not in out.getvalue()
    kinds = [line["type"] for line in lines]
    assert kinds.index("text_delta") > max(i for i, k in enumerate(kinds) if k == "thinking_delta")
    assert kinds[-1] == "finished" and lines[-1]["text"] == f"Use {REDACTED} now"
    thinking = "".join(line["text"] for line in lines if line["type"] == "thinking_delta")
    text = "".join(line["text"] for line in lines if line["type"] == "text_delta")
    assert (thinking, text) == (f"thinking of {REDACTED}", f"Use {REDACTED} now")
    assert all(line["text"] for line in lines if line["type"].endswith("_delta"))


def test_plain_deltas_skip_the_full_search(
    redactor: Redactor, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A delta with no trigger, no registered value and no beginning of one at its end goes
    out without the pass per format; one that ends in a trigger's beginning does not."""
    searched: list[str] = []
    full = StreamRedactor._emit

    def counted(self: StreamRedactor, *, flush: bool) -> str:
        searched.append(self._pending)
        return full(self, flush=flush)

    monkeypatch.setattr(StreamRedactor, "_emit", counted)
    stream = StreamRedactor(redactor)
    assert stream.feed("s12.3| ") == "s12.3| "
    assert stream.feed("plain words. ") == "plain words. "
    assert searched == []
    assert stream.feed("then ask") == "then a"  # "sk" may begin "sk-"
    assert searched == ["then ask"]
