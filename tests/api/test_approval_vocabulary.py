"""The approval vocabulary: each choice's decision and the reason the model is told, what a
person may type, the plain title, redacted arguments and the diff, and the closing warning (the
headless refusal: ``tests/runtime/test_headless.py``)."""

from __future__ import annotations

import ast
import os
from pathlib import Path
from typing import Any

import pytest

from openheim.approval import Allow, ApprovalRequest, Ask, Deny
from openheim.runtime.approvals import (
    BY_ID,
    CHOICES,
    MAX_REASON,
    answer,
    choice_named,
    closing_warning,
    question,
    title,
    typed_answer,
)

SECRET = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789AB"
REJECTED = "the user rejected this tool call"
ALWAYS_REJECTED = (
    "the user rejected this tool call and will reject calls like it for the rest of the session"
)
JARGON = "the approval mode is ask and no allow rule covers write_file: write_file"


def write(path: str = "notes.txt", cwd: str = "", content: str = "new\n") -> ApprovalRequest:
    args = {"path": path, "content": content}
    return ApprovalRequest("c1", "write_file", args, False, "edit", cwd=cwd)


@pytest.mark.parametrize(
    ("choice", "key", "label", "decision"),
    [
        ("once", "y", "allow once", Allow()),
        ("always", "a", "allow always", Allow(always=True)),
        ("reject", "n", "reject", Deny(REJECTED)),
        ("reject_always", "r", "reject always", Deny(ALWAYS_REJECTED, always=True)),
    ],
)
def test_each_choice(choice: str, key: str, label: str, decision: Allow | Deny) -> None:
    found = choice_named(choice)
    assert (found.key, found.label) == (key, label)
    assert answer(found) == decision


def test_the_choices_in_order() -> None:
    assert [c.id for c in CHOICES] == ["once", "always", "reject", "reject_always"]


@pytest.mark.parametrize(
    ("choice", "reason", "told"),
    [
        ("reject", "use notes.md instead", f"{REJECTED}, saying: use notes.md instead"),
        ("reject_always", "  not\nhere  ", f"{ALWAYS_REJECTED}, saying: not here"),
        ("reject", f"my key is {SECRET}", f"{REJECTED}, saying: my key is [REDACTED]"),
        ("reject", "   ", REJECTED),
        ("once", "ignored for allowing", None),
    ],
)
def test_a_rejection_tells_the_model_the_persons_reason(
    choice: str, reason: str, told: str | None
) -> None:
    decided = answer(BY_ID[choice], reason)
    assert (decided.reason if isinstance(decided, Deny) else None) == told


def test_a_long_reason_is_cut() -> None:
    decided = answer(BY_ID["reject"], "x" * 5000)
    assert isinstance(decided, Deny) and decided.reason.endswith("x" * MAX_REASON)
    assert len(decided.reason) == len(f"{REJECTED}, saying: ") + MAX_REASON


@pytest.mark.parametrize("name", ["maybe", "", "ONCE", "allow_once", "reject always"])
def test_an_unknown_choice_is_refused_with_the_list(name: str) -> None:
    with pytest.raises(ValueError, match="answer one of once, always, reject, reject_always"):
        choice_named(name)


@pytest.mark.parametrize(
    ("typed", "decision"),
    [
        ("y", Allow()),
        ("yes", Allow()),
        ("  Y  ", Allow()),
        ("once", Allow()),
        ("allow once", Allow()),
        ("a", Allow(always=True)),
        ("always", Allow(always=True)),
        ("n", Deny(REJECTED)),
        ("no", Deny(REJECTED)),
        ("", Deny(REJECTED)),
        ("n use notes.md", Deny(f"{REJECTED}, saying: use notes.md")),
        ("reject Not Now", Deny(f"{REJECTED}, saying: Not Now")),
        ("r", Deny(ALWAYS_REJECTED, always=True)),
        ("reject always", Deny(ALWAYS_REJECTED, always=True)),
        ("reject_always stop", Deny(f"{ALWAYS_REJECTED}, saying: stop", always=True)),
        ("y please", None),
        ("maybe", None),
        ("c", None),
        ("yesterday", None),
    ],
)
def test_what_a_person_types(typed: str, decision: Allow | Deny | None) -> None:
    assert typed_answer(typed) == decision


@pytest.mark.parametrize(
    ("tool", "arguments", "prompt", "shown"),
    [
        ("write_file", {"path": "notes.txt"}, JARGON, "Allow openheim to write notes.txt?"),
        ("edit_file", {"path": "./src/a.py"}, "", "Allow openheim to edit src/a.py?"),
        ("read_file", {"path": "/w/b.md"}, "", "Allow openheim to read b.md?"),
        (
            "execute_command",
            {"command": "make test"},
            "",
            "Allow openheim to run `make test`?",
        ),
        (
            "execute_command",
            {"command": f"curl -H {SECRET}"},
            "",
            "Allow openheim to run `curl -H [REDACTED]`?",
        ),
        (
            "web_fetch",
            {"url": "http://127.0.0.1/a"},
            "",
            "Allow openheim to fetch http://127.0.0.1/a?",
        ),
        ("github__create_issue", {"title": "x"}, "", "Allow openheim to use github: create_issue?"),
        ("write_file", {}, "", "Allow openheim to use write_file?"),
        (
            "write_file",
            {"path": "a"},
            "[subagent helper] x",
            "[subagent helper] Allow openheim to write a?",
        ),
    ],
)
def test_the_title_is_plain_words(
    tool: str, arguments: dict[str, Any], prompt: str, shown: str
) -> None:
    request = ApprovalRequest("c1", tool, arguments, False, "other", cwd="/w")
    assert title(request, Ask(prompt)) == shown


