"""``permissions.toml``: permission rules kept in files, for the user and for a project.

Two files, both optional: the user's ``DATA_DIR/permissions.toml`` and the project's
``PROJECT/.openheim/permissions.toml``. Each has one table::

    [rules]
    allow = ["tool read_*", 'command "git status"', 'path "src/**"']
    deny = ['command "git push"', 'path "secrets/**"']

Entries use the rule syntax of ``rules`` without the effect word, which the list gives (writing
it, as in ``"allow tool read_*"``, is accepted when it agrees). TOML literal strings ``'…'``
avoid escaping the quotes. Unknown keys and malformed rules are errors naming the file and the
entry.

Until the user trusts the project (``openheim trust``), a project file may only add deny rules:
its allow rules are ignored and each is reported in the notices, so a cloned repository cannot
approve commands for itself. ``add_rule`` / ``remove_rule`` edit a file in place through
``tomlkit``, so its comments, order and layout stay as the user wrote them, and replace it
atomically (a reader sees the old file or the new one).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from openheim.errors import ConfigError
from openheim.formats.tomlfile import read_toml, typed_table
from openheim.safety.rules import EFFECTS, Rule, RuleSet, parse_rule

PERMISSIONS_FILE = "permissions.toml"
_HEADER = (
    'openheim permission rules: tool PATTERN, command "WORDS", path "GLOB".',
    "`openheim permissions add|remove` edit this file and keep your comments.",
)


@dataclass(frozen=True)
class RulesTable:
    """``[rules]``: the allow and deny lists."""

    allow: list[str] = field(default_factory=list)
    deny: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class PermissionsFile:
    """The whole ``permissions.toml``."""

    rules: RulesTable = field(default_factory=RulesTable)


def user_permissions(data_dir: Path) -> Path:
    return data_dir / PERMISSIONS_FILE


def project_permissions(project_root: Path) -> Path:
    return project_root / ".openheim" / PERMISSIONS_FILE


def read_rules(path: Path) -> list[Rule]:
    """The rules in one file (none if it does not exist); raises ConfigError naming the entry."""
    if not path.is_file():
        return []
    table = typed_table(path, read_toml(path), PermissionsFile, _layout_hint()).rules
    rules: list[Rule] = []
    for effect in EFFECTS:
        for i, text in enumerate(table.allow if effect == "allow" else table.deny):
            try:
                rules.append(parse_rule(text, effect, source=str(path)))
            except ConfigError as err:
                where = f"{path}: rules.{effect}[{i}]"
                raise ConfigError(f"{where}: {err.message}", hint=err.hint) from None
    return rules


def load_rules(
    data_dir: Path, project_root: Path | None, trusted: bool
) -> tuple[RuleSet, list[str]]:
    """The user's rules, then the project's; allow rules of an untrusted project are dropped.

    Returns the rules and notices saying what was ignored and why.
    """
    rules = read_rules(user_permissions(data_dir))
    notices: list[str] = []
    if project_root is not None:
        for rule in read_rules(project_permissions(project_root)):
            if rule.effect == "allow" and not trusted:
                notices.append(
                    f"ignored `{rule}` from the untrusted project file {rule.source} "
                    f"(run `openheim trust {project_root}` to allow it)"
                )
            else:
                rules.append(rule)
    unique = dict.fromkeys(rules)
    return RuleSet(tuple(unique)), notices


def add_rule(path: Path, rule: Rule) -> bool:
    """Add ``rule`` to the file (created if missing); False when it was already there."""
    from openheim.formats.tomledit import array_in, load_document, save_document, toml_string

    if rule in read_rules(path):
        return False
    document = load_document(path, _HEADER)
    array_in(document, "rules", rule.effect).append(toml_string(rule.body))
    save_document(path, document)
    return True


def remove_rule(path: Path, rule: Rule) -> bool:
    """Remove ``rule`` from the file (every entry that says it); False when it was not there."""
    from openheim.formats.tomledit import array_in, load_document, save_document

    if rule not in read_rules(path):
        return False
    document = load_document(path)
    entries = array_in(document, "rules", rule.effect)
    for index in reversed(range(len(entries))):
        if parse_rule(str(entries[index]), rule.effect) == rule:
            del entries[index]
    save_document(path, document)
    return True


def _layout_hint() -> str:
    return "the file holds one [rules] table with allow = [...] and deny = [...] lists of rules"
