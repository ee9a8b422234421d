"""The prompts library: named prompts in Markdown, used as a run's system prompt or, when they
hold placeholders, as templates of the user's message (``openheim prompts``, ``run
--prompt-name``, ``run --template``, slash commands in the chat and over ACP).

- ``library``: ``PromptLibrary``, ``NamedPrompt``, the sources and what an untrusted project's
  prompts may do;
- ``template``: placeholders, declared arguments and expansion;
- ``files``: adding, creating and removing the user's prompt files;
- ``commands``: templates as slash commands (the chat, ACP).
"""

from __future__ import annotations

from collections.abc import Callable

from openheim.config.load import Settings
from openheim.config.trust import is_trusted
from openheim.prompts.library import NamedPrompt, PromptLibrary
from openheim.skills.setup import find_repo_root

__all__ = ["NamedPrompt", "PromptLibrary", "prompts_for"]


def prompts_for(settings: Settings, warn: Callable[[str], None] | None = None) -> PromptLibrary:
    """The prompts library of a session run with ``settings`` (the project found as for
    skills: the project root, else the repository root); ``warn`` gets each skipped file."""
    root = settings.project_root or find_repo_root(settings.work_dir)
    trusted = root is not None and is_trusted(root, settings.data_dir)
    return PromptLibrary(settings.data_dir, root, trusted, warn)
