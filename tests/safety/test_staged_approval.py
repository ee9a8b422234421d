"""Applying a staged change passes the policy: a token proves the preview was shown to the
model, not that anyone approved it. Only a person's yes to the preview call, a rule or auto mode
lets an apply run without asking, and a protected path is never applied without asking."""

from __future__ import annotations

from pathlib import Path

import pytest

from openheim.approval import Allow, ApprovalRequest, Ask, Deny, Verdict, decide
from openheim.safety.policy import PolicyGate
from openheim.safety.rules import RuleSet, parse_rule
from openheim.safety.staging import StagedApplyGate, StagingArea
from openheim.tools.sandbox import PathSandbox
from tests.safety.gated import Asker, apply_token, attempt, preview

PLANTED = [".openheim/permissions.toml", ".git/hooks/post-checkout", "plain.txt"]


def staged(path: str) -> list[object]:
    return [preview(path), apply_token]


@pytest.mark.parametrize("path", PLANTED)
async def test_ask_mode_with_no_one_to_ask_applies_nothing(work: Path, path: str) -> None:
    outcome = await attempt(work, "ask headless", staged(path), staged=True)
    assert not (work / path).exists()
    preview_result, apply_result = outcome.results
    assert preview_result.status == "completed"
    assert apply_result.status == "denied" and "no one to ask" in apply_result.content


@pytest.mark.parametrize("path", PLANTED)
async def test_a_person_who_says_no_means_nothing_is_written(work: Path, path: str) -> None:
    asker = Asker(allow=False)
    outcome = await attempt(work, "ask", staged(path), staged=True, resolver=asker)
    assert not (work / path).exists()
    assert [r.tool for r, _ in asker.asked] == ["apply_file_change"]
    assert outcome.results[-1].status == "denied"


@pytest.mark.parametrize("path", PLANTED)
async def test_the_question_at_apply_shows_the_staged_diff(work: Path, path: str) -> None:
    outcome = await attempt(work, "ask approving", staged(path), staged=True)
    assert (work / path).read_text() == "planted\n"
    ((request, ask),) = outcome.asked
    assert request.tool == "apply_file_change"
    token = str(request.arguments["token"])
    assert ask.detail.startswith(f"the change previewed as {token}:\n")
    assert f"+++ b/{path}\n" in ask.detail and "+planted\n" in ask.detail
    assert any("a protected path" in r for r in ask.reasons) is (path != "plain.txt")


@pytest.mark.parametrize(("path", "written"), [(p, p == "plain.txt") for p in PLANTED])
async def test_auto_mode_applies_unless_the_path_is_protected(
    work: Path, path: str, written: bool
) -> None:
    outcome = await attempt(work, "auto", staged(path), staged=True)
    assert (work / path).exists() is written, outcome.results


@pytest.mark.parametrize(("path", "second"), [("plain.txt", False), (".envrc", True)])
async def test_an_approved_preview_is_applied_without_a_second_question(
    work: Path, path: str, second: bool
) -> None:
    outcome = await attempt(work, "ask approving", staged(path), staged=True, ask_previews=True)
    assert (work / path).read_text() == "planted\n"
    asked = [r.tool for r, _ in outcome.asked]
    assert asked == ["preview_write_file"] + (["apply_file_change"] if second else [])


async def test_an_approved_preview_cannot_be_applied_headless_when_protected(work: Path) -> None:
    approving = Asker()

    async def previews_only(request: ApprovalRequest, ask: Ask) -> Allow | Deny:
        if request.tool == "apply_file_change":
            return Deny("no one to ask")
        return await approving(request, ask)

    steps = staged(".envrc")
    await attempt(work, "ask", steps, staged=True, ask_previews=True, resolver=previews_only)
    assert not (work / ".envrc").exists()


async def test_a_later_decision_on_the_same_call_id_drops_an_old_yes() -> None:
    """Providers may reuse call ids: a yes to one preview call must not approve a later call
    with the same id that no one was asked about."""

    class AsksOnce:
        def __init__(self) -> None:
            self.checked = 0

        async def check(self, request: ApprovalRequest) -> Verdict:
            self.checked += 1
            return Ask() if self.checked == 1 else Allow()

    area = StagingArea("s")
    gate = StagedApplyGate(AsksOnce(), area)
    request = ApprovalRequest("same", "preview_write_file", {"path": "a"}, True, "edit")
    assert await decide(gate, request, Asker()) == Allow()
    assert await decide(gate, request, None) == Allow()  # not asked this time
    assert not area.take_approval("same")


async def test_a_deny_rule_refuses_the_apply(work: Path) -> None:
    """A change staged before the rule existed (or the preview allowed) is still refused."""
    area = StagingArea("s")
    token = area.stage(work / "locked/a.txt", "locked/a.txt", b"x", None)
    rules = RuleSet((parse_rule('deny path "locked/**"'),))
    gate = StagedApplyGate(PolicyGate("auto", rules, PathSandbox(work)), area)
    apply = ApprovalRequest("c", "apply_file_change", {"token": token}, False, "edit", str(work))
    verdict = await gate.check(apply)
    assert isinstance(verdict, Deny) and "locked/**" in verdict.reason


async def test_an_allow_rule_for_the_path_applies_headless(work: Path) -> None:
    rules = ['allow path "docs/**"']
    await attempt(work, "ask headless", staged("docs/a.md"), staged=True, rules=rules)
    assert (work / "docs/a.md").read_text() == "planted\n"


async def test_a_headless_refusal_names_the_rule_for_the_file(work: Path) -> None:
    outcome = await attempt(work, "ask headless", staged("notes/a.txt"), staged=True)
    assert 'allow path "notes/a.txt"' in outcome.results[-1].content
