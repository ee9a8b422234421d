"""Shell command lines split into the simple commands they run, for rules and risk checks.

``parse`` reads a POSIX ``sh`` command line the way the shell would tokenise it and returns every
simple command it would run, in order: the parts of lists (``;``, newline, ``&``), and-or lists
(``&&``, ``||``), pipelines (``|``, ``|&``), subshells ``( … )``, and the commands inside command
and process substitutions (``$( … )``, backticks, ``<( … )``), each of those listed before the
command that contains it. Quotes are removed as the shell removes them, so ``echo "a; rm x"`` is
one command with one argument. A word whose value the shell computes at run time (``$VAR``,
``$( … )``, an unquoted glob, ``~``, a brace) is marked not ``static``: a rule never matches
such a word. Redirections and leading ``NAME=value`` assignments are kept apart from the words.

What this parser does not analyse raises ``ShellParseError`` (here-documents, ``case``, function
definitions, unbalanced quotes or parentheses); callers then ask a person instead of guessing.

``wrappers.expand`` then sees through commands that run other commands (``sudo``, ``sh -c``).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

MAX_NESTING = 16
_BREAK = frozenset(" \t\n;&|()<>")
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
_PLAIN = re.compile(r"[\w@%+:,./-]+")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-]")
_REDIRECTS = ("&>>", "&>", "<<<", "<<-", "<<", ">>", ">|", ">&", "<&", "<>", ">", "<")
_WRITES = frozenset({"&>>", "&>", ">>", ">|", ">&", "<>", ">"})
_SEPARATORS = ("&&", "||", "|&", ";", "&", "|")
_RESERVED = frozenset(
    {"!", "{", "}", "if", "then", "elif", "else", "fi", "while", "until", "do", "done"}
)
_HEADERS = frozenset({"for", "select"})
_UNSUPPORTED = frozenset({"case", "esac", "function", "coproc"})


class ShellParseError(ValueError):
    """The command line uses syntax this parser does not analyse; it needs a person's approval."""


@dataclass(frozen=True, slots=True)
class Word:
    """One shell word after quote removal; expansions stay as written (``$HOME``, ``$(…)``)."""

    text: str
    static: bool = True
    """False when the shell computes part of the word when the command runs."""

    def shell(self) -> str:
        """The word as it could be typed again (expansions are shown as written)."""
        return quote(self.text) if self.static else self.text


@dataclass(frozen=True, slots=True)
class Redirect:
    """A redirection such as ``> out.txt``; ``2>&1``-style descriptor copies are not kept."""

    op: str
    target: Word

    @property
    def writes(self) -> bool:
        return self.op in _WRITES


@dataclass(frozen=True, slots=True)
class Command:
    """One simple command: its words, leading assignments and redirections."""

    words: tuple[Word, ...]
    assignments: tuple[Word, ...] = ()
    redirects: tuple[Redirect, ...] = ()

    @property
    def name(self) -> str:
        """The program's base name (``/bin/rm`` → ``rm``), or '' when there is no word."""
        return self.words[0].text.rsplit("/", 1)[-1] if self.words else ""

    def __str__(self) -> str:
        """The command as shell text; static words are re-quoted where needed."""
        return " ".join(w.shell() for w in (*self.assignments, *self.words))


def quote(text: str) -> str:
    """``text`` as one shell word: unchanged when safe, else single-quoted.

    ``=`` is not safe here (``A=1`` would read back as an assignment), though ``shlex`` thinks so.
    """
    if _PLAIN.fullmatch(text):
        return text
    quoted = shlex.quote(text)
    return quoted if quoted != text else f"'{text}'"


def parse(text: str) -> tuple[Command, ...]:
    """Every simple command ``text`` runs, in order; raises ShellParseError when unsure."""
    return Parser(text, 0).parse()


