"""The policy gate's verdicts: rule kinds, precedence, modes, risk and compound commands."""

from __future__ import annotations

from pathlib import Path

import pytest

from openheim.approval import Allow, ApprovalRequest, Ask, Deny, decide
from openheim.tools.base import ToolKind
from tests.safety.policy_support import call, gate, read, shell, verdict, work_dirs, write


@pytest.fixture
def work(tmp_path: Path) -> Path:
    return work_dirs(tmp_path)


# One test per rule kind, each way round.


def test_allow_tool_rule_matches_fnmatch_patterns(work: Path) -> None:
    g = gate(work, "ask", "allow tool github__*")
    assert verdict(g, call(work, "github__create_issue")) is Allow
    assert verdict(g, call(work, "gitlab__create_issue")) is Ask


def test_deny_tool_rule(work: Path) -> None:
    g = gate(work, "auto", "deny tool web_*")
    decision = g.explain(call(work, "web_fetch", read_only=True, kind="fetch"))
    assert isinstance(decision.verdict, Deny)
    assert decision.rule == "deny tool web_*"
    assert verdict(g, call(work, "other_tool")) is Allow


def test_allow_command_rule_matches_whole_words(work: Path) -> None:
    g = gate(work, "ask", 'allow command "git status"')
    assert verdict(g, shell(work, "git status")) is Allow
    assert verdict(g, shell(work, "git status --short src")) is Allow
    assert verdict(g, shell(work, "git statusx")) is Ask
    assert verdict(g, shell(work, "git")) is Ask
    assert verdict(g, shell(work, "git push")) is Ask


def test_deny_command_rule(work: Path) -> None:
    g = gate(work, "auto", 'deny command "git push"')
    assert verdict(g, shell(work, "git push origin main")) is Deny
    assert verdict(g, shell(work, "git pull")) is Allow


def test_allow_path_rule(work: Path) -> None:
    g = gate(work, "ask", 'allow path "src/**"')
    assert verdict(g, write(work, "src/app/main.py")) is Allow
    assert verdict(g, write(work, "./src/x.py")) is Allow
    assert verdict(g, write(work, "docs/x.md")) is Ask
    assert verdict(g, call(work, "write_file", kind="edit", path="x.py")) is Ask


def test_path_rules_apply_to_the_tool_kinds_the_loop_passes(work: Path) -> None:
    g = gate(work, "auto", 'deny path "secrets/**"')
    for kind in (ToolKind.READ, ToolKind.EDIT, ToolKind.SEARCH):
        request = ApprovalRequest("c1", "t", {"path": "secrets/a"}, False, kind, str(work))
        assert verdict(g, request) is Deny


def test_path_rules_resolve_against_the_session_cwd(work: Path) -> None:
    g = gate(work, "ask", 'allow path "src/**"')
    request = ApprovalRequest(
        "c1", "write_file", {"path": "a.py"}, False, "edit", str(work / "src")
    )
    assert verdict(g, request) is Allow


def test_deny_path_rule_covers_the_folder_and_what_is_in_it(work: Path) -> None:
    g = gate(work, "auto", 'deny path "secrets/**"')
    assert verdict(g, read(work, "secrets/key.pem")) is Deny
    assert verdict(g, call(work, "list_dir", read_only=True, kind="read", path="secrets")) is Deny
    assert verdict(g, call(work, "search", read_only=True, kind="search", path="secrets")) is Deny
    assert verdict(g, read(work, "src/../secrets/key.pem")) is Deny
    assert verdict(g, read(work, "src/secrets.txt")) is Allow


def test_deny_path_rule_sees_through_symlinks(work: Path) -> None:
    (work / "innocent").symlink_to(work / "secrets")
    g = gate(work, "auto", 'deny path "secrets/**"')
    assert verdict(g, read(work, "innocent/key.pem")) is Deny


def test_allow_path_rule_needs_the_real_path_to_match_too(work: Path) -> None:
    (work / "src" / "escape").symlink_to(work / "secrets")
    g = gate(work, "ask", 'allow path "src/**"')
    assert verdict(g, write(work, "src/escape/key.pem")) is Ask


def test_a_path_the_filesystem_cannot_check_asks_instead_of_raising(work: Path) -> None:
    g = gate(work, "auto", 'deny path "x/**"')
    assert verdict(g, read(work, "a" * 300)) is Ask


# Precedence and modes.


def test_deny_wins_over_allow(work: Path) -> None:
    g = gate(work, "auto", "allow tool write_file", 'deny path "secrets/**"')
    assert verdict(g, write(work, "secrets/x")) is Deny
    assert verdict(g, write(work, "src/x")) is Allow


