"""The prompts library: named prompts as Markdown files, the user's and the project's.

Sources: ``data_dir/prompts/NAME.md`` (the user's) and the project's ``.openheim/prompts/NAME.md``.
A file may start with a frontmatter block (``---`` YAML or ``+++`` TOML) holding only
``description`` and ``arguments`` (see ``prompts.template``); any other key makes the file
skipped with a warning, so a prompt is text and never carries a setting.

A prompt is text the user chooses to send: it may be offered from anywhere, but it grants
nothing. A project the user has not trusted (``openheim trust``) may offer prompts, marked
untrusted wherever they are listed; they are used only as templates (the user's message) and
never as the system prompt, and they never replace a prompt of the user's own with the same
name. A trusted project's prompt wins over the user's of the same name.

Names are an allow-list: letters, digits, ``.``, ``_`` and ``-``, starting with a letter or
digit, at most 64 characters, so a name can never address a file outside its folder. A file
that resolves outside its folder (a symlink) is skipped, and a file larger than ``MAX_BYTES`` is
refused.

An untrusted project's prompts must be its own real files: ``.openheim`` and ``prompts`` are
opened from the project root with ``O_NOFOLLOW``, one folder at a time, and each prompt file
the same way; only a regular file with one name (no hard link) is read, its type, link count
and size taken with ``fstat`` of the opened descriptor. A symlink anywhere on the way, a hard
link or any other kind of file is skipped with a notice naming it, so a cloned repository
cannot offer another folder of yours (or a file of it) as its prompts. The user's folder and a
trusted project's follow symlinks (inside the folder, for files): the user chose them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from openheim.errors import ConfigError
from openheim.files.hostile import NotReal, open_real_folder, read_real
from openheim.prompts.template import Argument, all_arguments, parse_arguments, placeholders
from openheim.skills.frontmatter import FrontmatterError, split_frontmatter, text_field

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
NAME_HINT = "a prompt name is letters, digits, '.', '_' and '-', such as 'review' or 'fix-tests'"
MAX_BYTES = 256 * 1024
FRONTMATTER_KEYS = frozenset({"description", "arguments"})


@dataclass(frozen=True)
class NamedPrompt:
    """One prompt: its name, text (frontmatter removed), description, arguments and origin."""

    name: str
    text: str
    description: str
    arguments: tuple[Argument, ...]
    path: Path
    source: str
    """``user`` or ``project``."""
    trusted: bool
    file_text: str
    """The file as it was read (frontmatter included), for ``prompts show``: reading it again
    by name could meet another file swapped in since."""

    @property
    def is_template(self) -> bool:
        """Whether the text holds placeholders (``{{input}}`` or arguments)."""
        return bool(placeholders(self.text))

    def summary(self) -> str:
        """One line: name, description, arguments, and where it comes from when not the user."""
        args = all_arguments(self.text, self.arguments)
        shown = [a.name if a.required else f"{a.name}={a.default or ''}" for a in args]
        parts = [self.name]
        if self.description:
            parts.append(f"- {self.description}")
        if shown:
            parts.append(f"[{', '.join(shown)}]")
        if self.source == "project":
            parts.append("(project)" if self.trusted else "(untrusted project)")
        return " ".join(parts)


def check_name(name: str) -> str:
    """``name`` itself, or a ConfigError saying it cannot name a prompt."""
    if not NAME.fullmatch(name):
        raise ConfigError(f"{name!r} cannot name a prompt", hint=NAME_HINT)
    return name


class PromptLibrary:
    """The prompts of one user and (optionally) one project."""

    def __init__(
        self,
        data_dir: Path,
        project_root: Path | None,
        trusted: bool,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        self.user_dir = data_dir / "prompts"
        self.project_root = project_root
        self.project_dir = project_root / ".openheim" / "prompts" if project_root else None
        if self.project_dir is not None and self.project_dir.resolve() == self.user_dir.resolve():
            self.project_dir = None  # a project at the data dir is not a second user folder
        self.trusted = trusted
        self._warn = warn or (lambda message: None)

    def available(self) -> list[NamedPrompt]:
        """Every usable prompt, sorted by name (see the module docstring for name clashes)."""
        found = {p.name: p for p in self._scan(self.user_dir, "user", True)}
        if self.project_dir is not None:
            for prompt in self._scan(self.project_dir, "project", self.trusted):
                if prompt.trusted or prompt.name not in found:
                    found[prompt.name] = prompt
        return [found[name] for name in sorted(found)]

    def get(self, name: str) -> NamedPrompt:
        """The prompt called ``name``; ConfigError naming the available ones when none is."""
        check_name(name)
        for prompt in self.available():
            if prompt.name == name:
                return prompt
        listed = ", ".join(p.name for p in self.available()) or "none"
        raise ConfigError(
            f"there is no prompt named {name!r} (available: {listed})",
            hint=f"add it with `openheim prompts add {name} FILE` or `prompts new {name}`",
        )

    def system_prompt(self, name: str) -> str:
        """The prompt's text to use as the system prompt; an untrusted project's is refused."""
        prompt = self.get(name)
        if not prompt.trusted:
            raise ConfigError(
                f"prompt {name!r} comes from a project you have not trusted ({prompt.path}); "
                "it may be used as a template, never as the system prompt",
                hint=f"copy it with `openheim prompts add {name} {prompt.path}` after reading "
                "it, or `openheim trust` the project",
            )
        return prompt.text

    def _scan(self, folder: Path, source: str, trusted: bool) -> Iterator[NamedPrompt]:
        if source == "project" and not trusted:
            yield from self._scan_untrusted(folder)
            return
        try:
            base = folder.resolve(strict=True)
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            name = entry.name.removesuffix(".md")
            if not entry.name.endswith(".md") or not NAME.fullmatch(name):
                continue
            try:
                yield _load(Path(entry.path), base, name, source, trusted)
            except (OSError, ValueError, ConfigError) as err:
                self._warn(f"skipped prompt file {entry.path}: {err}")

    def _scan_untrusted(self, folder: Path) -> list[NamedPrompt]:
        """The prompts of an untrusted project's ``folder``, real files only (module docstring)."""
        assert self.project_root is not None  # there is a project folder only with a root
        try:
            parts = folder.relative_to(self.project_root).parts
            fd = open_real_folder(self.project_root, parts, _UNTRUSTED_HINT)
        except FileNotFoundError:
            return []
        except NotReal as err:
            self._warn(f"ignored the prompts of {folder}: {err}")
            return []
        except OSError as err:
            self._warn(f"ignored the prompts of {folder}: {err.strerror or err}")
            return []
        found = []
        try:
            with os.scandir(fd) as it:
                listed = sorted(e.name for e in it)
            for name in listed:
                stem = name.removesuffix(".md")
                if not name.endswith(".md") or not NAME.fullmatch(stem):
                    continue
                try:
                    text = read_real(fd, name, MAX_BYTES, _UNTRUSTED_HINT)
                    found.append(parse_prompt(text, stem, folder / name, "project", False))
                except (OSError, ValueError, ConfigError) as err:
                    self._warn(f"skipped prompt file {folder / name}: {err}")
        finally:
            os.close(fd)
        return found


