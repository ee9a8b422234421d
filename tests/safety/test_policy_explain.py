"""What the policy gate says: explain() and the allow rules an Ask suggests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openheim.approval import Allow, Ask, Deny, decide
from openheim.safety.policy import PolicyGate
from openheim.safety.rules import RuleSet, parse_rule
from openheim.tools.sandbox import PathSandbox
from tests.safety.policy_support import call, gate, read, shell, verdict, work_dirs, write


@pytest.fixture
def work(tmp_path: Path) -> Path:
    return work_dirs(tmp_path)


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
