"""The path sandbox: every way out of the work dir is refused, everything inside works."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from openheim.errors import SandboxError
from openheim.tools.pathwalk import MAX_HOPS
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


LEXICAL_ESCAPES = [
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
]
"""Paths that name a place outside the work dir (or none) before any file is looked at; the
fs channel of ``openheim serve`` is tested against the same list."""


@pytest.mark.parametrize("raw", LEXICAL_ESCAPES)
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


def test_links_resolve_like_the_kernel_while_they_stay_inside(box: PathSandbox, work: Path) -> None:
    (work / "a" / "b" / "c").mkdir(parents=True)
    (work / "a" / "b" / "c" / "f.txt").write_text("f")
    (work / "sub" / "jump").symlink_to("../a/b")  # relative, climbs then descends
    (work / "twisty").symlink_to("sub/jump/../b/c/f.txt")  # ".." after a link is physical
    (work / "abs").symlink_to(work / "a" / "b" / "c")
    for raw in ("sub/jump/c/f.txt", "twisty", "abs/f.txt", "sub/jump/c/../c/f.txt"):
        resolved = box.resolve(raw, work)
        assert resolved == Path(os.path.realpath(work / raw)) == work / "a/b/c/f.txt", raw


def test_a_link_that_climbs_above_the_work_dir_is_refused_even_coming_back(
    box: PathSandbox, work: Path
) -> None:
    (work / "round-trip").symlink_to(Path("..") / work.name / "top.txt")
    (work / "abs-round-trip").symlink_to(f"{work}/../{work.name}/top.txt")
    for raw in ("round-trip", "abs-round-trip"):
        with pytest.raises(SandboxError, match="symlink out of the work dir"):
            box.resolve(raw, work)


def test_a_chain_longer_than_the_hop_limit_reads_as_dangling(box: PathSandbox, work: Path) -> None:
    (work / "l0").symlink_to("top.txt")
    for i in range(1, MAX_HOPS + 1):
        (work / f"l{i}").symlink_to(f"l{i - 1}")
    assert box.resolve(f"l{MAX_HOPS - 1}", work) == work / "top.txt"
    with pytest.raises(SandboxError, match="dangling"):
        box.resolve(f"l{MAX_HOPS}", work)


def test_an_absolute_link_through_the_given_name_of_the_work_dir(
    tmp_path: Path, work: Path
) -> None:
    link = tmp_path / "link-to-work"
    link.symlink_to(work)
    (work / "via-alias").symlink_to(link / "sub" / "file.txt")
    box = PathSandbox(link)
    assert box.resolve("via-alias", link) == work / "sub" / "file.txt"


def test_parent_and_folder_refuse_any_symlink_on_the_way(box: PathSandbox, work: Path) -> None:
    (work / "alias").symlink_to("sub")  # resolve() follows it; the use of a resolved path not
    assert box.resolve("alias/file.txt", work) == work / "sub" / "file.txt"
    with pytest.raises(SandboxError, match="changed while in use"), box.parent(work / "alias/x"):
        pass
    with pytest.raises(SandboxError, match="changed while in use"), box.folder(work / "alias"):
        pass
    with box.parent(work / "sub" / "file.txt") as (folder, name):
        assert name == "file.txt" and os.stat(name, dir_fd=folder).st_size == len("inside")
    with box.parent(work) as (folder, name):
        assert name == "."
    with pytest.raises(SandboxError, match="outside the work dir"), box.parent(Path("/etc/x")):
        pass


def test_parent_makes_missing_folders_only_when_asked(box: PathSandbox, work: Path) -> None:
    with pytest.raises(FileNotFoundError), box.parent(work / "new" / "deep" / "f"):
        pass
    with pytest.raises(NotADirectoryError), box.parent(work / "top.txt" / "x" / "f"):
        pass
    with box.parent(work / "new" / "deep" / "f", create=True) as (_, name):
        assert name == "f"
    assert (work / "new" / "deep").is_dir()
    with pytest.raises(NotADirectoryError), box.folder(work / "top.txt"):
        pass
