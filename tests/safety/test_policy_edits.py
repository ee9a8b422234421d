"""The approval mode ``edits`` ("auto for edits"): a file edit inside the work dir that the risk
checks find nothing in runs without asking; everything else is decided as in ``ask``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from openheim.approval import Allow, ApprovalRequest, Ask, Deny, decide
from tests.safety.gated import apply_token, attempt, preview, write
from tests.safety.policy_support import call, gate, read, shell, verdict, work_dirs
from tests.safety.policy_support import write as write_request

Request = Callable[[Path], ApprovalRequest]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    return work_dirs(tmp_path)


def edit(path: str) -> Request:
    return lambda w: call(w, "edit_file", kind="edit", path=path, old_string="a", new_string="b")


def linked_out(w: Path) -> ApprovalRequest:
    (w / "out").symlink_to(w.parent / "home")
    return write_request(w, "out/a.txt")


# One row per case: the verdict in edits mode; every row that edits does not allow is decided
# exactly as ask decides it.
TABLE: dict[str, tuple[Request, type]] = {
    "write inside": (lambda w: write_request(w, "src/a.py"), Allow),
    "write a new folder inside": (lambda w: write_request(w, "new/deep/a.py"), Allow),
    "edit inside": (edit("src/a.py"), Allow),
    "read inside": (lambda w: read(w, "src/a.py"), Allow),
    "write outside": (lambda w: write_request(w, "../home/a.txt"), Ask),
    "write by absolute path outside": (lambda w: write_request(w, "/etc/passwd"), Ask),
    "write through a link out": (linked_out, Ask),
    "write a protected path": (lambda w: write_request(w, ".git/config"), Ask),
    "write the permissions file": (lambda w: write_request(w, ".openheim/permissions.toml"), Ask),
    "edit a protected path": (edit(".envrc"), Ask),
    "write the work dir itself": (lambda w: write_request(w, "."), Ask),
    "shell command": (lambda w: shell(w, "ls"), Ask),
    "risky shell command": (lambda w: shell(w, "git reset --hard"), Ask),
    "destructive shell outside": (lambda w: shell(w, "rm -rf /"), Deny),
    "network tool": (lambda w: call(w, "web_fetch", kind="fetch", url="http://x.test/"), Ask),
    "MCP tool": (lambda w: call(w, "github__create_issue", title="t"), Ask),
    "destructive MCP tool": (lambda w: call(w, "fs__drop", kind="delete", path="a"), Ask),
    "an edit tool with no path": (lambda w: call(w, "remember", kind="edit", text="t"), Ask),
}  # fmt: skip


@pytest.mark.parametrize(("request_of", "expected"), TABLE.values(), ids=TABLE.keys())
def test_the_edits_decision_table(work: Path, request_of: Request, expected: type) -> None:
    request = request_of(work)
    assert verdict(gate(work, "edits"), request) is expected
    if expected is not Allow or request.read_only:
        assert verdict(gate(work, "ask"), request) is expected  # as ask decides it


def test_a_deny_rule_still_refuses_an_edit(work: Path) -> None:
    g = gate(work, "edits", 'deny path "src/**"')
    assert verdict(g, write_request(work, "src/a.py")) is Deny
    assert verdict(g, write_request(work, "docs/a.md")) is Allow


def test_the_reasons_name_the_mode_plainly(work: Path) -> None:
    g = gate(work, "edits")
    assert g.explain(write_request(work, "src/a.py")).why == (
        "the approval mode is auto for edits and the edit is inside the work dir with nothing "
        "risky found"
    )
    asked = g.explain(shell(work, "make"))
    assert asked.why == "the approval mode is auto for edits and no allow rule covers `make`"
    assert isinstance(asked.verdict, Ask) and asked.verdict.auto_allows


async def test_with_no_one_to_ask_a_shell_call_is_refused_and_an_edit_runs(work: Path) -> None:
    g = gate(work, "edits")
    assert isinstance(await decide(g, write_request(work, "src/a.py"), None), Allow)
    refused = await decide(g, shell(work, "make"), None)
    assert isinstance(refused, Deny) and "no one to ask" in refused.reason


@pytest.mark.parametrize(
    ("path", "written"),
    [("plain.txt", True), ("sub/new.txt", True), (".openheim/permissions.toml", False)],
)
async def test_headless_edits_write_inside_but_not_a_protected_path(
    work: Path, path: str, written: bool
) -> None:
    outcome = await attempt(work, "edits", [write(path)])
    assert (work / path).exists() is written, outcome.results
    staged = await attempt(work, "edits", [preview(path, "s\n"), apply_token], staged=True)
    assert ((work / path).exists() and (work / path).read_text() == "s\n") is written
    assert staged.results[-1].status == ("completed" if written else "denied")
