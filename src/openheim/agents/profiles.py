"""Subagent profiles: Markdown files that each define a separate agent for ``delegate_task``.

Sources (a project profile wins over a user profile of the same name, with the rule below):

1. ``data_dir/agents/*.md``: the user's own profiles.
2. ``<project>/.openheim/agents/*.md``: the project's profiles.

The file stem is the profile's name (case-sensitive, no whitespace, checked like a skill name so
it can never address a file elsewhere). An optional ``+++`` TOML or ``---`` YAML frontmatter sets
``description``, ``model``, ``provider`` (used only with ``model``), ``tools`` (fnmatch allow-list)
and ``max_iterations``; the body is the subagent's system prompt. Unknown fields only warn. A
frontmatter that does not parse, or a field of the wrong type, skips the profile with a warning:
ignoring a malformed ``tools`` list would silently grant every tool.

Untrusted projects may not widen anything. Their profiles are loaded only under names the user has
no profile of (so they cannot replace a user's persona or its tool limits), and their ``model``,
``provider`` and ``max_iterations`` are dropped with a warning (so a cloned repository cannot
route work, or spend money, on a model the user did not choose, nor run longer than the user
allows). Their ``tools`` list is kept: it can only narrow the parent's
tools, which the parent's sandbox and approval gate still guard.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from openheim.skills.names import name_problem

KNOWN_FIELDS = frozenset({"description", "model", "provider", "tools", "max_iterations"})
NAME_HINT = "a subagent's name is its file name without '.md', such as 'code-reviewer'"
MAX_PROFILE_BYTES = 256 * 1024
"""The largest profile file an untrusted project may offer."""
_UNTRUSTED_HINT = (
    "an untrusted project's subagent profiles must be its own files; `openheim trust` the "
    "project to follow links"
)


class ProfileSource(StrEnum):
    """Where a profile was found."""

    USER = "user"
    PROJECT = "project"


@dataclass(frozen=True)
class AgentProfile:
    """One subagent: its persona (``system_prompt``) and what it may override of the parent's."""

    name: str
    description: str
    model: str | None
    provider: str | None
    """Only set together with ``model``."""
    tools: tuple[str, ...] | None
    """fnmatch patterns of the parent's tools it may use; None: all of them."""
    max_iterations: int | None
    system_prompt: str
    path: Path
    source: ProfileSource


class ProfileError(ValueError):
    """A frontmatter field has a value of the wrong type; the message names the field."""


def load_profiles(
    data_dir: Path, project_root: Path | None, trusted: bool
) -> tuple[dict[str, AgentProfile], list[str]]:
    """Every usable profile by name, and warnings about the files and fields that were not used."""
    warnings: list[str] = []
    user_dir = data_dir / "agents"
    profiles = dict(_scan(user_dir, ProfileSource.USER, None, warnings))
    if project_root is None:
        return profiles, warnings
    project_dir = project_root / ".openheim" / "agents"
    if project_dir.resolve() == user_dir.resolve():  # a project at ~ is not a second source
        return profiles, warnings
    found = (
        _scan(project_dir, ProfileSource.PROJECT, project_root, warnings)
        if trusted
        else _scan_untrusted(project_dir, project_root, warnings)
    )
    for name, profile in found:
        if not trusted:
            if name in profiles:
                warnings.append(
                    f"ignored subagent profile {profile.path}: this project is not trusted, so "
                    f"it cannot replace your own {name!r} profile (trust the folder to allow it)"
                )
                continue
            profile = _untrusted(profile, warnings)
        profiles[name] = profile
    return profiles, warnings


def _untrusted(profile: AgentProfile, warnings: list[str]) -> AgentProfile:
    """An untrusted project's profile without its model, provider and ``max_iterations``."""
    dropped = []
    if profile.model is not None:
        dropped.append(f"model {profile.model!r}")
    if profile.max_iterations is not None:
        dropped.append(f"max_iterations {profile.max_iterations}")
    if not dropped:
        return profile
    warnings.append(
        f"subagent profile {profile.path}: ignored {' and '.join(dropped)} because this project "
        "is not trusted; it runs on your model and your max_iterations (trust the folder to "
        "allow it)"
    )
    return dataclasses.replace(profile, model=None, provider=None, max_iterations=None)


def _scan(
    folder: Path, source: ProfileSource, within: Path | None, warnings: list[str]
) -> Iterator[tuple[str, AgentProfile]]:
    """The folder's valid profiles in name order; every skipped file adds a warning."""
    base = _usable_folder(folder, within, warnings)
    if base is None:
        return
    from openheim.skills.frontmatter import FrontmatterError  # only where profiles may be

    for name, path in _candidates(folder):
        real = path.resolve()
        if not (real.is_relative_to(base) and real.is_file()):
            warnings.append(
                f"skipped subagent profile {path}: it is not a file inside {folder} "
                "(a symlink leading out of the folder is refused)"
            )
            continue
        if _refused_name(name, path, warnings):
            continue
        try:
            yield name, parse_profile(name, real, source, warnings)
        except (OSError, FrontmatterError, ProfileError) as err:
            warnings.append(f"skipped subagent profile {path}: {err}")


