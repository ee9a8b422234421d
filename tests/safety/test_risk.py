"""Risk assessment: each destructive pattern inside, outside and in a temp dir; the work zone."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any, Literal

import pytest

from openheim.approval import ApprovalRequest
from openheim.safety.risk import Risk, RiskAssessor, default_temp_dirs
from openheim.tools.sandbox import PathSandbox

Where = Literal["work", "outside", "scratch"]


@pytest.fixture
def places(tmp_path: Path) -> dict[str, Path]:
    out = {name: (tmp_path / name).resolve() for name in ("work", "outside", "scratch", "home")}
    for path in out.values():
        path.mkdir()
    return out


@pytest.fixture
def assessor(places: dict[str, Path]) -> RiskAssessor:
    """The work dir with one temp dir (``scratch``) standing in for /tmp; home is outside."""
    box = PathSandbox(places["work"])
    return RiskAssessor(box, temp_dirs=[places["scratch"]], home=places["home"])


def shell(assessor: RiskAssessor, command: str, cwd: Path | None = None) -> Risk:
    cwd = cwd or assessor.sandbox.root
    args: dict[str, Any] = {"command": command}
    return assessor.assess(
        ApprovalRequest("c1", "execute_command", args, False, "execute", str(cwd))
    )


def file_call(
    assessor: RiskAssessor, tool: str, path: str, *, read_only: bool, kind: str = "read"
) -> Risk:
    request = ApprovalRequest(
        "c1", tool, {"path": path}, read_only, kind, str(assessor.sandbox.root)
    )
    return assessor.assess(request)


def outcome(risk: Risk) -> str:
    if risk.refused:
        return "refused"
    if risk.danger:
        return "ask"
    return "outside" if risk.outside else "clean"


# Each pattern runs with its cwd in the work dir, outside it, and in the temp dir; relative
# targets follow the cwd. "ask": destructive only; "refused": destructive and outside.
MATRIX: list[tuple[str, str, str, str, str]] = [
    ("rm -rf junk", "ask", "refused", "clean", "`rm -rf` outside a temporary directory"),
    ("rm -fr junk", "ask", "refused", "clean", "`rm -rf`"),
    ("rm -r -f junk", "ask", "refused", "clean", "`rm -rf`"),
    ("rm -R --force junk", "ask", "refused", "clean", "`rm -rf`"),
    ("rm --recursive --force -- junk", "ask", "refused", "clean", "`rm -rf`"),
    ("mkfs.ext4 disk.img", "ask", "refused", "ask", "`mkfs.ext4` formats a filesystem"),
    ("mkfs -t ext4 disk.img", "ask", "refused", "ask", "`mkfs` formats"),
    ("dd if=/dev/zero of=disk.img", "ask", "refused", "ask", "`dd` copies raw data"),
    ("shutdown -h now", "ask", "refused", "ask", "`shutdown` stops or restarts"),
    ("reboot", "ask", "refused", "ask", "`reboot`"),
    ("poweroff", "ask", "refused", "ask", "`poweroff`"),
    ("halt", "ask", "refused", "ask", "`halt`"),
    ("systemctl reboot", "ask", "refused", "ask", "`systemctl reboot`"),
    ("git push --force", "ask", "refused", "ask", "`git push --force`"),
    ("git push -f origin main", "ask", "refused", "ask", "`git push --force`"),
    ("git push --force-with-lease", "ask", "refused", "ask", "`git push --force`"),
    ("git push origin +main", "ask", "refused", "ask", "`git push --force`"),
    ("git -C . push -uf", "ask", "refused", "ask", "`git push --force`"),
    ("git reset --hard HEAD~1", "ask", "refused", "ask", "`git reset --hard`"),
    ("git clean -fdx", "ask", "refused", "ask", "`git clean -f`"),
    (":(){ :|:& };:", "ask", "refused", "ask", "a fork bomb"),
    ("bomb() { bomb | bomb & }; bomb", "ask", "refused", "ask", "a fork bomb"),
    ("b.x () { b.x|& b.x & }; b.x", "ask", "refused", "ask", "a fork bomb"),
    ("chmod -R 777 junk", "clean", "refused", "clean", "recursive `chmod`"),
    ("chown -R nobody junk", "clean", "refused", "clean", "recursive `chown`"),
    ("echo x > /dev/sda", "refused", "refused", "refused", "block device /dev/sda"),
    ("cat img > /dev/nvme0n1", "refused", "refused", "refused", "block device /dev/nvme0n1"),
    ("dd if=img of=/dev/mmcblk0", "refused", "refused", "refused", "block device"),
    ("cat img | tee /dev/sdb", "refused", "refused", "refused", "block device /dev/sdb"),
]


@pytest.mark.parametrize(("where", "column"), [("work", 1), ("outside", 2), ("scratch", 3)])
@pytest.mark.parametrize("row", MATRIX, ids=[r[0] for r in MATRIX])
def test_risk_matrix(
    assessor: RiskAssessor,
    places: dict[str, Path],
    row: tuple[str, str, str, str, str],
    where: Where,
    column: int,
) -> None:
    risk = shell(assessor, row[0], places[where])
    assert outcome(risk) == row[column]
    if row[column] in ("ask", "refused"):
        assert any(row[4] in reason for reason in risk.danger), risk.danger


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("rm -rf {outside}", "refused"),
        ("rm -rf {outside}/junk", "refused"),
        ("rm -rf {scratch}/junk", "clean"),
        ("rm -rf {scratch}/sub/*", "clean"),
        ("rm -rf {scratch}", "ask"),  # the temp dir itself is in the zone, but not scratch
        ("rm -rf {work}/junk", "ask"),
        ("rm -rf /", "refused"),
        ("rm -rf /*", "refused"),
        ("rm -rf ~", "refused"),
        ("rm -rf ~/projects", "refused"),
        ("rm -rf $HOME/x", "refused"),
        ("rm -rf ../junk", "refused"),
        ("rm -rf $UNKNOWN", "ask"),
        ("rm -rf", "ask"),
        ("rm -f {outside}/x", "outside"),
        ("rm -r {outside}/x", "outside"),
        ("rm --no-preserve-root -rf {scratch}/x", "ask"),
        ("chmod -R 777 /", "refused"),
        ("chmod -R 777 {work}/x", "clean"),
        ("chmod 777 {outside}/x", "outside"),
        ("chown -R --reference={work}/a {outside}", "refused"),
    ],
)
def test_targets_decide_inside_outside_and_temp(
    assessor: RiskAssessor, places: dict[str, Path], template: str, expected: str
) -> None:
    assert outcome(shell(assessor, template.format(**places))) == expected


def test_reasons_are_sentences_naming_the_place(assessor: RiskAssessor) -> None:
    risk = shell(assessor, "rm -rf /etc/x")
    assert risk.danger == ("`rm -rf` outside a temporary directory",)
    assert risk.outside == ("path /etc/x is outside the work dir",)
    assert risk.reasons == risk.danger + risk.outside


def test_cd_is_followed(assessor: RiskAssessor, places: dict[str, Path]) -> None:
    assert outcome(shell(assessor, f"cd {places['scratch']} && rm -rf junk")) == "clean"
    assert outcome(shell(assessor, "cd /etc && rm -rf x")) == "refused"
    assert outcome(shell(assessor, "cd sub && rm -rf ../../x")) == "refused"
    assert outcome(shell(assessor, "cd $SOMEWHERE && rm -rf x")) == "ask"


@pytest.mark.parametrize(
    "command",
    ["ls /etc", "cat ../other/file", "make PREFIX=/usr/local", "git -C /srv/repo status",
     "ls > /etc/x", "sort < ~/.ssh/id_rsa", "cd .. && ls", "cp x --target-directory=/opt"],
)  # fmt: skip
def test_paths_outside_the_work_zone_ask(assessor: RiskAssessor, command: str) -> None:
    risk = shell(assessor, command)
    assert outcome(risk) == "outside"
    assert risk.outside[0].startswith("path /")


@pytest.mark.parametrize(
    "command",
    ["ls -la", "cat src/x.py > out.txt", "make 2>/dev/null", "ls > /dev/null 2>&1",
     "echo hi > /dev/stderr", "git log main..feature", "/usr/bin/python3 tool.py",
     "cat <<< /etc/passwd", "rm -rf {scratch}/build"],
)  # fmt: skip
def test_ordinary_commands_are_clean(
    assessor: RiskAssessor, places: dict[str, Path], command: str
) -> None:
    assert shell(assessor, command.format(**places)) == Risk()


def test_a_function_piping_another_into_the_background_is_no_fork_bomb(
    assessor: RiskAssessor,
) -> None:
    assert shell(assessor, "g() { f|f& }; g").danger == ()
    assert shell(assessor, "g() { f|f& }; f() { f|f& }").danger != ()


def test_temp_dirs_are_in_the_zone(assessor: RiskAssessor, places: dict[str, Path]) -> None:
    assert shell(assessor, f"ls {places['scratch']} > {places['scratch']}/log") == Risk()


def test_a_cwd_outside_the_work_dir_is_reported(
    assessor: RiskAssessor, places: dict[str, Path]
) -> None:
    risk = shell(assessor, "ls", places["outside"])
    assert risk.outside == (f"cwd {places['outside']} is outside the work dir",)


@pytest.mark.parametrize(
    "command",
    ["sudo rm -rf /", "env X=1 rm -rf /", "bash -c 'rm -rf /'", "timeout 5 rm -rf /",
     "echo $(rm -rf /)", "ls && sudo -u root sh -c 'cd / && rm -rf etc'"],
)  # fmt: skip
def test_wrappers_and_substitutions_are_seen_through(assessor: RiskAssessor, command: str) -> None:
    assert outcome(shell(assessor, command)) == "refused"


def test_xargs_rm_rf_has_unknown_targets(assessor: RiskAssessor) -> None:
    assert outcome(shell(assessor, "find . -name '*.o' | xargs rm -rf")) == "ask"


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("cat <<EOF\nrm -rf /\nEOF", "could not be analysed: here-documents"),
        ('echo "unclosed', "could not be analysed: unclosed double quote"),
        ("$(echo rm) -rf /", "the program `$(echo rm)` is only known when the command runs"),
        ('sh -c "$CMD"', "could not be analysed"),
    ],
)
def test_what_cannot_be_analysed_is_unclear(
    assessor: RiskAssessor, command: str, reason: str
) -> None:
    risk = shell(assessor, command)
    assert any(reason in r for r in risk.unclear), risk.unclear
    assert not risk.refused


def test_shell_writes_to_openheim_settings_are_dangerous(assessor: RiskAssessor) -> None:
    assert shell(assessor, "echo x >> .openheim/permissions.toml").danger
    assert shell(assessor, "cp evil .openheim/config.toml").danger
    # file tools changing .openheim/ are asked about by the policy (a protected path)
    assert file_call(assessor, "write_file", ".openheim/x.toml", read_only=False) == Risk()
    assert file_call(assessor, "read_file", ".openheim/config.toml", read_only=True) == Risk()


@pytest.mark.parametrize(
    "command", ["echo x > .git/hooks/pre-commit", "tee -a .envrc", "printf x >> sub/.vscode/t.json"]
)
def test_shell_writes_to_protected_paths_are_dangerous(
    assessor: RiskAssessor, command: str
) -> None:
    risk = shell(assessor, command)
    assert any("a protected path" in d for d in risk.danger), risk
    assert not risk.refused  # inside the work dir: asked, not refused
    assert shell(assessor, "cat .git/config > notes.txt") == Risk()


def test_file_tools_outside_the_work_dir(assessor: RiskAssessor, places: dict[str, Path]) -> None:
    assert file_call(assessor, "read_file", "src/x.py", read_only=True) == Risk()
    outside = file_call(assessor, "read_file", "/etc/passwd", read_only=True)
    assert outside.outside and "outside the work dir" in outside.outside[0]
    (places["work"] / "link").symlink_to(places["outside"])
    linked = file_call(assessor, "list_dir", "link", read_only=True)
    assert linked.outside and "symlink" in linked.outside[0]


def test_a_path_the_filesystem_cannot_check_is_unclear(assessor: RiskAssessor) -> None:
    risk = file_call(assessor, "read_file", "a" * 300, read_only=True)
    assert risk.unclear == ("the path cannot be checked: File name too long",)


def test_tools_that_are_neither_shell_nor_files_are_not_assessed(assessor: RiskAssessor) -> None:
    root = str(assessor.sandbox.root)
    request = ApprovalRequest("c1", "web_fetch", {"path": "/etc"}, True, "fetch", root)
    assert assessor.assess(request) == Risk()


def test_default_temp_dirs_cover_tmp(tmp_path: Path) -> None:
    assert "/tmp" in default_temp_dirs()
    work = tmp_path / "work"
    work.mkdir()
    assessor = RiskAssessor(PathSandbox(work))
    scratch = f"/tmp/openheim-risk-test-{uuid.uuid4().hex}"
    assert outcome(shell(assessor, f"rm -rf {scratch}")) == "clean"
    assert outcome(shell(assessor, f"rm -rf {work}")) == "ask"
