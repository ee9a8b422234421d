"""The grammars that constrain llama.cpp's decoding of a request (``llama_cpp`` asks for one).

- ``envelope_grammar``: with an envelope schema on the request, "prose, then maybe one envelope
  block" (the block alone when a tool call is required), so every reply parses.
- ``answer_grammar``: with ``answer_items`` on the request (a started answer that lists a
  folder, see ``openheim.envelope.answer``), the reply continues with entries of that list
  only, in its order, each at most once, separated by ``, `` and ended by ``.``. It is an
  allow-list: the model picks which names to give and where to stop, but cannot give a name
  that is not in the list, give one twice, or write on after the list. Continuing a 30-entry
  listing unconstrained, SmolLM2-135M made up ``pyproject.yaml`` and then repeated itself.
  The grammar leaves the model its own habits where they are harmless: a line break may come
  first (its first token after the opening's space) and a folder's ``/`` may be left out.
  Without those two, it named 1 of 20 entries: barred from its first choice, it jumped to a
  name further down the list.

Names reach the grammar as GBNF string literals: printable ASCII other than ``"`` and ``\\``
is kept, every other character is written as a ``\\U`` escape of its code point, so a file
name cannot break out of its literal.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from openheim.providers.base import ENVELOPE_FENCE, ModelRequest

if TYPE_CHECKING:
    from llama_cpp.llama_grammar import LlamaGrammar

_KEPT = frozenset(chr(c) for c in range(0x20, 0x7F)) - {'"', "\\"}
"""Characters a GBNF literal holds as they are; every other one is escaped."""


def request_grammar(request: ModelRequest) -> LlamaGrammar | None:
    """The grammar ``request`` asks for, or None when its decoding is free."""
    return envelope_grammar(request) or answer_grammar(request)


def envelope_grammar(request: ModelRequest) -> LlamaGrammar | None:
    """A grammar for "prose, then maybe one envelope block" (the block alone when required)."""
    if request.envelope_schema is None:
        return None
    from llama_cpp.llama_grammar import LlamaGrammar, json_schema_to_gbnf

    body = json_schema_to_gbnf(json.dumps(dict(request.envelope_schema)))
    body = re.sub(r"^root ::=", "envelope ::=", body, count=1, flags=re.MULTILINE)
    block = f'"```{ENVELOPE_FENCE}\\n" envelope "\\n```"'
    required = request.tool_choice != "auto"
    root = f"root ::= {block}" if required else f"root ::= prose ({block})?\nprose ::= [^`]*"
    return LlamaGrammar.from_string(f"{root}\n{body}", verbose=False)


def answer_grammar(request: ModelRequest) -> LlamaGrammar | None:
    """The grammar for a reply that lists some of ``request.answer_items`` (see the module
    docstring), or None when the request has none."""
    if not request.answer_items:
        return None
    from llama_cpp.llama_grammar import LlamaGrammar

    return LlamaGrammar.from_string(selection_gbnf(request.answer_items), verbose=False)


def selection_gbnf(items: Sequence[str]) -> str:
    """GBNF for one or more of ``items`` in their order, each at most once, joined by ``, ``
    and ended by ``.``. Rule ``iK`` is "the selection goes on from item K": item K and then
    ``tK``, or item K left out; ``tK`` is "after item K": ``, `` and a later one, or the end."""
    last = len(items) - 1
    rules = ['root ::= "\\n"? i0']
    for k, item in enumerate(items):
        skip = f" | i{k + 1}" if k < last else ""
        more = f'", " i{k + 1} | ' if k < last else ""
        rules.append(f"i{k} ::= {_entry(item)} t{k}{skip}")
        rules.append(f't{k} ::= {more}"."')
    return "\n".join(rules) + "\n"


def _entry(item: str) -> str:
    """An item in GBNF: a folder's trailing ``/`` may be left out (``build`` names ``build/``
    as well; the model often writes folders so)."""
    if len(item) > 1 and item.endswith("/"):
        return f'{literal(item[:-1])} "/"?'
    return literal(item)


def literal(text: str) -> str:
    """``text`` as a GBNF string literal (see the module docstring)."""
    body = "".join(c if c in _KEPT else f"\\U{ord(c):08X}" for c in text)
    return f'"{body}"'
