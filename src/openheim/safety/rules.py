"""Permission rules: what they look like as text, and what calls they match.

A rule is ``EFFECT KIND PATTERN``, the effect ``allow`` or ``deny``:

``allow tool read_*``
    The tool name matches an fnmatch pattern (``github__*`` covers an MCP server's tools).
``allow command "git status"``
    An ``execute_command`` call whose command starts with these words. The command line is
    parsed as the shell parses it (``shell_words``), so ``git status`` does not match
    ``git statusx``. An allow rule must cover *every* command of a compound line (``a && b``,
    pipes, ``$( … )``), matches only words the shell does not compute at run time, and never a
    command with ``NAME=value`` assignments in front (they can change what a program does). A
    deny rule matches any command of the line, also behind wrappers (``sudo rm`` for
    ``deny command rm``) and by the program's base name (``/bin/rm``).
``deny path "secrets/**"``
    A file tool's ``path`` argument, resolved against the session cwd, taken relative to the
    work dir and matched by a glob anchored there: ``*``, ``?`` and ``[abc]`` stay within a
    folder name, ``**`` spans folders (``**/*.pem`` matches at any depth). A folder also matches
    when the pattern matches every name directly in it (``secrets/*``, ``secrets/**``), so
    ``deny path "secrets/**"`` covers listing or searching ``secrets`` itself. Symlinks are
    resolved too: a deny rule matches if either spelling does, an allow rule only if both do.
    A glob is matched with RE2 (``openheim.formats.regex``), in time linear in the path. A rule
    without
    wildcards *names* its path (``literal_path_pattern``); only such a rule allows a change to a
    protected path (``protected``).

Patterns are quoted like shell words (``"…"`` or ``'…'``); ``str(rule)`` gives the canonical text.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import shlex
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Literal, TypeAlias, cast

from openheim.approval import ApprovalRequest
from openheim.errors import ConfigError, SandboxError
from openheim.formats.regex import LinearRegex, PatternError, compile_linear, escape
from openheim.safety.protected import folded
from openheim.safety.shell_words import Command, ShellParseError, parse, quote
from openheim.safety.wrappers import expand
from openheim.tools.sandbox import PathSandbox

Effect: TypeAlias = Literal["allow", "deny"]
RuleKind: TypeAlias = Literal["tool", "command", "path"]
EFFECTS: tuple[Effect, ...] = ("allow", "deny")
KINDS: tuple[RuleKind, ...] = ("tool", "command", "path")
SHELL_TOOL = "execute_command"
FILE_KINDS = frozenset({"read", "edit", "delete", "move", "search"})
"""Tool kinds whose ``path`` argument names a file or folder in the work dir."""
_WILDCARDS = frozenset("*?[")
RULE_HINT = (
    'write a rule as: allow tool read_*, allow command "git status" or deny path "secrets/**"'
)


@dataclass(frozen=True, slots=True)
class Rule:
    """One permission rule; ``source`` (where it came from) is not part of its identity."""

    effect: Effect
    kind: RuleKind
    pattern: str
    source: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if self.kind == "tool" and (not self.pattern or any(c.isspace() for c in self.pattern)):
            raise ConfigError(
                f"tool pattern {self.pattern!r} is empty or has spaces", hint=RULE_HINT
            )
        if self.kind == "command":
            command_words(self.pattern)
        if self.kind == "path":
            path_regex(self.pattern)

    @property
    def body(self) -> str:
        """The rule without its effect, as written in a ``permissions.toml`` list."""
        if self.kind == "tool":
            return f"tool {self.pattern}"
        return f"{self.kind} {_double_quoted(self.pattern)}"

    def __str__(self) -> str:
        return f"{self.effect} {self.body}"

    def describe(self) -> str:
        """The rule and where it came from, for explanations."""
        return f"`{self}` (from {self.source})" if self.source else f"`{self}`"


def parse_rule(text: str, effect: Effect | None = None, source: str = "") -> Rule:
    """Read ``[EFFECT] KIND PATTERN``; ``effect`` is implied (and checked) when given."""
    try:
        tokens = shlex.split(text)
    except ValueError as err:
        raise ConfigError(f"rule {text!r}: {err}", hint=RULE_HINT) from None
    if tokens and tokens[0] in EFFECTS:
        written = cast(Effect, tokens.pop(0))
        if effect is not None and written != effect:
            raise ConfigError(
                f"rule {text!r} says {written} but is in the {effect} list",
                hint=f"move it to the {written} list",
            )
        effect = written
    if effect is None:
        raise ConfigError(f"rule {text!r} does not start with allow or deny", hint=RULE_HINT)
    if len(tokens) != 2 or tokens[0] not in KINDS:
        raise ConfigError(
            f"rule {text!r} is not KIND PATTERN with KIND tool, command or path",
            hint=RULE_HINT + " (quote a pattern that has spaces)",
        )
    kind = tokens[0]
    pattern = tokens[1]
    if kind == "command":
        pattern = quote_words(command_words(pattern))
    elif kind == "path":
        pattern = pattern.removeprefix("./")
    return Rule(effect, kind, pattern, source)


def _double_quoted(text: str) -> str:
    """Double-quote ``text`` so ``shlex.split`` gives it back."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def quote_words(words: tuple[str, ...]) -> str:
    """Words as one shell-quoted string (only words that need it are quoted)."""
    return " ".join(quote(w) for w in words)


