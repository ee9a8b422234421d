"""The grammar that holds a started listing answer to the listing's names, whatever the names
are."""

from __future__ import annotations

import pytest

from openheim.messages import Message
from openheim.providers.base import ModelRequest
from openheim.providers.llama_grammars import (
    answer_grammar,
    literal,
    request_grammar,
    selection_gbnf,
)


@pytest.mark.parametrize(
    ("name", "written"),
    [
        ("README.md", '"README.md"'),
        ("src/", '"src/"'),
        ('say "hi".txt', '"say \\U00000022hi\\U00000022.txt"'),
        ("back\\slash", '"back\\U0000005Cslash"'),
        ("new\nline", '"new\\U0000000Aline"'),
        ("tab\there", '"tab\\U00000009here"'),
        ("café", '"caf\\U000000E9"'),
        ("📁", '"\\U0001F4C1"'),
        ("] ::= x", '"] ::= x"'),
    ],
)
def test_a_name_is_one_literal_whatever_its_characters(name: str, written: str) -> None:
    assert literal(name) == written


def test_the_selection_goes_forward_through_the_items_and_ends_with_a_full_stop() -> None:
    """It may start on a new line (after the opening's space, the model's first token); a
    folder's ``/`` may be left out; nothing else can be written."""
    assert selection_gbnf(["a", "b/", "/"]) == (
        'root ::= "\\n"? i0\n'
        'i0 ::= "a" t0 | i1\n'
        't0 ::= ", " i1 | "."\n'
        'i1 ::= "b" "/"? t1 | i2\n'
        't1 ::= ", " i2 | "."\n'
        'i2 ::= "/" t2\n'
        't2 ::= "."\n'
    )


def request(items: tuple[str, ...]) -> ModelRequest:
    messages = (Message.user("What is here?"), Message.assistant("The folder . holds: "))
    return ModelRequest("m", messages, tool_choice="none", answer_items=items)


def test_a_request_with_items_gets_their_selection_grammar() -> None:
    """The names reach llama.cpp only as literals of ``selection_gbnf`` (the real-model tests
    decode with hostile ones)."""
    items = ('q"uote', "back\\slash", "new\nline", "] ::= x | y")
    grammar = request_grammar(request(items))
    assert grammar is not None and grammar._grammar == selection_gbnf(items)


def test_no_items_no_grammar() -> None:
    assert answer_grammar(request(())) is None and request_grammar(request(())) is None