_UNTRUSTED_HINT = (
    "an untrusted project's prompts must be its own files; `openheim trust` the project to "
    "follow links"
)


def _load(path: Path, base: Path, name: str, source: str, trusted: bool) -> NamedPrompt:
    real = path.resolve(strict=True)
    if not real.is_relative_to(base) or not real.is_file():
        raise ValueError(f"it is not a file inside {base} (a symlink out is refused)")
    if real.stat().st_size > MAX_BYTES:
        raise ValueError(f"it is larger than {MAX_BYTES // 1024} KiB")
    return parse_prompt(real.read_text(encoding="utf-8"), name, real, source, trusted)


def parse_prompt(text: str, name: str, path: Path, source: str, trusted: bool) -> NamedPrompt:
    """A prompt from its file's text; ValueError or ConfigError saying what is wrong."""
    try:
        doc = split_frontmatter(text)
    except FrontmatterError as err:
        raise ValueError(str(err)) from None
    extra = sorted(set(doc.meta) - FRONTMATTER_KEYS)
    if extra:
        raise ValueError(
            f"its frontmatter has {', '.join(extra)}: a prompt's frontmatter may hold only "
            "description and arguments"
        )
    arguments = parse_arguments(doc.meta.get("arguments"), str(path))
    description = text_field(doc.meta, "description") or ""
    body = doc.body.strip()
    return NamedPrompt(name, body, description, arguments, path, source, trusted, text)
