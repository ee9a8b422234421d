"""The policy gate's learn(): session rules from always-answers, and learnable_rules()."""

from __future__ import annotations

from pathlib import Path

import pytest

from openheim.approval import Allow, ApprovalRequest, Ask, Deny, decide
from openheim.safety.policy import learnable_rules
from tests.safety.policy_support import gate, shell, verdict, work_dirs, write


@pytest.fixture
def work(tmp_path: Path) -> Path:
    return work_dirs(tmp_path)


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
