"""The path sandbox refuses every way out of the work dir, and allows what is inside."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from openheim.errors import SandboxError
from openheim.tools.sandbox import PathSandbox


@pytest.fixture
def root(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    (work / "sub").mkdir(parents=True)
    (work / "file.txt").write_text("x")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("secret")
    return work.resolve()


@pytest.fixture
def box(root: Path) -> PathSandbox:
    return PathSandbox(root)


@pytest.mark.parametrize(
    "raw",
    [
        "../outside/secret.txt",
        "sub/../../outside/secret.txt",
        "/etc/passwd",
        "missing/../../outside/secret.txt",
        "missing/deeper/../../../etc/passwd",
        "/proc/self/root/etc/passwd",
        "",
        "a\0b",
    ],
)
def test_lexical_escapes_are_refused(box: PathSandbox, root: Path, raw: str) -> None:
    with pytest.raises(SandboxError):
        box.resolve(raw, root)


def test_symlink_to_etc_is_refused(box: PathSandbox, root: Path) -> None:
    (root / "etc").symlink_to("/etc")
    with pytest.raises(SandboxError, match="symlink out"):
        box.resolve("etc/passwd", root)


def test_symlinked_directory_outside_is_refused(box: PathSandbox, root: Path) -> None:
    (root / "link").symlink_to(root.parent / "outside", target_is_directory=True)
    with pytest.raises(SandboxError, match="symlink out"):
        box.resolve("link/secret.txt", root)
    with pytest.raises(SandboxError):
        box.resolve("link/new.txt", root, write=True)


def test_dangling_symlink_is_refused(box: PathSandbox, root: Path) -> None:
    (root / "dangling").symlink_to(root / "nowhere")
    with pytest.raises(SandboxError, match="dangling"):
        box.resolve("dangling", root, write=True)


def test_symlink_to_a_file_outside_is_refused_for_writes(box: PathSandbox, root: Path) -> None:
    (root / "evil").symlink_to(root.parent / "outside" / "secret.txt")
    with pytest.raises(SandboxError):
        box.resolve("evil", root, write=True)


def test_symlink_chain_ending_outside_is_refused(box: PathSandbox, root: Path) -> None:
    (root / "hop2").symlink_to(root.parent / "outside")
    (root / "hop1").symlink_to(root / "hop2")
    with pytest.raises(SandboxError):
        box.resolve("hop1/secret.txt", root)


def test_paths_inside_are_allowed(box: PathSandbox, root: Path) -> None:
    sub = root / "sub"
    assert box.resolve("file.txt", root) == root / "file.txt"
    assert box.resolve("../file.txt", sub) == root / "file.txt"
    assert box.resolve(str(root / "sub"), root) == sub
    assert box.resolve("sub/../file.txt", root) == root / "file.txt"
    assert box.resolve("new/dirs/file.txt", root, write=True) == root / "new/dirs/file.txt"
    assert box.resolve(".", root) == root


def test_symlink_inside_resolves_to_its_target(box: PathSandbox, root: Path) -> None:
    (root / "alias").symlink_to(root / "sub", target_is_directory=True)
    assert box.resolve("alias/x.txt", root, write=True) == root / "sub" / "x.txt"


def test_work_dir_reached_through_a_symlink(tmp_path: Path, root: Path) -> None:
    link = tmp_path / "worklink"
    link.symlink_to(root, target_is_directory=True)
    box = PathSandbox(link)
    assert box.root == root
    assert box.resolve(str(link / "file.txt"), root) == root / "file.txt"


def test_cwd_must_be_inside(box: PathSandbox, root: Path) -> None:
    assert box.check_cwd(root / "sub") == root / "sub"
    with pytest.raises(SandboxError):
        box.check_cwd(root.parent / "outside")
    with pytest.raises(SandboxError, match="not a directory"):
        box.check_cwd(root / "file.txt")


def test_writing_to_the_root_itself_is_refused(box: PathSandbox, root: Path) -> None:
    with pytest.raises(SandboxError):
        box.resolve(".", root, write=True)


def test_missing_work_dir(tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match="not a directory"):
        PathSandbox(tmp_path / "nope")


def test_display_is_relative(box: PathSandbox, root: Path) -> None:
    assert box.display(root / "sub" / "a.txt") == "sub/a.txt"
    assert box.display(root) == "."
    assert os.sep not in box.display(root / "sub" / "a.txt").replace("/", "")
