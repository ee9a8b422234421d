"""Guard rail: surfaces reach the runtime only through its face, ``openheim.runtime``'s front
and ``__all__`` (the rule ``architecture.face_imports``), each breach planted in a package of
its own so that a rule that stopped finding anything fails here."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.architecture import plant

# Surfaces reach the runtime through its face: ``pkg.runtime``'s front and ``__all__`` only.

FACE_FILES = {
    "runtime/__init__.py": (
        "from pkg.runtime import approvals\n"
        "from pkg.runtime.assembly import open_session\n"
        "Runtime = 1\n"
        "__all__ = ['Runtime', 'approvals']\n"
    ),
    "runtime/approvals.py": "X = 1\n",
    "runtime/assembly.py": "def open_session() -> None: ...\n",
    "api/__init__.py": "from pkg.runtime import Runtime\n",
    "tui/__init__.py": "",
    "chat/__init__.py": "",
}
FACE_ROWS = {path: "runtime" for path in FACE_FILES if path.startswith(("runtime", "api"))}
FACE_ROWS |= {"__init__.py": "surface", "tui/__init__.py": "surface", "chat/__init__.py": "surface"}


def plant_face(tmp_path: Path, source: str, importer: str = "tui") -> list[str]:
    """``pkg`` with a runtime face and a surface module ``{importer}/m.py`` being ``source``."""
    files = FACE_FILES | {f"{importer}/m.py": source}
    return plant(tmp_path, files, FACE_ROWS | {f"{importer}/m.py": "surface"})


PAST_THE_FACE = {
    "module level": "from pkg.runtime.approvals import X\n",
    "plain import": "import pkg.runtime.approvals\n",
    "inside a function": "def f() -> None:\n    from pkg.runtime.approvals import X\n",
    "type checking": (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from pkg.runtime.approvals import X\n"
    ),
    "relative": "from ..runtime.approvals import X\n",
    "by name": "import importlib\nM = importlib.import_module('pkg.runtime.approvals')\n",
}
LIBRARY_FACE = {
    "module level": "from pkg.api import Runtime\n",
    "plain import": "import pkg.api\n",
    "from the package": "from pkg import api\n",
    "inside a function": "def f() -> None:\n    from pkg.api import Runtime\n",
    "type checking": (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.api import Runtime\n"
    ),
    "relative": "from ..api import Runtime\n",
    "by name": "import importlib\nM = importlib.import_module('pkg.api')\n",
}
NOT_OFFERED = {
    "an internal submodule": "from pkg.runtime import assembly\n",
    "an internal name": "from pkg.runtime import open_session\n",
    "relative": "from ..runtime import assembly\n",
    "inside a function": "def f() -> None:\n    from pkg.runtime import assembly\n",
}


@pytest.mark.parametrize("importer", ["tui", "chat"])
@pytest.mark.parametrize("how", list(PAST_THE_FACE))
def test_a_surface_importing_past_the_runtime_face_fails(
    tmp_path: Path, how: str, importer: str
) -> None:
    found = plant_face(tmp_path, PAST_THE_FACE[how], importer)
    assert len(found) == 1, found
    assert found[0].startswith(f"pkg/{importer}/m.py:")
    assert found[0].endswith(
        "surface module imports pkg.runtime.approvals is past the runtime's face: import it "
        "through pkg.runtime"
    )


@pytest.mark.parametrize("how", list(LIBRARY_FACE))
def test_a_surface_importing_the_library_face_fails(tmp_path: Path, how: str) -> None:
    found = plant_face(tmp_path, LIBRARY_FACE[how])
    assert len(found) == 1, found
    assert found[0].startswith("pkg/tui/m.py:")
    assert found[0].endswith(
        "surface module imports pkg.api is the library's face for host programs: import from "
        "pkg.runtime"
    )


@pytest.mark.parametrize("how", list(NOT_OFFERED))
def test_a_surface_importing_what_the_face_does_not_offer_fails(tmp_path: Path, how: str) -> None:
    found = plant_face(tmp_path, NOT_OFFERED[how])
    assert len(found) == 1, found
    assert found[0].startswith("pkg/tui/m.py:")
    assert "surface module imports pkg.runtime does not offer " in found[0]
    assert found[0].endswith(
        "(its __all__): add it there if surfaces need it, or keep it inside the runtime"
    )


@pytest.mark.parametrize(
    "source",
    [
        "from pkg.runtime import Runtime, approvals\n",
        "from ..runtime import approvals\n",
        "import pkg.runtime\n",
        "def f() -> None:\n    from pkg.runtime import approvals\n",
    ],
    ids=["names it offers", "relative", "the package", "inside a function"],
)
def test_a_surface_may_import_what_the_face_offers(tmp_path: Path, source: str) -> None:
    assert plant_face(tmp_path, source) == []


def test_the_runtime_may_import_its_own_submodules_and_the_library_face(tmp_path: Path) -> None:
    files = FACE_FILES | {"low.py": "import pkg.runtime.assembly\nfrom pkg.api import Runtime\n"}
    assert plant(tmp_path, files, FACE_ROWS | {"low.py": "runtime"}) == []
