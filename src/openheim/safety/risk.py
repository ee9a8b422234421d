"""Risk assessment: destructive actions and places outside the work zone.

Every call is checked for three kinds of finding, each a sentence shown to whoever approves:

``danger``
    A destructive pattern: ``rm -rf`` (any spelling of recursive + force) unless every target
    lies in a temp dir, ``mkfs*``, ``dd if=``/``of=``, ``shutdown``/``reboot``/``poweroff``/
    ``halt``, ``git push --force`` (``-f``, ``--force-with-lease``, ``+refspec``),
    ``git reset --hard``, ``git clean -f``, recursive ``chmod``/``chown``/``chgrp`` outside the
    zone, a fork bomb, a write onto a block device (``> /dev/sda``, ``tee``, ``dd of=``), any
    shell write to openheim's own ``.openheim`` settings (an agent must not widen its own
    permissions) and a redirection or ``tee`` onto a protected path (``protected``: file tools
    changing one are asked about by the policy itself).
``outside``
    The cwd, a file tool's path, a redirection target or a path-like argument (absolute, ``~``,
    ``$HOME`` or climbing with ``..``) outside the work zone: the work dir, the temp dirs and
    harmless devices such as ``/dev/null``. ``cd`` is followed, so ``cd /etc && rm -rf x`` targets
    ``/etc/x``.
``unclear``
    A command line that cannot be analysed (see ``shell_words``), one whose program name is only
    known at run time (``$(echo rm) -rf /``), or a file path the filesystem cannot check.

The policy turns danger *and* outside into a denial and any finding into a question, in every
approval mode. Commands are seen through wrappers (``sudo``, ``env``, ``sh -c``, …). This is a
net for accidents and obvious mischief, not a sandbox: ``python -c '…'`` is not looked into.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from openheim.approval import ApprovalRequest
from openheim.errors import SandboxError, UnusablePath
from openheim.safety.protected import protected_reason
from openheim.safety.rules import FILE_KINDS, SHELL_TOOL, path_argument, request_cwd
from openheim.safety.shell_words import Command, ShellParseError, Word, parse
from openheim.safety.wrappers import expand
from openheim.tools.sandbox import PathSandbox

SAFE_DEVICES = frozenset(
    f"/dev/{name}"
    for name in ("null", "zero", "random", "urandom", "stdin", "stdout", "stderr", "tty")
)
_BLOCK_DEVICE = re.compile(
    r"/dev/(sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|r?disk\d|md\d|dm-\d|loop\d|mapper/|sr\d)"
)
_FORK_PARTS = re.compile(
    r"(?<![\w:.])([\w:.]+)\s*\(\s*\)\s*\{"  # a function head: name() {
    r"|(?<![\w:.])([\w:.]+)\s*\|\s*(?:&\s*)?([\w:.]+)\s*&"  # a pipe put in the background
    r"|\}"
)
"""The parts of a fork bomb, each name starting where its word starts, so that no part
backtracks more than the length of its own words and spaces."""
_VARIABLE = re.compile(r"^(~|\$HOME|\$\{HOME\}|\$TMPDIR|\$\{TMPDIR\}|\$PWD|\$\{PWD\})(?=/|$)")
_GLOB = re.compile(r"[*?\[{]")
_POWER = frozenset({"shutdown", "reboot", "poweroff", "halt"})
_GIT_VALUE_OPTIONS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace"})
_FORCE_PUSH = frozenset({"--force", "--force-with-lease", "--force-if-includes"})


def default_temp_dirs() -> tuple[str, ...]:
    """Scratch folders where ``rm -rf`` is routine: $TMPDIR, /tmp, /var/tmp, /dev/shm."""
    return tuple(d for d in (os.environ.get("TMPDIR"), "/tmp", "/var/tmp", "/dev/shm") if d)


@dataclass(frozen=True, slots=True)
class Risk:
    """The findings for one call, each a sentence; empty when nothing looks risky."""

    danger: tuple[str, ...] = ()
    outside: tuple[str, ...] = ()
    unclear: tuple[str, ...] = ()

    @property
    def reasons(self) -> tuple[str, ...]:
        return (*self.danger, *self.outside, *self.unclear)

    @property
    def refused(self) -> bool:
        """Destructive *and* outside the work zone: refused without asking."""
        return bool(self.danger and self.outside)


@dataclass
class _Findings:
    danger: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)
    unclear: list[str] = field(default_factory=list)

    def risk(self) -> Risk:
        unique = dict.fromkeys
        return Risk(
            tuple(unique(self.danger)), tuple(unique(self.outside)), tuple(unique(self.unclear))
        )


class RiskAssessor:
    """Assesses calls against one work dir; ``temp_dirs`` and ``home`` are injectable for tests."""

    def __init__(
        self,
        sandbox: PathSandbox,
        *,
        temp_dirs: Iterable[str | os.PathLike[str]] | None = None,
        home: Path | None = None,
    ) -> None:
        self.sandbox = sandbox
        dirs = default_temp_dirs() if temp_dirs is None else temp_dirs
        self.temp_dirs = tuple(dict.fromkeys(Path(os.path.realpath(d)) for d in dirs))
        self.home = home if home is not None else Path.home()

    def assess(self, request: ApprovalRequest) -> Risk:
        found = _Findings()
        cwd = request_cwd(request, self.sandbox)
        if not self.in_zone(cwd):
            found.outside.append(f"cwd {cwd} is outside the work dir")
        if request.tool == SHELL_TOOL:
            line = request.arguments.get("command")
            _CommandCheck(self, found, cwd).run(line if isinstance(line, str) else "")
        elif request.kind in FILE_KINDS:
            self._file(request, cwd, found)
        return found.risk()

    def _file(self, request: ApprovalRequest, cwd: Path, found: _Findings) -> None:
        try:
            self.sandbox.resolve(path_argument(request), cwd)
        except UnusablePath as err:
            found.unclear.append(f"the path cannot be checked: {err.reason}")
            return
        except SandboxError as err:
            found.outside.append(err.message)

    def in_zone(self, path: Path) -> bool:
        """Inside the work dir or a temp dir, or a harmless device (symlinks followed)."""
        if str(path) in SAFE_DEVICES or str(path).startswith("/dev/fd/"):
            return True
        real = Path(os.path.realpath(path))
        return self.sandbox.contains(real) or any(real.is_relative_to(t) for t in self.temp_dirs)

    def scratch(self, path: Path) -> bool:
        """Strictly inside a temp dir, and neither inside nor above the work dir."""
        real = Path(os.path.realpath(path.parent)) / path.name
        in_temp = any(real != t and real.is_relative_to(t) for t in self.temp_dirs)
        root = self.sandbox.root
        return in_temp and not self.sandbox.contains(real) and not root.is_relative_to(real)


def is_fork_bomb(line: str) -> bool:
    """Whether ``line`` defines a function whose body pipes the function into itself in the
    background (``f(){ f|f& }``): a head opens a body, the next ``}`` closes every open one.

    One scan in time linear in the line: the pattern it replaces compared names with a
    backreference and took time quadratic in a long word, on the event loop before approval.
    """
    heads: set[str] = set()
    for found in _FORK_PARTS.finditer(line):
        head, left, right = found.groups()
        if head is not None:
            heads.add(head)
        elif left is not None:
            if left == right and left in heads:
                return True
        else:
            heads.clear()
    return False


class _CommandCheck:
    """Walks the commands of one shell line in order, tracking ``cd``."""

    def __init__(self, assessor: RiskAssessor, found: _Findings, cwd: Path) -> None:
        self.zone = assessor
        self.found = found
        self.cwd: Path | None = cwd
        self.checks: dict[str, Callable[[Command], None]] = {
            "rm": self._rm,
            "dd": self._dd,
            "git": self._git,
            "tee": self._tee,
            "systemctl": self._systemctl,
            "cd": self._cd,
            "pushd": self._cd,
        }

    def run(self, line: str) -> None:
        if is_fork_bomb(line):
            self.found.danger.append(
                "a fork bomb (a function that keeps starting copies of itself)"
            )
        try:
            commands = expand(parse(line))
        except ShellParseError as err:
            self.found.unclear.append(f"the command could not be analysed: {err}")
            return
        for command in commands:
            self._command(command)

    def _command(self, command: Command) -> None:
        if command.words and not command.words[0].static:
            self.found.unclear.append(
                f"the program `{command.words[0].text}` is only known when the command runs"
            )
        for redirect in command.redirects:
            if redirect.op != "<<<":
                self._target(redirect.target, writes=redirect.writes)
        for word in command.words[1:]:
            self._argument(word)
        name = command.name
        if name.startswith("mkfs") or name == "mke2fs":
            self.found.danger.append(f"`{name}` formats a filesystem")
        elif name in _POWER:
            self.found.danger.append(f"`{name}` stops or restarts the machine")
        elif name in ("chmod", "chown", "chgrp"):
            self._recursive_owner(command)
        elif check := self.checks.get(name):
            check(command)

    def _path(self, text: str, static: bool) -> Path | None:
        """Where a word points, or None when that is only known at run time."""
        if not static:
            text = _VARIABLE.sub(self._variable, text, count=1)
            glob = _GLOB.search(text)
            if glob:
                text = text[: text.rfind("/", 0, glob.start()) + 1] or "."
            if "$" in text or "`" in text or text.startswith("~"):
                return None
        if self.cwd is None and not text.startswith("/"):
            return None
        return Path(os.path.normpath(Path(self.cwd or "/") / text))

    def _variable(self, match: re.Match[str]) -> str:
        name = match.group(1).strip("${}")
        if name in ("~", "HOME"):
            return str(self.zone.home)
        if name == "TMPDIR":
            return os.environ.get("TMPDIR", "/tmp")
        return str(self.cwd) if self.cwd else match.group(0)

    def _target(self, word: Word, *, writes: bool) -> None:
        path = self._path(word.text, word.static)
        if path is None:
            return
        self._place(path)
        if writes and _BLOCK_DEVICE.match(str(path)):
            self.found.danger.append(f"writes to the block device {path}")
        if writes and ".openheim" in path.parts:
            self.found.danger.append(f"touches openheim's own settings ({word.text})")
        elif writes and self.zone.sandbox.contains(path):
            reason = protected_reason(self.zone.sandbox.display(path))
            if reason is not None:
                self.found.danger.append(reason)

    def _argument(self, word: Word) -> None:
        text = word.text
        if "=" in text and not text.startswith(("/", "~")):
            text = text.split("=", 1)[1]
        if ".openheim" in text.split("/"):
            self.found.danger.append(f"touches openheim's own settings ({word.text})")
        path_like = text.startswith(("/", "~", "$HOME", "${HOME}")) or ".." in text.split("/")
        path = self._path(text, word.static) if path_like else None
        if path is not None:
            self._place(path)

    def _place(self, path: Path) -> None:
        if not self.zone.in_zone(path):
            self.found.outside.append(f"path {path} is outside the work dir")

    def _rm(self, command: Command) -> None:
        flags, operands = _options(command.words)
        short = "".join(f[1:] for f in flags if not f.startswith("--"))
        if "--no-preserve-root" in flags:
            self.found.danger.append("`rm --no-preserve-root` can delete the whole filesystem")
        recursive = bool(set(short) & {"r", "R"}) or "--recursive" in flags
        if not (recursive and ("f" in short or "--force" in flags)):
            return
        paths = [self._path(w.text, w.static) for w in operands]
        if not paths or not all(p is not None and self.zone.scratch(p) for p in paths):
            self.found.danger.append("`rm -rf` outside a temporary directory")

    def _recursive_owner(self, command: Command) -> None:
        flags, operands = _options(command.words)
        short = "".join(f[1:] for f in flags if not f.startswith("--"))
        if "R" not in short and "--recursive" not in flags:
            return
        by_reference = any(f.startswith("--reference") for f in flags)
        for word in operands if by_reference else operands[1:]:
            path = self._path(word.text, word.static)
            if path is not None and not self.zone.in_zone(path):
                self.found.danger.append(
                    f"recursive `{command.name}` on {path}, outside the work dir"
                )

    def _dd(self, command: Command) -> None:
        operands = {w.text.split("=", 1)[0]: w for w in command.words[1:] if "=" in w.text}
        if "if" not in operands and "of" not in operands:
            return
        out = operands.get("of")
        where = out.text.split("=", 1)[1] if out else "standard output"
        self.found.danger.append(f"`dd` copies raw data (to {where})")
        if out:
            self._target(Word(where, out.static), writes=True)

    def _tee(self, command: Command) -> None:
        for word in _options(command.words)[1]:
            self._target(word, writes=True)

    def _git(self, command: Command) -> None:
        sub, rest = _git_subcommand(command.words)
        flags, operands = _options(rest)
        short = "".join(f[1:] for f in flags if not f.startswith("--"))
        if sub == "push" and (
            "f" in short
            or any(f.split("=", 1)[0] in _FORCE_PUSH for f in flags)
            or any(w.text.startswith("+") for w in operands)
        ):
            self.found.danger.append("`git push --force` can overwrite commits on the remote")
        elif sub == "reset" and "--hard" in flags:
            self.found.danger.append("`git reset --hard` discards uncommitted changes")
        elif sub == "clean" and ("f" in short or "--force" in flags):
            self.found.danger.append("`git clean -f` deletes untracked files")

    def _systemctl(self, command: Command) -> None:
        operands = _options(command.words)[1]
        if operands and operands[0].text in ("poweroff", "reboot", "halt", "kexec"):
            self.found.danger.append(
                f"`systemctl {operands[0].text}` stops or restarts the machine"
            )

    def _cd(self, command: Command) -> None:
        operands = _options(command.words)[1]
        if not operands:
            self.cwd = self.zone.home
        elif operands[0].text == "-":
            self.cwd = None
        else:
            self.cwd = self._path(operands[0].text, operands[0].static)


def _options(words: tuple[Word, ...]) -> tuple[list[str], list[Word]]:
    """Split the arguments after the program name into option texts and operand words."""
    flags: list[str] = []
    operands: list[Word] = []
    ended = False
    for word in words[1:]:
        if not ended and word.text == "--":
            ended = True
        elif not ended and word.text.startswith("-") and len(word.text) > 1:
            flags.append(word.text)
        else:
            operands.append(word)
    return flags, operands


def _git_subcommand(words: tuple[Word, ...]) -> tuple[str, tuple[Word, ...]]:
    """The git subcommand after global options (``git -C dir push``) and the words after it."""
    i = 1
    while i < len(words) and words[i].text.startswith("-"):
        i += 2 if words[i].text in _GIT_VALUE_OPTIONS else 1
    if i >= len(words):
        return "", ()
    return words[i].text, (words[i], *words[i + 1 :])
