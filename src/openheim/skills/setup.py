"""Skills from settings: which project a session's skills come from, and whether it is trusted.

The project is the one whose ``.openheim/config.toml`` was loaded, else the repository around the
work dir (the nearest folder holding ``.git``), so ``.agents/skills`` works without any openheim
config. Outside both there are only the user's skills.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from openheim.config.load import Settings
from openheim.config.trust import is_trusted
from openheim.skills.manager import SkillsManager


def find_repo_root(start: Path) -> Path | None:
    """The nearest folder at or above ``start`` that holds ``.git`` (a folder or a file)."""
    start = start.resolve()
    return next((f for f in (start, *start.parents) if (f / ".git").exists()), None)


def skills_for(settings: Settings, warn: Callable[[str], None] | None = None) -> SkillsManager:
    """The skills manager of a session run with ``settings``; ``warn`` gets each skipped file
    (else it is logged)."""
    root = settings.project_root or find_repo_root(settings.work_dir)
    trusted = root is not None and is_trusted(root, settings.data_dir)
    return SkillsManager(settings.data_dir, root, trusted, warn)
