"""Prompt templates: ``{{name}}`` placeholders, the arguments a prompt declares, and expansion.

A prompt's text may hold placeholders: ``{{input}}`` is the text the user gives with the
prompt (on the command line, after a slash command, from stdin), every other ``{{name}}`` an
argument. A prompt declares its arguments in its frontmatter, each with an optional default,
description and ``required`` flag; a placeholder that is not declared is a required argument.
Expansion fills every placeholder and fails, naming them all, when a required argument is
missing; text given with a prompt that has no ``{{input}}`` follows the expanded text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from openheim.errors import ConfigError

INPUT = "input"
PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_-]*)\s*\}\}")
ARG_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


@dataclass(frozen=True, slots=True)
class Argument:
    """One declared argument: its default (None: none) and whether it must be given."""

    name: str
    default: str | None = None
    required: bool = True
    description: str = ""


def placeholders(text: str) -> list[str]:
    """The placeholder names in ``text``, each once, in order of first use."""
    return list(dict.fromkeys(m.group(1) for m in PLACEHOLDER.finditer(text)))


def parse_arguments(raw: object, where: str) -> tuple[Argument, ...]:
    """The ``arguments`` of a frontmatter: ``"lang, focus=speed"`` (a name alone is required,
    ``name=value`` has a default) or a TOML table of ``{default, required, description}``."""
    if raw is None:
        return ()
    if isinstance(raw, str):
        return tuple(_from_word(word.strip(), where) for word in raw.split(",") if word.strip())
    if isinstance(raw, Mapping):
        return tuple(_from_table(str(name), spec, where) for name, spec in raw.items())
    raise ConfigError(
        f"{where}: arguments must be a string or a table",
        hint='write arguments = "name, other=default" or [arguments.NAME] tables',
    )


def _checked(name: str, where: str) -> str:
    if not ARG_NAME.fullmatch(name) or name == INPUT:
        raise ConfigError(
            f"{where}: {name!r} cannot name an argument",
            hint="use letters, digits, '_' and '-' (and not 'input', which is the prompt's text)",
        )
    return name


def _from_word(word: str, where: str) -> Argument:
    name, eq, default = word.partition("=")
    name = _checked(name.strip(), where)
    return Argument(name, default.strip(), False) if eq else Argument(name)


def _from_table(name: str, spec: object, where: str) -> Argument:
    _checked(name, where)
    if not isinstance(spec, Mapping) or set(spec) - {"default", "required", "description"}:
        raise ConfigError(
            f"{where}: argument {name!r} must be a table of default, required and description",
            hint=f'write [arguments.{name}] with default = "...", required = true or false',
        )
    default = spec.get("default")
    required = spec.get("required", default is None)
    return Argument(
        name,
        None if default is None else str(default),
        bool(required),
        str(spec.get("description", "")),
    )


def all_arguments(text: str, declared: Sequence[Argument]) -> list[Argument]:
    """The declared arguments, then every other placeholder as a required argument."""
    known = {a.name for a in declared}
    extra = [Argument(n) for n in placeholders(text) if n != INPUT and n not in known]
    return [*declared, *extra]


def expand(
    name: str,
    text: str,
    declared: Sequence[Argument],
    given: Mapping[str, str],
    user_input: str = "",
) -> str:
    """``text`` with its placeholders filled; ConfigError naming every missing argument or
    every unknown one given."""
    arguments = all_arguments(text, declared)
    unknown = sorted(set(given) - {a.name for a in arguments})
    if unknown:
        known = ", ".join(a.name for a in arguments) or "none"
        raise ConfigError(
            f"prompt {name!r} has no argument {', '.join(repr(u) for u in unknown)} "
            f"(its arguments: {known})",
            hint="pass only the prompt's arguments with --arg NAME=VALUE",
        )
    values = {a.name: a.default or "" for a in arguments if not a.required}
    values.update(given)
    missing = [a.name for a in arguments if a.required and a.name not in given]
    if missing:
        raise ConfigError(
            f"prompt {name!r} needs the argument{'s' if len(missing) > 1 else ''} "
            f"{', '.join(missing)}",
            hint=" ".join(f"--arg {m}=VALUE" for m in missing),
        )
    values[INPUT] = user_input
    expanded = PLACEHOLDER.sub(lambda m: values.get(m.group(1), ""), text).strip()
    if user_input.strip() and INPUT not in placeholders(text):
        expanded = f"{expanded}\n\n{user_input.strip()}"
    return expanded


def parse_given(pairs: Sequence[str]) -> dict[str, str]:
    """``NAME=VALUE`` strings (``--arg``) as a mapping; ConfigError for one without ``=``."""
    out: dict[str, str] = {}
    for pair in pairs:
        name, eq, value = pair.partition("=")
        if not eq or not name.strip():
            raise ConfigError(f"--arg {pair!r} is not NAME=VALUE", hint="write --arg lang=python")
        out[name.strip()] = value
    return out