def test_the_question_redacts_and_shows_the_diff(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("old\n")
    request = write(cwd=str(tmp_path), content=f"new {SECRET}\n")
    asked = question(request, Ask(JARGON, reasons=(f"writes {SECRET}",)))
    assert asked.title == "Allow openheim to write notes.txt?"
    assert SECRET not in asked.arguments and '"path": "notes.txt"' in asked.arguments
    assert asked.reasons == ("writes [REDACTED]",)
    assert "-old\n" in asked.diff and "+new [REDACTED]\n" in asked.diff
    assert JARGON not in repr(asked)


def test_a_staged_changes_detail_is_its_diff() -> None:
    request = ApprovalRequest("c1", "apply_file_change", {"token": "chg_1"}, False, "edit")
    assert question(request, Ask(detail="+staged\n")).diff == "+staged\n"


def test_long_arguments_are_cut() -> None:
    asked = question(write(content="x" * 10_000), Ask())
    assert len(asked.arguments) < 4100 and asked.arguments.endswith("…")


@pytest.mark.parametrize(
    ("denied", "line"),
    [
        (0, ""),
        (1, "1 tool call was denied; the answer above may describe work that was refused"),
        (3, "3 tool calls were denied; the answer above may describe work that was refused"),
    ],
)
def test_the_closing_warning(denied: int, line: str) -> None:
    assert closing_warning(denied) == line


def test_the_mcp_elicitation_form_offers_every_choice() -> None:
    from openheim.mcp_server.elicit import ApprovalAnswer

    schema = ApprovalAnswer.model_json_schema()["properties"]["decision"]
    assert schema["enum"] == [c.id for c in CHOICES]


SURFACES = ("acp", "chat", "cli", "gateway", "mcp_server", "server", "tui")
PACKAGE = Path(__file__).resolve().parents[2] / "src" / "openheim"


def own_answers(source: str) -> list[int]:
    """Lines where ``source`` makes an answer a person gives of its own: any ``Allow(...)``, or
    a ``Deny(...)`` with ``always`` (refusing for good is a choice of the vocabulary). A
    surface's own failures (an editor that could not be asked) stay plain ``Deny(reason)``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            continue
        always = len(node.args) > 1 or any(k.arg == "always" for k in node.keywords)
        if node.func.id == "Allow" or (node.func.id == "Deny" and always):
            found.append(node.lineno)
    return found


def test_no_surface_makes_its_own_answers() -> None:
    made = {
        str(path.relative_to(PACKAGE)): lines
        for surface in SURFACES
        for path in sorted((PACKAGE / surface).rglob("*.py"))
        if (lines := own_answers(path.read_text(encoding="utf-8")))
    }
    assert made == {}


@pytest.mark.parametrize(
    ("source", "lines"),
    [
        ("CHOICES = {'y': Allow(), 'n': Deny('no')}", [1]),
        ("x = Deny('never', always=True)", [1]),
        ("x = Deny('never', True)", [1]),
        ("x = Deny('the editor could not be asked')", []),
        ("x = answer(BY_KEY['y'])", []),
    ],
)
def test_the_guard_finds_a_planted_answer(source: str, lines: list[int]) -> None:
    assert own_answers(source) == lines


def plant(kind: str, root: Path) -> str:
    """A file a question's diff must not show, planted under ``root`` (the session's folder);
    the path a write_file call names."""
    outside = root.parent / "outside.txt"
    outside.write_text("private\n")
    if kind == "outside":
        return str(outside)
    if kind == "dotdot":
        return "../outside.txt"
    if kind == "symlink":
        (root / "link.txt").symlink_to(outside)
        return "link.txt"
    if kind == "hardlink":
        (root / "hard.txt").hardlink_to(outside)
        return "hard.txt"
    if kind == "secret":
        (root / ".env").write_text("private\n")
        return ".env"
    if kind == "fifo":
        os.mkfifo(root / "pipe")
        return "pipe"
    (root / "big.txt").write_text("private\n" * 200_000)
    return "big.txt"


@pytest.mark.parametrize(
    "kind", ["outside", "dotdot", "symlink", "hardlink", "secret", "fifo", "big"]
)
def test_the_diff_reads_no_file_read_file_would_refuse(tmp_path: Path, kind: str) -> None:
    root = tmp_path / "work"
    root.mkdir()
    request = write(plant(kind, root), cwd=str(root), content="new\n")
    asked = question(request, Ask())
    assert "private" not in asked.diff and asked.diff == ""
