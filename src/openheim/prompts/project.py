"""The prompts library of a session: the project found as for skills, trusted or not."""

from __future__ import annotations

from collections.abc import Callable

from openheim.config.load import Settings
from openheim.config.trust import is_trusted
from openheim.prompts.library import PromptLibrary
from openheim.skills.setup import find_repo_root


def prompts_for(settings: Settings, warn: Callable[[str], None] | None = None) -> PromptLibrary:
    """The prompts library of a session run with ``settings`` (the project found as for
    skills: the project root, else the repository root); ``warn`` gets each skipped file."""
    root = settings.project_root or find_repo_root(settings.work_dir)
    trusted = root is not None and is_trusted(root, settings.data_dir)
    return PromptLibrary(settings.data_dir, root, trusted, warn)
