"""An untrusted project's skill files, read as its own real files only.

``.openheim/skills`` (flat: ``NAME.md``) and ``.agents/skills`` (nested: ``NAME/SKILL.md``) are
opened from the project root one folder at a time with ``O_NOFOLLOW``, and each file the same
way (``openheim.files.hostile``): a symlink anywhere on the way, a hard link, a FIFO or a file over
``MAX_BYTES`` is skipped with a warning naming it. A cloned repository can so never offer another
file of the user's as a skill, whose text would reach the model. The user's folder and a trusted
project's follow symlinks inside the folder: the user chose them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from openheim.files.hostile import NotReal, open_real_folder, open_real_subfolder, read_real

MAX_BYTES = 256 * 1024
SKILL_FILE = "SKILL.md"
HINT = (
    "an untrusted project's skills must be its own files; `openheim trust` the project to "
    "follow links"
)


def read_untrusted(
    folder: Path, root: Path, layout: str, warn: Callable[[str], None]
) -> list[tuple[str, Path, str]]:
    """(default name, shown path, text) of each readable skill file in ``folder``, in name
    order; what cannot be read is told to ``warn``."""
    try:
        fd = open_real_folder(root, folder.relative_to(root).parts, HINT)
    except FileNotFoundError:
        return []
    except NotReal as err:
        warn(f"ignored the skills of {folder}: {err}")
        return []
    except OSError as err:
        warn(f"ignored the skills of {folder}: {err.strerror or err}")
        return []
    try:
        with os.scandir(fd) as it:
            names = sorted(e.name for e in it if not e.name.startswith("."))
        read = _nested if layout == "nested" else _flat
        return [found for name in names if (found := read(fd, folder, name, warn)) is not None]
    finally:
        os.close(fd)


def _flat(
    fd: int, folder: Path, name: str, warn: Callable[[str], None]
) -> tuple[str, Path, str] | None:
    if not name.endswith(".md"):
        return None
    path = folder / name
    try:
        return name.removesuffix(".md"), path, read_real(fd, name, MAX_BYTES, HINT)
    except (OSError, ValueError) as err:
        warn(f"skipped skill file {path}: {err}")
        return None


def _nested(
    fd: int, folder: Path, name: str, warn: Callable[[str], None]
) -> tuple[str, Path, str] | None:
    path = folder / name / SKILL_FILE
    try:
        sub = open_real_subfolder(fd, name, f"{folder / name}", HINT)
    except NotReal as err:
        if (folder / name).is_dir():  # a file beside the skill folders is no skill
            warn(f"skipped skill folder {folder / name}: {err}")
        return None
    except OSError:
        return None
    try:
        return name, path, read_real(sub, SKILL_FILE, MAX_BYTES, HINT)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        warn(f"skipped skill file {path}: {err}")
        return None
    finally:
        os.close(sub)