@lru_cache(maxsize=512)
def command_words(pattern: str) -> tuple[str, ...]:
    """The words of a command rule; it must be one plain command (raises ConfigError)."""
    try:
        commands = parse(pattern)
    except ShellParseError as err:
        raise ConfigError(f"command pattern {pattern!r}: {err}", hint=RULE_HINT) from None
    plain = len(commands) == 1 and not commands[0].assignments and not commands[0].redirects
    if not plain or not all(w.static for w in commands[0].words):
        raise ConfigError(
            f"command pattern {pattern!r} must be one command without ;, &&, |, redirections, "
            "assignments, globs or $ expansions",
            hint='name the command and its leading words, e.g. "git status"',
        )
    return tuple(w.text for w in commands[0].words)


@lru_cache(maxsize=512)
def path_regex(pattern: str) -> LinearRegex:
    """Compile a path glob anchored at the work dir (raises ConfigError)."""
    parts = [p for p in pattern.split("/") if p not in ("", ".")]
    if pattern.startswith(("/", "~")) or ".." in parts or not parts:
        raise ConfigError(
            f"path pattern {pattern!r} must be a non-empty glob relative to the work dir",
            hint='e.g. "secrets/**" or "**/*.pem"; paths outside the work dir are refused anyway',
        )
    out: list[str] = []
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == "**":
            out.append(".*" if last else "(?:[^/]+/)*")
        else:
            out.append(_segment_regex(part) + ("" if last else "/"))
    try:
        return compile_linear("".join(out), dot_all=True)
    except PatternError as err:
        raise ConfigError(
            f"path pattern {pattern!r} is not a valid glob: {err.reason}",
            hint="check the [...] classes; a range such as [a-z] must go upwards",
        ) from None


def literal_path_pattern(path: str) -> str:
    """The path glob that matches exactly ``path``: wildcard characters go in ``[…]``."""
    return "".join(f"[{c}]" if c in _WILDCARDS else c for c in path)


def _segment_regex(part: str) -> str:
    """One folder or file name of a glob: ``*``, ``?`` and ``[…]`` never cross a ``/``."""
    out: list[str] = []
    i = 0
    while i < len(part):
        char = part[i]
        end = part.find("]", i + 2) if char == "[" else -1
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif end != -1:
            body = part[i + 1 : end]
            negate = body[0] in "!^"
            chars = _class_chars(body[negate:])
            out.append(f"[^/{chars}]" if negate else f"[{chars}]")
            i = end
        else:
            out.append(escape(char))
        i += 1
    return "".join(out)


def _class_chars(body: str) -> str:
    """The inside of a ``[…]`` class: ``-`` makes a range only between two other characters."""
    out: list[str] = []
    for i, char in enumerate(body):
        between = 0 < i < len(body) - 1 and "-" not in (body[i - 1], body[i + 1])
        out.append("-" if char == "-" and between else escape(char))
    return "".join(out)


@dataclass(frozen=True, slots=True)
class Subject:
    """What rules look at in one call: the tool, its shell commands, its path."""

    tool: str
    commands: tuple[Command, ...] | None = None
    """The commands of an ``execute_command`` call; None when it cannot be parsed."""
    effective: tuple[Command, ...] = ()
    """The same seen through wrappers (``sudo x`` → ``x``), for deny rules."""
    paths: tuple[str, ...] = ()
    """The path argument relative to the work dir, lexically and with symlinks resolved."""


