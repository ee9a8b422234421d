"""Commands that run other commands, seen through so the command that finally runs is checked.

``expand`` turns ``sudo -u root rm -rf /``, ``env A=1 rm …``, ``timeout 5 rm …``, ``xargs rm …``,
``nice``/``nohup``/``time``/``exec``/``command`` and friends into the wrapped command, and
``sh -c 'SCRIPT'`` / ``bash -lc …`` / ``eval WORDS`` into the commands of the script. Deny rules
and the risk checks look at the result, so ``deny command rm`` also stops ``sudo rm``. A script
built at run time (``sh -c "$CMD"``) raises ``ShellParseError``: it cannot be checked.
"""

from __future__ import annotations

from openheim.safety.shell_words import (
    ASSIGNMENT,
    MAX_NESTING,
    Command,
    Parser,
    ShellParseError,
    Word,
)

_WRAPPER_OPTIONS: dict[str, frozenset[str]] = {
    "sudo": frozenset({"-u", "-g", "-p", "-C", "-h", "-r", "-t", "-U", "-D", "-R", "-T", "--user"}),
    "doas": frozenset({"-u", "-C"}),
    "env": frozenset({"-u", "-C", "--unset", "--chdir"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "ionice": frozenset({"-c", "-n", "-p"}),
    "nohup": frozenset(),
    "time": frozenset({"-f", "-o"}),
    "command": frozenset(),
    "builtin": frozenset(),
    "exec": frozenset({"-a"}),
    "setsid": frozenset(),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
    "timeout": frozenset({"-s", "-k", "--signal", "--kill-after"}),
    "xargs": frozenset({"-I", "-n", "-P", "-d", "-L", "-s", "-a", "-E"}),
    "watch": frozenset({"-n", "-d"}),
}
_WRAPPER_POSITIONALS = {"timeout": 1}
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash"})
WRAPPERS = frozenset({*_WRAPPER_OPTIONS, *_SHELLS, "eval"})
"""Programs whose arguments are themselves a command (learned rules name them in full)."""


def expand(commands: tuple[Command, ...]) -> tuple[Command, ...]:
    """The commands as they finally run, seen through wrappers; raises ShellParseError."""
    out: list[Command] = []
    for command in commands:
        out += _unwrap(command, 0)
    return tuple(out)


def _unwrap(command: Command, depth: int) -> list[Command]:
    if depth > MAX_NESTING:
        raise ShellParseError("wrappers nested too deeply")
    name = command.name if command.words and command.words[0].static else ""
    if name in _WRAPPER_OPTIONS:
        inner = _wrapped(command.words, name)
        if not inner:
            return [command]
        return _unwrap(Command(inner, command.assignments, command.redirects), depth + 1)
    if name == "eval" or (name in _SHELLS and _script_index(command.words) is not None):
        words = command.words[1:] if name == "eval" else _script(command.words)
        if not all(w.static for w in words):
            raise ShellParseError(f"`{name}` runs a command built at run time")
        script = Parser(" ".join(w.text for w in words), depth + 1).parse()
        return [c for sub in script for c in _unwrap(sub, depth + 1)]
    return [command]


def _wrapped(words: tuple[Word, ...], name: str) -> tuple[Word, ...]:
    """The words of the command a wrapper runs (empty when it runs none)."""
    takes_value = _WRAPPER_OPTIONS[name]
    positionals = _WRAPPER_POSITIONALS.get(name, 0)
    i = 1
    while i < len(words):
        text = words[i].text
        if text == "--":
            i += 1
            break
        if text.startswith("-") and len(text) > 1:
            i += 2 if text in takes_value else 1
        elif name == "env" and ASSIGNMENT.match(text):
            i += 1
        elif positionals:
            positionals -= 1
            i += 1
        else:
            break
    return words[i:]


def _script_index(words: tuple[Word, ...]) -> int | None:
    """Index of the script argument of ``sh -c SCRIPT`` (None when there is no -c)."""
    i = 1
    while i < len(words):
        text = words[i].text
        if text in ("-o", "+o"):
            i += 2
            continue
        if not text.startswith("-") or text.startswith("--"):
            return None
        if "c" in text[1:]:
            return i + 1 if i + 1 < len(words) else None
        i += 1
    return None


def _script(words: tuple[Word, ...]) -> tuple[Word, ...]:
    index = _script_index(words)
    return words[index : index + 1] if index is not None else ()
