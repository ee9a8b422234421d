"""Guard rail: the tests mirror the source tree.

The tests of a package's modules live in the package's folder (``src/openheim/cli/`` ->
``tests/cli/``); a loose ``tests/test_NAME.py`` is named after what it tests: a top-level
module (``NAME`` is ``loop`` or starts with ``loop_`` for ``src/openheim/loop.py``) or the
project as a whole (``PROJECT_TESTS``). A loose file named after a package, after a module
inside a package, or after nothing is refused with the folder it belongs in, and so is a folder
of tests that is named after no package (but ``PROJECT_FOLDERS``, tests of every surface at once).
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROJECT_TESTS = frozenset(
    {"architecture", "docs_examples", "imports", "isolation", "pgcluster", "system_deps"}
)
"""Loose test files about the project as a whole rather than one module: its layering, its
documentation's examples, its start-up imports, the suite's isolation, its private PostgreSQL
cluster and its system checks."""
PROJECT_FOLDERS = frozenset({"parity"})
"""Folders of tests about the project as a whole: the same script driven through every surface."""


def _subjects(stem: str) -> list[str]:
    """The names a test file's stem may be named after, longest first: ``loop_guards_x`` ->
    ``loop_guards_x``, ``loop_guards``, ``loop``."""
    parts = stem.split("_")
    return ["_".join(parts[:end]) for end in range(len(parts), 0, -1)]


def _homes(name: str, package: Path) -> list[str]:
    """The test folders for a module called ``name`` inside a package (its package's folder)
    or for a package called ``name`` (its own folder)."""
    modules = package.glob(f"*/**/{name}.py")
    packages = (path.parent for path in package.glob(f"**/{name}/__init__.py"))
    folders = {path.relative_to(package).parent for path in modules}
    folders |= {path.relative_to(package) for path in packages}
    return sorted(f"tests/{folder.as_posix()}/" for folder in folders)


def misplaced(tests: Path, package: Path) -> list[str]:
    """One line per loose ``tests/test_*.py`` that belongs in a package's folder, saying where."""
    top = {path.stem for path in package.glob("*.py") if not path.stem.startswith("_")}
    problems = []
    for path in sorted(tests.glob("test_*.py")):
        stem = path.stem.removeprefix("test_")
        for subject in _subjects(stem):
            if subject in top or subject in PROJECT_TESTS:
                break
            homes = _homes(subject, package)
            if homes:
                problems.append(
                    f"tests/{path.name}: it tests a package's module ({subject}); "
                    f"`git mv` it into {' or '.join(homes)}"
                )
                break
        else:
            problems.append(
                f"tests/{path.name}: names no top-level module of src/openheim; name it "
                "test_MODULE[_ASPECT].py after the one it tests, or move it to its package's folder"
            )
    return problems


def strays(tests: Path, package: Path) -> list[str]:
    """One line per folder of ``tests/`` holding test files that names no package of the source
    (a package's tests may group theirs in subfolders of its folder)."""
    return [
        f"tests/{folder.name}/: no package src/openheim/{folder.name}/; move its tests to the "
        "folder of the package they test"
        for folder in sorted(tests.iterdir())
        if any(folder.glob("**/test_*.py"))
        and not (package / folder.name / "__init__.py").is_file()
        and folder.name not in PROJECT_FOLDERS
    ]


def test_the_tests_mirror_the_source_tree() -> None:
    tests, package = ROOT / "tests", ROOT / "src" / "openheim"
    assert misplaced(tests, package) + strays(tests, package) == []


@pytest.fixture
def package(tmp_path: Path) -> Path:
    """A small source tree: top-level modules ``loop`` and ``loop_guards``, packages ``cli``
    and ``runtime`` (with ``attach`` and ``prompt_commands``), and a top-level ``prompt``."""
    root = tmp_path / "src" / "openheim"
    for name in (
        "__init__.py",
        "_version.py",
        "loop.py",
        "loop_guards.py",
        "prompt.py",
        "cli/__init__.py",
        "cli/run.py",
        "runtime/__init__.py",
        "runtime/attach.py",
        "runtime/prompt_commands.py",
        "runtime/store/__init__.py",
    ):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("")
    return root


@pytest.mark.parametrize(
    ("loose", "expected"),
    [
        ("test_loop.py", None),
        ("test_loop_cancel.py", None),
        ("test_loop_guards.py", None),
        ("test_prompt.py", None),
        ("test_architecture_rules.py", None),
        ("test_imports.py", None),
        ("test_attach.py", "`git mv` it into tests/runtime/"),
        ("test_attach_hostile.py", "`git mv` it into tests/runtime/"),
        ("test_prompt_commands.py", "`git mv` it into tests/runtime/"),
        ("test_cli.py", "`git mv` it into tests/cli/"),
        ("test_cli_notices.py", "`git mv` it into tests/cli/"),
        ("test_run_cli.py", "`git mv` it into tests/cli/"),
        ("test_runtime.py", "`git mv` it into tests/runtime/"),
        ("test_store.py", "`git mv` it into tests/runtime/store/"),
        ("test_version.py", "names no top-level module"),
        ("test_elsewhere.py", "names no top-level module"),
    ],
)
def test_a_loose_test_of_a_package_module_is_refused(
    package: Path, tmp_path: Path, loose: str, expected: str | None
) -> None:
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "helpers.py").write_text("")
    (tests / loose).write_text("")
    found = misplaced(tests, package)
    if expected is None:
        assert found == []
    else:
        assert len(found) == 1 and found[0].startswith(f"tests/{loose}: ") and expected in found[0]


@pytest.mark.parametrize(
    ("folder", "stray"),
    [
        ("cli", False),
        ("runtime", False),
        ("runtime/store", False),
        ("runtime/local", False),
        ("local", True),
        ("loop", True),
        ("openheim", True),
    ],
)
def test_a_test_folder_named_after_no_package_is_refused(
    package: Path, tmp_path: Path, folder: str, stray: bool
) -> None:
    tests = tmp_path / "tests"
    (tests / folder).mkdir(parents=True)
    (tests / folder / "test_x.py").write_text("")
    (tests / "helpers").mkdir()
    found = strays(tests, package)
    if stray:
        assert len(found) == 1 and found[0].startswith(f"tests/{folder}/: no package src/openheim/")
    else:
        assert found == []