def _scan_untrusted(
    folder: Path, root: Path, warnings: list[str]
) -> Iterator[tuple[str, AgentProfile]]:
    """An untrusted project's profiles, read only from its own regular files
    (``openheim.files.hostile``): no symlink from the project folder down, no hard link."""
    from openheim.files.hostile import NotReal, open_real_folder, read_real
    from openheim.skills.frontmatter import FrontmatterError

    try:
        fd = open_real_folder(root, folder.relative_to(root).parts, _UNTRUSTED_HINT)
    except FileNotFoundError:
        return
    except (NotReal, OSError) as err:
        warnings.append(f"skipped subagent folder {folder}: {err}")
        return
    try:
        with os.scandir(fd) as it:
            names = sorted(e.name for e in it if e.name.endswith(".md"))
        for entry in names:
            name, path = entry.removesuffix(".md"), folder / entry
            if entry.startswith(".") or _refused_name(name, path, warnings):
                continue
            try:
                text = read_real(fd, entry, MAX_PROFILE_BYTES, _UNTRUSTED_HINT)
                yield name, parse_profile(name, path, ProfileSource.PROJECT, warnings, text)
            except (OSError, ValueError, FrontmatterError) as err:
                warnings.append(f"skipped subagent profile {path}: {err}")
    finally:
        os.close(fd)


def _refused_name(name: str, path: Path, warnings: list[str]) -> bool:
    """True (with a warning) when ``name`` cannot name a subagent."""
    problem = name_problem(name) or ("contains whitespace" if _has_space(name) else None)
    if problem is not None:
        warnings.append(
            f"skipped subagent profile {path}: the name {name!r} {problem} ({NAME_HINT})"
        )
    return problem is not None


def _has_space(name: str) -> bool:
    return any(c.isspace() for c in name)


def _usable_folder(folder: Path, within: Path | None, warnings: list[str]) -> Path | None:
    """The folder's real path; None when absent or (for a project) resolving outside it."""
    if not folder.is_dir():
        return None
    real = folder.resolve()
    if within is not None and not real.is_relative_to(within.resolve()):
        warnings.append(f"skipped subagent folder {folder}: it resolves outside the project")
        return None
    return real


def _candidates(folder: Path) -> Iterator[tuple[str, Path]]:
    """(name, file) pairs of ``*.md`` files in name order; dot-files are ignored."""
    try:
        with os.scandir(folder) as it:
            names = sorted(e.name for e in it)
    except OSError:
        return
    for entry in names:
        if entry.endswith(".md") and not entry.startswith("."):
            yield entry.removesuffix(".md"), folder / entry


def parse_profile(
    name: str, path: Path, source: ProfileSource, warnings: list[str], text: str | None = None
) -> AgentProfile:
    """One profile file, or its ``text`` already read (raises OSError, FrontmatterError or
    ProfileError)."""
    from openheim.skills.frontmatter import split_frontmatter

    if text is None:
        text = path.read_text(encoding="utf-8", errors="replace")
    doc = split_frontmatter(text)
    meta = doc.meta
    unknown = sorted(set(meta) - KNOWN_FIELDS)
    if unknown:
        warnings.append(
            f"subagent profile {path}: ignored unknown field(s) {', '.join(unknown)} "
            f"(known: {', '.join(sorted(KNOWN_FIELDS))})"
        )
    model = _string(meta, "model")
    provider = _string(meta, "provider")
    if provider is not None and model is None:
        warnings.append(f"subagent profile {path}: ignored provider {provider!r}: it needs model")
        provider = None
    return AgentProfile(
        name=name,
        description=" ".join((_string(meta, "description") or "").split()),
        model=model,
        provider=provider,
        tools=_patterns(meta),
        max_iterations=_positive_int(meta),
        system_prompt=doc.body.strip(),
        path=path,
        source=source,
    )


def _string(meta: Mapping[str, object], key: str) -> str | None:
    if key in meta and not isinstance(meta[key], str):
        raise ProfileError(f"{key} must be a string, got {meta[key]!r}")
    from openheim.skills.frontmatter import text_field

    return text_field(meta, key)


def _patterns(meta: Mapping[str, object]) -> tuple[str, ...] | None:
    """``tools``: a TOML array of strings, or (from YAML) ``[a, b]`` / ``a, b`` text."""
    if "tools" not in meta:
        return None
    value = meta["tools"]
    if isinstance(value, str):
        inner = value.strip()
        if inner.startswith("[") and inner.endswith("]"):
            inner = inner[1:-1]
        value = [part.strip().strip("'\"") for part in inner.split(",") if part.strip()]
    if not isinstance(value, list) or not all(isinstance(p, str) and p for p in value):
        raise ProfileError(f"tools must be a list of tool names or patterns, got {value!r}")
    return tuple(value)


def _positive_int(meta: Mapping[str, object]) -> int | None:
    """``max_iterations``: a positive integer (YAML gives it as text)."""
    if "max_iterations" not in meta:
        return None
    value = meta["max_iterations"]
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ProfileError(f"max_iterations must be a positive integer, got {value!r}")
    return value