def test_deny_command_wins_over_allow_command(work: Path) -> None:
    g = gate(work, "ask", 'allow command "git"', 'deny command "git push"')
    assert verdict(g, shell(work, "git push")) is Deny
    assert verdict(g, shell(work, "git log")) is Allow


def test_ask_mode_needs_no_approval_for_read_only_tools(work: Path) -> None:
    g = gate(work, "ask")
    decision = g.explain(read(work, "src/x.py"))
    assert isinstance(decision.verdict, Allow)
    assert decision.why == "read-only tools need no approval in ask mode"
    assert verdict(g, write(work, "src/x.py")) is Ask


def test_ask_mode_read_only_tool_still_obeys_deny_rules(work: Path) -> None:
    assert verdict(gate(work, "ask", 'deny path "secrets/**"'), read(work, "secrets/x")) is Deny


def test_ask_mode_read_only_tool_still_obeys_risk(work: Path) -> None:
    assert verdict(gate(work, "ask"), read(work, "/etc/passwd")) is Ask


def test_auto_mode_allows_what_is_not_denied_or_risky(work: Path) -> None:
    g = gate(work, "auto", 'deny command "curl"')
    assert verdict(g, write(work, "src/x.py")) is Allow
    assert verdict(g, shell(work, "make test")) is Allow
    assert verdict(g, shell(work, "make && curl example.com")) is Deny


def test_deny_mode_refuses_every_call_that_is_not_read_only(work: Path) -> None:
    g = gate(work, "deny", "allow tool write_file", 'allow command "ls"')
    decision = g.explain(write(work, "src/x.py"))
    assert isinstance(decision.verdict, Deny)
    assert "deny" in decision.verdict.reason
    assert verdict(g, shell(work, "ls")) is Deny
    assert verdict(g, read(work, "src/x.py")) is Allow


def test_risk_escalates_auto_mode_to_ask_with_reasons(work: Path) -> None:
    g = gate(work, "auto")
    decision = g.explain(shell(work, "git push --force"))
    assert isinstance(decision.verdict, Ask)
    assert decision.verdict.reasons == ("`git push --force` can overwrite commits on the remote",)


def test_risk_escalates_over_an_allow_rule(work: Path) -> None:
    g = gate(work, "auto", 'allow command "rm"')
    assert verdict(g, shell(work, "rm -rf build")) is Ask
    assert verdict(g, shell(work, "rm build.log")) is Allow


def test_destructive_and_outside_is_denied_even_when_allowed(work: Path) -> None:
    g = gate(work, "auto", 'allow command "rm"')
    decision = g.explain(shell(work, "rm -rf /"))
    assert isinstance(decision.verdict, Deny)
    assert decision.rule is None
    assert "`rm -rf` outside a temporary directory" in decision.verdict.reason
    assert "path / is outside the work dir" in decision.verdict.reason


async def test_an_ask_becomes_a_denial_with_no_one_to_ask(work: Path) -> None:
    answer = await decide(gate(work, "auto"), shell(work, "git reset --hard"), None)
    assert isinstance(answer, Deny)
    assert "no one to ask" in answer.reason


# Compound and quoted command lines against prefix rules.


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("git status && ls -la", Allow),
        ("git status && make", Ask),
        ("git status && rm -rf /", Deny),
        ("git status; ls || ls | git status", Allow),
        ('echo "a; rm -rf /"', Allow),
        ("echo 'a && make'", Allow),
        ("echo $(make)", Ask),
        ("echo `make`", Ask),
        ("echo $(ls)", Allow),
        ("ls | make", Ask),
        ("ls\nmake", Ask),
        ("ls\ngit status", Allow),
        ("(ls; make)", Ask),
        ('"git" status', Allow),
        ("git $(echo status)", Ask),
        ("FOO=1 git status", Ask),
        ("ls > listing.txt", Allow),
        ("cat <<EOF\nx\nEOF", Ask),
        ("ls 'unclosed", Ask),
    ],
)
def test_compound_and_quoted_commands_need_every_part_allowed(
    work: Path, command: str, expected: type
) -> None:
    g = gate(work, "ask", 'allow command "git status"', "allow command ls", "allow command echo")
    assert verdict(g, shell(work, command)) is expected


@pytest.mark.parametrize(
    "command",
    ["sudo rm x", "/bin/rm x", "ls; rm x", "echo $(rm x)", "bash -c 'rm x'", "A=1 rm x"],
)
def test_deny_command_rules_see_through_wrappers_and_paths(work: Path, command: str) -> None:
    assert verdict(gate(work, "auto", "deny command rm"), shell(work, command)) is Deny


async def test_check_returns_the_verdict(work: Path) -> None:
    g = gate(work, "ask", "allow command ls")
    assert isinstance(await g.check(shell(work, "ls")), Allow)
    assert isinstance(await g.check(shell(work, "make")), Ask)
