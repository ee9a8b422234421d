"""The policy gate: rule kinds, precedence, modes, risk escalation, explain() and learn()."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openheim.approval import Allow, ApprovalRequest, Ask, Deny, decide
from openheim.safety.policy import ApprovalMode, PolicyGate, learnable_rules
from openheim.safety.risk import RiskAssessor
from openheim.safety.rules import RuleSet, parse_rule
from openheim.tools.base import ToolKind
from openheim.tools.sandbox import PathSandbox


@pytest.fixture
def work(tmp_path: Path) -> Path:
    for name in ("work/src", "work/secrets", "scratch", "home"):
        (tmp_path / name).mkdir(parents=True)
    return (tmp_path / "work").resolve()


def gate(work: Path, mode: ApprovalMode, *rules: str) -> PolicyGate:
    box = PathSandbox(work)
    risk = RiskAssessor(box, temp_dirs=[work.parent / "scratch"], home=work.parent / "home")
    return PolicyGate(mode, RuleSet(tuple(parse_rule(r) for r in rules)), box, risk=risk)


def shell(work: Path, command: str) -> ApprovalRequest:
    args: dict[str, Any] = {"command": command}
    return ApprovalRequest("c1", "execute_command", args, False, "execute", str(work))


def call(
    work: Path, tool: str, *, read_only: bool = False, kind: str = "other", **args: Any
) -> ApprovalRequest:
    return ApprovalRequest("c1", tool, args, read_only, kind, str(work))


def write(work: Path, path: str) -> ApprovalRequest:
    return call(work, "write_file", kind="edit", path=path, content="x")


def read(work: Path, path: str) -> ApprovalRequest:
    return call(work, "read_file", read_only=True, kind="read", path=path)


def verdict(g: PolicyGate, request: ApprovalRequest) -> type:
    return type(g.explain(request).verdict)


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


# explain()


def test_explain_names_the_rule_and_why(work: Path) -> None:
    g = gate(work, "ask", 'allow command "git status"', "allow command ls")
    decision = g.explain(shell(work, "git status && ls"))
    assert decision.rule == 'allow command "git status"; allow command "ls"'
    assert decision.why == 'allowed by `allow command "git status"`, `allow command "ls"`'


def test_explain_names_the_part_no_rule_covers(work: Path) -> None:
    g = gate(work, "ask", "allow command ls")
    decision = g.explain(shell(work, "ls && make 'a b'"))
    assert decision.rule is None
    assert decision.why == "the approval mode is ask and no allow rule covers `make 'a b'`"
    assert isinstance(decision.verdict, Ask)
    assert decision.verdict.prompt == decision.why


def test_explain_names_a_deny_rule_and_its_source(work: Path) -> None:
    rule = parse_rule('deny path "secrets/**"', source="/p/.openheim/permissions.toml")
    box = PathSandbox(work)
    g = PolicyGate("auto", RuleSet((rule,)), box)
    decision = g.explain(read(work, "secrets/a"))
    assert decision.rule == 'deny path "secrets/**"'
    assert "(from /p/.openheim/permissions.toml)" in decision.why
    assert isinstance(decision.verdict, Deny)
    assert "do not retry" in decision.verdict.reason


def test_explain_in_auto_mode(work: Path) -> None:
    decision = gate(work, "auto").explain(write(work, "src/x"))
    assert decision == decision.__class__(
        Allow(), None, "the approval mode is auto and nothing risky was found"
    )


def test_explain_risk_question_lists_reasons(work: Path) -> None:
    decision = gate(work, "ask").explain(shell(work, "ls /etc"))
    assert isinstance(decision.verdict, Ask)
    assert decision.verdict.reasons == ("path /etc is outside the work dir",)
    assert decision.why == "needs approval: path /etc is outside the work dir"


# learn()


def test_learn_always_allows_the_next_identical_call(work: Path) -> None:
    g = gate(work, "ask")
    request = shell(work, "git status --short")
    assert verdict(g, request) is Ask
    g.learn(request, Allow(always=True))
    assert [str(r) for r in g.learned] == ['allow command "git status"']
    assert g.explain(request).rule == 'allow command "git status"'
    assert "(from this session)" in g.explain(request).why
    assert verdict(g, shell(work, "git status")) is Allow
    assert verdict(g, shell(work, "git push")) is Ask


async def test_learn_is_called_by_decide_for_an_always_answer(work: Path) -> None:
    g = gate(work, "ask")

    async def always(request: ApprovalRequest, ask: Ask) -> Allow | Deny:
        return Allow(always=True)

    assert isinstance(await decide(g, write(work, "src/a"), always), Allow)
    assert isinstance(await g.check(write(work, "src/b")), Allow)
    assert [str(r) for r in g.learned] == ["allow tool write_file"]


def test_learn_never_adds_a_deny_rule(work: Path) -> None:
    g = gate(work, "auto")
    g.learn(shell(work, "npm publish --tag x"), Deny(always=True))
    assert [str(r) for r in g.learned] == ['deny command "npm publish"']
    assert verdict(g, shell(work, "npm publish")) is Deny
    assert verdict(g, shell(work, "npm test")) is Allow


def test_learning_the_same_rule_twice_keeps_one(work: Path) -> None:
    g = gate(work, "ask")
    g.learn(shell(work, "pytest -x"), Allow(always=True))
    g.learn(shell(work, "pytest tests/"), Allow(always=True))
    assert len(g.learned) == 1
    assert len(g.rules.rules) == 1


def test_learned_rule_does_not_silence_risk(work: Path) -> None:
    g = gate(work, "ask")
    request = shell(work, "rm -rf build")
    g.learn(request, Allow(always=True))
    assert verdict(g, request) is Ask


@pytest.mark.parametrize(
    ("command", "rules"),
    [
        ("git status -s", ['allow command "git status"']),
        ("git -C sub log", ['allow command "git -C sub log"']),
        ("pytest -x tests/", ['allow command "pytest"']),
        ("make test && ls -la", ['allow command "make test"', 'allow command "ls"']),
        ("sudo apt install x", ['allow command "sudo apt install x"']),
        ("sudo rm $X", []),
        ("$(echo x) y", ['allow command "echo"']),  # only the substitution is learnable
        ("A=1 make", []),
        ("ls 'unclosed", []),
        ("cat '*.py'", ['allow command "cat"']),
        ("'A=1' x", ["allow command \"'A=1'\""]),  # a quoted word, not an assignment
    ],
)
def test_learnable_rules(work: Path, command: str, rules: list[str]) -> None:
    assert [str(r) for r in learnable_rules(shell(work, command), "allow")] == rules


# An Ask says which allow rules would let that exact call run, checked against the rule set.


@pytest.mark.parametrize(
    ("request_of", "rules", "auto_allows"),
    [
        (lambda w: write(w, "src/a.py"), ('allow path "src/a.py"',), True),
        (lambda w: write(w, "src/a*[x].py"), ('allow path "src/a[*][[]x].py"',), True),
        (
            lambda w: shell(w, "make test && git status"),
            ('allow command "make test"', 'allow command "git status"'),
            True,
        ),
        (lambda w: call(w, "github__create_issue"), ("allow tool github__create_issue",), True),
        (lambda w: shell(w, "FOO=1 make"), (), True),  # no rule covers assignments
        (lambda w: shell(w, "git reset --hard"), (), False),  # risky: only a person
        (lambda w: write(w, ".git/config"), ('allow path ".git/config"',), False),
    ],
)
def test_an_ask_names_the_rules_that_would_allow_the_call(
    work: Path, request_of: Any, rules: tuple[str, ...], auto_allows: bool
) -> None:
    g = gate(work, "ask")
    request = request_of(work)
    ask = g.explain(request).verdict
    assert isinstance(ask, Ask)
    assert (ask.rules, ask.auto_allows) == (rules, auto_allows)
    if rules:  # the suggestion really lets the call through
        assert verdict(gate(work, "ask", *rules), request) is Allow


def test_a_symlinked_path_is_named_by_a_tool_rule(work: Path) -> None:
    (work / "link").symlink_to(work / "src")
    ask = gate(work, "ask").explain(write(work, "link/a.py")).verdict
    assert isinstance(ask, Ask) and ask.rules == ("allow tool write_file",)


def test_rules_already_in_force_are_not_suggested_again(work: Path) -> None:
    g = gate(work, "ask", 'allow command "git status"')
    ask = g.explain(shell(work, "git status && make")).verdict
    assert isinstance(ask, Ask) and ask.rules == ('allow command "make"',)


async def test_a_denial_with_no_one_to_ask_says_why_and_names_the_rule(work: Path) -> None:
    answer = await decide(gate(work, "ask"), write(work, "src/a.py"), None)
    assert isinstance(answer, Deny)
    assert answer.reason == (
        "write_file needs approval (the approval mode is ask and no allow rule covers "
        "write_file) and there is no one to ask in this session; the permission rule "
        '`allow path "src/a.py"` would let it run'
    )
