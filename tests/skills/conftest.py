from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass
class Layout:
    """A user data dir and a project, both empty, in a temporary folder."""

    root: Path
    data_dir: Path
    project: Path

    def user(self, name: str, text: str) -> Path:
        return write(self.data_dir / "skills" / name, text)

    def project_skill(self, name: str, text: str) -> Path:
        return write(self.project / ".openheim" / "skills" / name, text)

    def agents_skill(self, folder: str, text: str) -> Path:
        return write(self.project / ".agents" / "skills" / folder / "SKILL.md", text)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    data_dir = tmp_path / "home" / ".openheim"
    project = tmp_path / "project"
    data_dir.mkdir(parents=True)
    project.mkdir()
    return Layout(tmp_path, data_dir, project)
