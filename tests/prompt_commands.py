"""The same skill and template commands typed on every surface, and the one request each
must send the model (the parity of ``runtime.prompt_commands``)."""

from __future__ import annotations

from pathlib import Path

SKILL = "---\ndescription: Review a change\n---\n\nBe thorough.\n"
TEMPLATE = "---\narguments: lang\n---\nFix this {{lang}}: {{input}}"

TYPED = ("/review the diff", "/fix lang=go the loop")
"""A skill command, then a template command with an argument."""
SENT = ('<skill name="review">\nBe thorough.\n</skill>\n\nthe diff', "Fix this go: the loop")
"""What reaches the model for each of ``TYPED``."""


def install(home: Path) -> None:
    """The user's skill ``review`` and template ``fix`` in the data dir ``home``."""
    (home / "skills").mkdir(exist_ok=True)
    (home / "skills" / "review.md").write_text(SKILL)
    (home / "prompts").mkdir(exist_ok=True)
    (home / "prompts" / "fix.md").write_text(TEMPLATE)
