"""Templates as slash commands, the same in the chat and over ACP: ``/NAME [ARG=VALUE ...]
TEXT`` expands the template ``NAME`` with those arguments and ``TEXT`` as ``{{input}}``.

Only prompts that hold placeholders are commands, and a name a surface already uses (its own
commands, the skills) keeps its meaning. The leading ``ARG=VALUE`` words are taken as
arguments only when ``ARG`` is one of the template's; everything after is the input.
"""

from __future__ import annotations

from collections.abc import Collection

from openheim.prompts.library import NAME, NamedPrompt, PromptLibrary
from openheim.prompts.template import all_arguments, expand


def templates(library: PromptLibrary, taken: Collection[str] = ()) -> list[NamedPrompt]:
    """The library's templates whose names are not ``taken``, by name."""
    return [p for p in library.available() if p.is_template and p.name not in taken]


def expand_template_command(
    text: str, library: PromptLibrary, taken: Collection[str] = ()
) -> str | None:
    """The expanded template when ``text`` is ``/NAME ...`` naming one; else None. A missing
    required argument is a ConfigError naming it."""
    if not text.startswith("/"):
        return None
    name, _, rest = text[1:].partition(" ")
    if not NAME.fullmatch(name) or name in taken:
        return None
    found = [p for p in templates(library, taken) if p.name == name]
    if not found:
        return None
    prompt = found[0]
    names = {a.name for a in all_arguments(prompt.text, prompt.arguments)}
    given: dict[str, str] = {}
    words = rest.strip().split(" ")
    while words and (pair := words[0].partition("="))[1] and pair[0] in names:
        given[pair[0]] = pair[2]
        words.pop(0)
    return expand(prompt.name, prompt.text, prompt.arguments, given, " ".join(words).strip())
