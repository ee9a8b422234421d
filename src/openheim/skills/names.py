"""Skill names: what may name a skill, so that a name can never address a file outside its folder.

A name comes from a file or folder name, a frontmatter ``name``, ``default_skills`` in a config
file, or the model's ``load_skill`` call, so every one is checked the same way.
"""

from __future__ import annotations

from openheim.errors import ConfigError

MAX_NAME_LENGTH = 128
NAME_HINT = "a skill name is a file name without '.md', such as 'rust' or 'code-review'"


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a skill, or None when it can."""
    if not name.strip():
        return "is empty"
    checks = (
        ("\0" in name, "contains a NUL character"),
        (any(ord(c) < 32 or ord(c) == 127 for c in name), "contains a control character"),
        ("/" in name or "\\" in name, "contains a path separator"),
        (".." in name, "contains '..'"),
        (":" in name, "contains ':' (a drive prefix or stream name)"),
        (name.startswith("."), "starts with a dot"),
        (name != name.strip(), "starts or ends with whitespace"),
        (len(name) > MAX_NAME_LENGTH, f"is longer than {MAX_NAME_LENGTH} characters"),
    )
    return next((problem for failed, problem in checks if failed), None)


def validate_name(name: str) -> str:
    """``name`` itself, or a ConfigError saying what is wrong with it."""
    problem = name_problem(name)
    if problem is not None:
        raise ConfigError(f"skill name {name!r} {problem}", hint=NAME_HINT)
    return name
