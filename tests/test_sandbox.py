"""The path sandbox: every way out of the work dir is refused, everything inside works."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from openheim.errors import SandboxError
from openheim.tools.sandbox import PathSandbox


@pytest.fixture
def work(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / "sub" / "file.txt").write_text("inside")
    (root / "top.txt").write_text("top")
    return root.resolve()


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    place = tmp_path / "outside"
    place.mkdir()
    (place / "secret.txt").write_text("secret")
    return place.resolve()


@pytest.fixture
def box(work: Path) -> PathSandbox:
    return PathSandbox(work)


@pytest.mark.parametrize(
    "raw",
    [
        "../outside/secret.txt",
        "..",
        "sub/../../outside",
        "missing/../../etc/passwd",
        "missing/deeper/../../../etc/passwd",
        "/etc/passwd",
        "/proc/self/root/etc/passwd",
        "/",
        "",
        "bad\x00name",
    ],
)
def test_lexical_escapes_are_refused(box: PathSandbox, work: Path, raw: str) -> None:
    with pytest.raises(SandboxError):
        box.resolve(raw, work)


def test_absolute_path_outside_is_refused_even_if_it_exists(
    box: PathSandbox, work: Path, outside: Path
) -> None:
    with pytest.raises(SandboxError, match="outside the work dir"):
        box.resolve(str(outside / "secret.txt"), work)
    with pytest.raises(SandboxError):
        box.resolve(str(work) + "-sibling/x", work)  # a shared name prefix is not "inside"


def test_symlink_to_etc_is_refused(box: PathSandbox, work: Path) -> None:
    (work / "etc").symlink_to("/etc")
    (work / "passwd").symlink_to("/etc/passwd")
    for raw in ("etc", "etc/passwd", "passwd", "sub/../etc/hosts"):
        with pytest.raises(SandboxError, match="symlink out of the work dir"):
            box.resolve(raw, work)


def test_symlinked_directory_pointing_outside_is_refused(
    box: PathSandbox, work: Path, outside: Path
) -> None:
    (work / "sub" / "out").symlink_to(outside, target_is_directory=True)
    (work / "relative").symlink_to(Path("..") / ".." / "outside")
    for raw in ("sub/out/secret.txt", "sub/out", "sub/out/new.txt", "relative/secret.txt"):
        with pytest.raises(SandboxError):
            box.resolve(raw, work)


def test_chained_symlinks_that_end_outside_are_refused(
    box: PathSandbox, work: Path, outside: Path
) -> None:
    (work / "hop2").symlink_to(outside)
    (work / "hop1").symlink_to(work / "hop2")
    with pytest.raises(SandboxError):
        box.resolve("hop1/secret.txt", work)


def test_dangling_symlink_is_refused(box: PathSandbox, work: Path) -> None:
    (work / "dangling").symlink_to(work / "not-there")
    (work / "loop").symlink_to(work / "loop")
    for raw in ("dangling", "dangling/x", "loop"):
        with pytest.raises(SandboxError, match="dangling"):
            box.resolve(raw, work)


def test_writes_through_a_symlink_that_leaves_are_refused(
    box: PathSandbox, work: Path, outside: Path
) -> None:
    (work / "exit").symlink_to(outside)
    (work / "secret-link").symlink_to(outside / "secret.txt")
    for raw in ("exit/new.txt", "exit/secret.txt", "secret-link", "exit/deep/new.txt"):
        with pytest.raises(SandboxError):
            box.resolve(raw, work, write=True)
    with pytest.raises(SandboxError, match="work dir itself"):
        box.resolve(".", work, write=True)


def test_relative_paths_resolve_against_a_sub_cwd(box: PathSandbox, work: Path) -> None:
    cwd = work / "sub" / "deeper"
    assert box.resolve("../file.txt", cwd) == work / "sub" / "file.txt"
    assert box.resolve("../../top.txt", cwd) == work / "top.txt"
    assert box.resolve(".", cwd) == cwd
    with pytest.raises(SandboxError):
        box.resolve("../../../x", cwd)


def test_allowed_paths(box: PathSandbox, work: Path) -> None:
    (work / "alias").symlink_to(work / "sub")
    (work / "sub" / "up").symlink_to("..")
    assert box.resolve("alias/file.txt", work) == work / "sub" / "file.txt"
    assert box.resolve("sub/up/top.txt", work) == work / "top.txt"
    assert box.resolve("a/../sub/file.txt", work) == work / "sub" / "file.txt"
    assert box.resolve("new/dirs/file.txt", work, write=True) == work / "new" / "dirs" / "file.txt"
    assert box.resolve(str(work / "top.txt"), work) == work / "top.txt"
    assert box.resolve(".", work) == work


def test_paths_handed_back_contain_no_symlinks(box: PathSandbox, work: Path) -> None:
    (work / "alias").symlink_to("sub")
    resolved = box.resolve("alias/deeper/new.txt", work, write=True)
    assert resolved == work / "sub" / "deeper" / "new.txt"
    assert Path(os.path.realpath(resolved.parent)) == resolved.parent


def test_a_work_dir_given_through_a_symlink(tmp_path: Path, work: Path) -> None:
    link = tmp_path / "link-to-work"
    link.symlink_to(work)
    box = PathSandbox(link)
    assert box.root == work
    assert box.resolve(str(link / "top.txt"), link) == work / "top.txt"
    assert box.display(link / "sub") == "sub"
    with pytest.raises(SandboxError):
        box.resolve(str(link / ".." / "outside"), link)


def test_cwd_must_be_an_existing_directory_inside(
    box: PathSandbox, work: Path, outside: Path
) -> None:
    assert box.check_cwd(work / "sub") == work / "sub"
    with pytest.raises(SandboxError):
        box.check_cwd(outside)
    with pytest.raises(SandboxError, match="not a directory"):
        box.check_cwd(work / "top.txt")
    with pytest.raises(SandboxError):
        box.check_cwd(work / "missing")
    with pytest.raises(SandboxError):
        box.resolve("top.txt", outside)  # a cwd outside the work dir reaches nothing


def test_work_dir_must_exist(tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match="not a directory"):
        PathSandbox(tmp_path / "missing")


def test_display(box: PathSandbox, work: Path) -> None:
    assert box.display(work) == "."
    assert box.display(work / "sub" / "file.txt") == "sub/file.txt"
    assert box.display(Path("/etc/passwd")) == "/etc/passwd"


def test_a_name_too_long_is_a_sandbox_error(tmp_path: Path) -> None:
    box = PathSandbox(tmp_path)
    with pytest.raises(SandboxError, match="cannot be used"):
        box.resolve("x" * 300 + "/y", tmp_path.resolve())