class Parser:
    """Recursive descent over the text; substitutions recurse into the same command list."""

    def __init__(self, text: str, nesting: int) -> None:
        self.text = text
        self.pos = 0
        self.nesting = nesting
        self.commands: list[Command] = []

    def parse(self) -> tuple[Command, ...]:
        self._list(None)
        return tuple(self.commands)

    def _peek(self, offset: int = 0) -> str:
        at = self.pos + offset
        return self.text[at] if at < len(self.text) else ""

    def _list(self, closer: str | None) -> None:
        """Commands and separators up to ``closer`` (consumed) or the end of the text."""
        self.nesting += 1
        if self.nesting > MAX_NESTING:
            raise ShellParseError(f"nesting deeper than {MAX_NESTING} levels")
        while True:
            self._skip(newlines=True)
            char = self._peek()
            if not char:
                if closer:
                    raise ShellParseError(f"missing {closer!r}")
                break
            if char == ")":
                if closer != ")":
                    raise ShellParseError("unbalanced ')'")
                self.pos += 1
                break
            if char == "(":
                self.pos += 1
                self._list(")")
                self._command(group=True)
            elif char in ";&|" and not self._at_redirect():
                self._separator()
            else:
                self._command(group=False)
        self.nesting -= 1

    def _separator(self) -> None:
        if self.text.startswith(";;", self.pos):
            raise ShellParseError("';;' (a case statement) is not analysed")
        op = next(op for op in _SEPARATORS if self.text.startswith(op, self.pos))
        self.pos += len(op)

    def _skip(self, *, newlines: bool) -> None:
        """Skip blanks, line continuations and comments (and newlines when asked)."""
        while True:
            char = self._peek()
            if char in (" ", "\t") or (char == "\n" and newlines):
                self.pos += 1
            elif char == "\\" and self._peek(1) == "\n":
                self.pos += 2
            elif char == "#":
                end = self.text.find("\n", self.pos)
                self.pos = len(self.text) if end == -1 else end
            else:
                return

    def _at_redirect(self) -> bool:
        char = self._peek()
        if char in ("<", ">"):
            return self._peek(1) != "("
        return char == "&" and self._peek(1) == ">"

    def _command(self, *, group: bool) -> None:
        """One simple command (or, after a subshell's ')', only its redirections)."""
        words: list[tuple[Word, str]] = []
        assignments: list[Word] = []
        redirects: list[Redirect] = []
        while True:
            self._skip(newlines=False)
            if self._at_redirect():
                redirects += self._redirect()
                continue
            char = self._peek()
            if not char or char in "\n;&|)":
                break
            if char == "(":
                raise ShellParseError(
                    "'(' inside a command (a function definition?) is not analysed"
                )
            start = self.pos
            word = self._word()
            raw = self.text[start : self.pos]
            if raw.isdigit() and self._peek() in ("<", ">"):
                redirects += self._redirect()  # a descriptor number such as the 2 in 2>err
            elif group:
                raise ShellParseError(f"unexpected word {raw!r} after ')'")
            elif not words and ASSIGNMENT.match(raw):
                assignments.append(word)
            else:
                words.append((word, raw))
        self._finish(words, assignments, redirects)

    def _finish(
        self, words: list[tuple[Word, str]], assignments: list[Word], redirects: list[Redirect]
    ) -> None:
        """Drop reserved words that only shape control flow; keep the command if it does work."""
        while words and words[0][1] in _RESERVED:
            words.pop(0)
        first = words[0][1] if words else ""
        if first in _UNSUPPORTED:
            raise ShellParseError(f"'{first}' is not analysed")
        if first in _HEADERS:
            return  # `for x in words`: nothing runs but its substitutions, already collected
        if words or assignments or redirects:
            self.commands.append(
                Command(tuple(w for w, _ in words), tuple(assignments), tuple(redirects))
            )

    def _redirect(self) -> list[Redirect]:
        op = next(op for op in _REDIRECTS if self.text.startswith(op, self.pos))
        if op in ("<<", "<<-"):
            raise ShellParseError("here-documents (<<) are not analysed")
        self.pos += len(op)
        self._skip(newlines=False)
        char = self._peek()
        if not char or (char in _BREAK and not self.text.startswith(("<(", ">("), self.pos)):
            raise ShellParseError(f"redirection {op!r} has no target")
        target = self._word()
        if op in (">&", "<&") and (target.text.isdigit() or target.text == "-"):
            return []
        return [Redirect(op, target)]

    def _word(self) -> Word:
        parts: list[str] = []
        static = True
        start = self.pos
        while char := self._peek():
            if char in ("<", ">") and self.pos == start and self._peek(1) == "(":
                self.pos += 2
                parts.append(self._substitution(start))
                static = False
            elif char in _BREAK:
                break
            elif char == "\\":
                parts.append(self._peek(1) if self._peek(1) != "\n" else "")
                self.pos += 2
            elif char == "'":
                parts.append(self._single_quoted())
            elif char == '"':
                static &= self._double_quoted(parts)
            elif char == "$":
                static &= self._dollar(parts)
            elif char == "`":
                parts.append(self._backticks())
                static = False
            else:
                if char in "*?[{" or (char == "~" and self.pos == start):
                    static = False
                parts.append(char)
                self.pos += 1
        return Word("".join(parts), static)

    def _single_quoted(self) -> str:
        end = self.text.find("'", self.pos + 1)
        if end == -1:
            raise ShellParseError("unclosed single quote")
        value = self.text[self.pos + 1 : end]
        self.pos = end + 1
        return value

    def _double_quoted(self, parts: list[str]) -> bool:
        """Append the quoted value; False when it holds an expansion."""
        self.pos += 1
        static = True
        while True:
            char = self._peek()
            if not char:
                raise ShellParseError("unclosed double quote")
            if char == '"':
                self.pos += 1
                return static
            if char == "\\" and self._peek(1) in '$`"\\\n':
                parts.append(self._peek(1) if self._peek(1) != "\n" else "")
                self.pos += 2
            elif char == "$":
                static &= self._dollar(parts, quoted=True)
            elif char == "`":
                parts.append(self._backticks())
                static = False
            else:
                parts.append(char)
                self.pos += 1

    def _dollar(self, parts: list[str], *, quoted: bool = False) -> bool:
        """Append a ``$`` expansion as written; False unless it was a literal ``$``."""
        start = self.pos
        after = self._peek(1)
        if self.text.startswith("$((", self.pos):
            self._balanced("(", ")", 1, "arithmetic $(( ))")
        elif after == "(":
            self.pos += 2
            parts.append(self._substitution(start))
            return False
        elif after == "{":
            self._balanced("{", "}", 1, "parameter expansion ${ }")
        elif after == "'" and not quoted:
            self._ansi_c_quoted()
        elif after == '"' and not quoted:
            self.pos += 1
            return self._double_quoted(parts)
        elif name := _NAME.match(self.text, self.pos + 1):
            self.pos = name.end()
        else:
            self.pos += 1
            parts.append("$")
            return True
        parts.append(self.text[start : self.pos])
        return False

    def _substitution(self, start: int) -> str:
        """Parse the commands of ``$(…)`` / ``<(…)`` (opened at ``start``); return its text."""
        self._list(")")
        return self.text[start : self.pos]

    def _balanced(self, opener: str, closer: str, skip: int, what: str) -> None:
        """Move past a bracketed expansion, refusing ones that hide a command substitution."""
        depth = 0
        i = self.pos + skip
        while i < len(self.text):
            char = self.text[i]
            depth += (char == opener) - (char == closer)
            if depth == 0:
                body = self.text[self.pos : i]
                if "$(" in body[2:] or "`" in body:
                    raise ShellParseError(f"a command inside {what} is not analysed")
                self.pos = i + 1
                return
            i += 1
        raise ShellParseError(f"unclosed {what}")

    def _ansi_c_quoted(self) -> None:
        i = self.pos + 2
        while i < len(self.text) and self.text[i] != "'":
            i += 2 if self.text[i] == "\\" else 1
        if i >= len(self.text):
            raise ShellParseError("unclosed $'…' quote")
        self.pos = i + 1

    def _backticks(self) -> str:
        """Parse the commands between backticks (a nested parser); return the raw text."""
        i = self.pos + 1
        while i < len(self.text) and self.text[i] != "`":
            i += 2 if self.text[i] == "\\" else 1
        if i >= len(self.text):
            raise ShellParseError("unclosed backtick")
        raw = self.text[self.pos : i + 1]
        inner = re.sub(r"\\([\\`$])", r"\1", raw[1:-1])
        self.commands += Parser(inner, self.nesting + 1).parse()
        self.pos = i + 1
        return raw
