"""scripts/system-deps, the check of what the test suite needs from the system, run as
scripts/test runs it: on a machine that lacks one of the programs it fails with the package to
install and how, instead of leaving the tests that run that program to error one by one.

Each case runs the script with a PATH of symlinks to every program on the real PATH except the
ones taken away; apt-get and sudo are always taken away, so no case can install anything."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "system-deps"
NEVER = frozenset({"apt-get", "sudo"})
OLD_SETPRIV = "#!/bin/sh\necho 'Usage: setpriv [options] <program> [<argument>...]'\n"


def bin_without(tmp_path: Path, removed: set[str], stand_ins: dict[str, str]) -> Path:
    """A folder linking every program on PATH but ``removed`` (and apt-get and sudo), with
    ``stand_ins`` (name: shell script) in place of the real ones."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for name, script in stand_ins.items():
        (folder / name).write_text(script)
        (folder / name).chmod(0o755)
    for directory in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(directory):
            continue
        for entry in os.scandir(directory):
            taken = removed | NEVER | stand_ins.keys()
            link = folder / entry.name
            if entry.name not in taken and not link.exists() and not link.is_symlink():
                link.symlink_to(entry.path)
    return folder


def run(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": str(folder)}
    return subprocess.run(
        [str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=30, check=False
    )


@pytest.mark.parametrize(
    ("removed", "stand_ins", "package", "why"),
    [
        ({"bwrap"}, {}, "bubblewrap", "bwrap (the OS sandbox of the shell tool"),
        ({"chromium"}, {}, "chromium", "chromium (the web page is tested in it"),
        ({"node", "nodejs"}, {}, "nodejs", "node 18+"),
        ({"npm"}, {}, "npm", "npm (fetches the ACP schema"),
        ({"setpriv"}, {}, "util-linux", "setpriv with --pdeathsig"),
        (set(), {"setpriv": OLD_SETPRIV}, "util-linux", "setpriv with --pdeathsig"),
        (set(), {"node": "#!/bin/sh\nexit 1\n"}, "nodejs", "node 18+ (this node is"),
    ],
)
def test_a_missing_program_fails_the_check_with_the_install_hint(
    tmp_path: Path, removed: set[str], stand_ins: dict[str, str], package: str, why: str
) -> None:
    result = run(bin_without(tmp_path, removed, stand_ins), "--check")
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert lines[0] == "error: the test suite needs programs this machine lacks:"
    assert lines[1].startswith(f"  - {why}") and lines[1].endswith(f": package '{package}'")
    assert lines[2] == f"Install them (Debian/Ubuntu) with: sudo apt-get install {package}"
    assert lines[3:] == ["or run scripts/system-deps as root once; then run the tests again."]


def test_without_bwrap_and_without_apt_get_it_says_what_to_install(tmp_path: Path) -> None:
    """Asked to install, on a machine where it cannot (here: no apt-get), it says why and what
    to install, and fails."""
    result = run(bin_without(tmp_path, {"bwrap"}, {}))
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[0].startswith("system-deps: not root, no password-less sudo, or no apt-get")
    assert "sudo apt-get install bubblewrap" in result.stderr
    assert "Traceback" not in result.stderr and "command not found" not in result.stderr


def test_with_everything_present_the_check_passes_silently(tmp_path: Path) -> None:
    result = run(bin_without(tmp_path, set(), {}), "--check")
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_an_unknown_argument_is_refused_in_one_line(tmp_path: Path) -> None:
    result = run(bin_without(tmp_path, set(), {}), "--chek")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "system-deps: unknown argument '--chek' (use no argument to install, or --check)"
    ]


def test_without_postgresql_the_check_names_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL's server programs live off PATH on Debian, so the check looks where the tests'
    cluster looks (``$OPENHEIM_PG_BINDIR`` here, a folder without them)."""
    empty = tmp_path / "no-postgresql"
    empty.mkdir()
    monkeypatch.setenv("OPENHEIM_PG_BINDIR", str(empty))
    result = run(bin_without(tmp_path, set(), {}), "--check")
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[1] == (
        "  - initdb and pg_ctl (the PostgreSQL store runs on a private cluster):"
        " package 'postgresql'"
    )
    assert lines[2] == "Install them (Debian/Ubuntu) with: sudo apt-get install postgresql"


def test_without_haproxy_the_check_names_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HAProxy lives in /usr/sbin on Debian, off a user's PATH, so the check looks where the
    tests look (``$OPENHEIM_HAPROXY`` here, a path with nothing there)."""
    monkeypatch.setenv("OPENHEIM_HAPROXY", str(tmp_path / "no-haproxy"))
    result = run(bin_without(tmp_path, set(), {}), "--check")
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[1] == (
        "  - haproxy (the load balancer in front of serve replicas in a test): package 'haproxy'"
    )
    assert lines[2] == "Install them (Debian/Ubuntu) with: sudo apt-get install haproxy"
