"""The user's prompt files: add one from text, create a skeleton, remove one. Only
``data_dir/prompts`` is written; a project's prompts are the project's own files."""

from __future__ import annotations

from pathlib import Path

from openheim.errors import ConfigError
from openheim.files.atomic import atomic_write
from openheim.prompts.library import MAX_BYTES, PromptLibrary, check_name, parse_prompt

SKELETON = """\
---
description: {description}
arguments: topic=everything
---
Write the prompt here. {{{{input}}}} is the text given with it; {{{{topic}}}} is an argument
(`--arg topic=...`, default "everything"). A prompt without placeholders is used as is.
"""


def add_prompt(library: PromptLibrary, name: str, text: str, *, force: bool = False) -> Path:
    """Write ``text`` as the user's prompt ``name``; it is checked first (size, frontmatter,
    arguments), and an existing prompt is replaced only with ``force``."""
    path = library.user_dir / f"{check_name(name)}.md"
    if len(text.encode("utf-8")) > MAX_BYTES:
        raise ConfigError(f"the prompt is larger than {MAX_BYTES // 1024} KiB", hint="shorten it")
    try:
        parse_prompt(text, name, path, "user", True)
    except ValueError as err:
        raise ConfigError(f"prompt {name!r}: {err}", hint="fix the file and add it again") from None
    if (path.exists() or path.is_symlink()) and not force:
        raise ConfigError(
            f"prompt {name!r} exists already ({path})",
            hint="pass --force to replace it, or `openheim prompts rm` it first",
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, text.encode("utf-8"))
    return path


def new_prompt(library: PromptLibrary, name: str, description: str = "") -> Path:
    """A skeleton prompt file for ``name`` to edit (never over an existing one)."""
    about = description or f"what {name} is for"
    return add_prompt(library, name, SKELETON.format(description=about))


def remove_prompt(library: PromptLibrary, name: str) -> Path:
    """Delete the user's prompt ``name``; a project's prompt is not the user's to remove here."""
    path = library.user_dir / f"{check_name(name)}.md"
    if not (path.exists() or path.is_symlink()):
        found = library.get(name)  # names the available ones when there is none
        raise ConfigError(
            f"prompt {name!r} is the project's ({found.path}), not one of yours",
            hint="delete the file in the project yourself if you mean to",
        )
    path.unlink()
    return path