def subject_of(request: ApprovalRequest, sandbox: PathSandbox) -> Subject:
    """Parse the parts of ``request`` that rules match."""
    if request.tool == SHELL_TOOL:
        line = request.arguments.get("command")
        try:
            commands = parse(line if isinstance(line, str) else "")
        except ShellParseError:
            return Subject(request.tool)
        try:
            effective = expand(commands)
        except ShellParseError:
            effective = commands
        return Subject(request.tool, commands, effective)
    if request.kind in FILE_KINDS:
        return Subject(request.tool, paths=_path_forms(request, sandbox))
    return Subject(request.tool)


def path_argument(request: ApprovalRequest) -> str:
    """A file tool's ``path`` argument; the tools default it to the cwd."""
    raw = request.arguments.get("path")
    return raw if isinstance(raw, str) and raw else "."


def request_cwd(request: ApprovalRequest, sandbox: PathSandbox) -> Path:
    """The session cwd of the call (the work dir when the request does not say)."""
    return Path(request.cwd) if request.cwd else sandbox.root


def _path_forms(request: ApprovalRequest, sandbox: PathSandbox) -> tuple[str, ...]:
    raw = path_argument(request)
    cwd = request_cwd(request, sandbox)
    forms = [Path(os.path.normpath(cwd / raw))]
    with contextlib.suppress(SandboxError, OSError):  # OSError: e.g. a name too long to stat
        forms.append(sandbox.resolve(raw, cwd))
    inside = [sandbox.display(p) for p in forms if sandbox.contains(p)]
    return tuple(dict.fromkeys("" if p == "." else p for p in inside))


def _command_matches(rule: Rule, command: Command, *, deny: bool) -> bool:
    words = command_words(rule.pattern)
    have = command.words[: len(words)]
    if len(have) < len(words):
        return False
    if deny:
        first = (have[0].text, command.name)
        return words[0] in first and all(
            w.text == r for w, r in zip(have[1:], words[1:], strict=True)
        )
    return not command.assignments and all(
        w.static and w.text == r for w, r in zip(have, words, strict=True)
    )


def _path_matches(rule: Rule, path: str) -> bool:
    regex = path_regex(rule.pattern)
    folder = path + "/" if path else ""
    return regex.fullmatch(path) or regex.fullmatch(folder)


@dataclass(frozen=True, slots=True)
class RuleSet:
    """An ordered collection of rules; deny rules win over allow rules."""

    rules: tuple[Rule, ...] = ()

    def with_rule(self, rule: Rule) -> RuleSet:
        return self if rule in self.rules else RuleSet((*self.rules, rule))

    def of(self, effect: Effect) -> tuple[Rule, ...]:
        return tuple(r for r in self.rules if r.effect == effect)

    def denying(self, subject: Subject) -> Rule | None:
        """The first deny rule matching any part of the call."""
        for rule in self.of("deny"):
            if rule.kind == "tool" and fnmatch.fnmatchcase(subject.tool, rule.pattern):
                return rule
            if rule.kind == "path" and any(_path_matches(rule, p) for p in subject.paths):
                return rule
            if rule.kind == "command" and subject.commands is not None:
                every = (*subject.commands, *subject.effective)
                if any(_command_matches(rule, c, deny=True) for c in every):
                    return rule
        return None

    def allowing(self, subject: Subject) -> tuple[Rule, ...]:
        """Allow rules that together cover the whole call (empty when something is uncovered)."""
        allow = self.of("allow")
        for rule in allow:
            if rule.kind == "tool" and fnmatch.fnmatchcase(subject.tool, rule.pattern):
                return (rule,)
            paths = subject.paths
            if rule.kind == "path" and paths and all(_path_matches(rule, p) for p in paths):
                return (rule,)
        if not subject.commands:
            return ()
        used = [self.covering(c) for c in subject.commands]
        return tuple(dict.fromkeys(r for r in used if r)) if all(used) else ()

    def naming(self, path: str) -> Rule | None:
        """The allow rule naming exactly ``path`` (no wildcards; compared case-insensitively)."""
        wanted = folded(literal_path_pattern(path))
        named = (r for r in self.of("allow") if r.kind == "path" and folded(r.pattern) == wanted)
        return next(named, None)

    def covering(self, command: Command) -> Rule | None:
        """The allow rule covering one command of a shell line, if any."""
        commands = (r for r in self.of("allow") if r.kind == "command")
        return next((r for r in commands if _command_matches(r, command, deny=False)), None)
