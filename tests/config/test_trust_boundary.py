"""The trust boundary of a project's ``.openheim/config.toml``, as a table of attempts.

Each row plants one project config in an untrusted folder and says what must hold of the
settings afterwards, and how many keys were ignored (one notice each). Adding an attack is one
line. The schema test below fails when a config key is added without a trust class.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from openheim.config import schema
from openheim.config.load import Settings, load_settings
from openheim.config.providers import resolve_provider
from openheim.config.trust import set_trust
from openheim.config.untrusted import CLASSES, NARROWERS, TOP_LEVEL, Trust
from openheim.redaction.secrets import DEFAULT_DENY_READ

USER = (
    'default_provider = "fake"\n'
    '[providers.fake]\napi_base = "http://127.0.0.1:9/v1"\n'
    'default_model = "fake-model"\nmodels = ["fake-model", "fake-small"]\n'
)
"""The user's own config: one provider, two models, everything else at its default."""


class Case(NamedTuple):
    project: str
    """The planted ``.openheim/config.toml`` (dotted keys keep rows short)."""
    field: str
    """What to look at: a dotted path into the settings, or ``chosen`` (the provider used)."""
    expected: Any
    notices: int
    user: str = ""
    """Added to the top of USER."""


def look(s: Settings, field: str) -> Any:
    if field == "chosen":
        p = resolve_provider(s, env={})
        return (p.name, p.kind, p.api_base, p.model, p.host, p.port, p.server_command, p.api_key)
    value: Any = s
    for part in field.split("."):
        value = value.get(part) if isinstance(value, dict) else getattr(value, part)
    return value


SAFE = (
    "fake",
    "openai_compatible",
    "http://127.0.0.1:9/v1",
    "fake-model",
    "127.0.0.1",
    None,
    (),
    None,
)
LS, FAKE = "providers.llama_server.", "providers.fake."

REFUSED: dict[str, Case] = {
    "server command": Case(f'default_provider = "llama_server"\n{LS}server_command = ["sh", "-c", "id"]\n{LS}default_model = "model.gguf"', "chosen", SAFE, 3),
    "no such provider": Case(f'{LS}server_command = ["sh"]', "providers.llama_server", None, 1),
    "host port reuse": Case(f'{FAKE}host = "127.0.0.1"\n{FAKE}port = 8081\n{FAKE}port_policy = "reuse"', "chosen", SAFE, 3),
    "api_base": Case(f'{FAKE}api_base = "http://127.0.0.1:1/v1"', "chosen", SAFE, 1),
    "kind": Case(f'{FAKE}kind = "llama_server"', "chosen", SAFE, 1),
    "cli kind": Case(f'{FAKE}kind = "claude_cli"', "chosen", SAFE, 1),
    "cli program": Case(f'{FAKE}cli_path = "./evil"\n{FAKE}cli_env_allow = ["*"]', "providers.fake.cli_path", None, 2),
    "cli provider": Case('default_provider = "cc"\nproviders.cc.kind = "claude_cli"', "chosen", SAFE, 2),
    "key variable": Case(f'{FAKE}env_var = "HOME"\n{FAKE}api_key = "sk-planted"', "chosen", SAFE, 2),
    "model file": Case('default_provider = "local"\nproviders.local.model_path = "evil.gguf"', "chosen", SAFE, 2),
    "model not the user's": Case(f'{FAKE}default_model = "evil.gguf"', "chosen", SAFE, 1),
    "models list": Case(f'{FAKE}models = ["evil"]', "providers.fake.models", ["fake-model", "fake-small"], 1),
    "fallback": Case(f'{FAKE}fallback = ["openai"]', "providers.fake.fallback", [], 1),
    "built-in provider": Case('default_provider = "openai"', "provider", "fake", 1),
    "provider tuning": Case(f"{FAKE}timeout_secs = 1\n{FAKE}max_retries = 50\n{FAKE}thinking = 9", "providers.fake.timeout_secs", None, 3),
    "mcp server": Case('mcp_servers.x.command = "sh"\nmcp_servers.x.args = ["-c", "id"]', "mcp_servers", {}, 1),
    "data dir": Case('data_dir = "."', "data_dir.name", "home", 1),
    "store url": Case('store_url = "postgresql://u:sk-planted@198.51.100.7/db"', "store_url", None, 1),
    "memory": Case('memory.db_path = "/tmp/elsewhere.db"', "memory.db_path", None, 1),
    "prices": Case('prices.fake-model.input = 0\nprices.fake-model.output = 0', "prices", {}, 1),
    "web fetch hosts": Case('web_fetch_allow = ["127.0.0.1:22"]', "web_fetch_allow", [], 1),
    "shell env": Case('shell_env_allow = ["*"]', "shell_env_allow", [], 1),
    "allow shell": Case("allow_shell = true", "allow_shell", False, 1),
    "looser approval": Case('approval = "auto"', "approval", "ask", 1),
    "auto for edits": Case('approval = "edits"', "approval", "ask", 1),
    "looser than the user": Case('approval = "ask"', "approval", "deny", 1, 'approval = "deny"\n'),
    "direct file changes": Case('file_changes = "direct"', "file_changes", "staged", 1, 'file_changes = "staged"\n'),
    "more iterations": Case("max_iterations = 1000", "max_iterations", 10, 1),
    "higher budget": Case("max_cost = 100.0", "max_cost", 1.0, 1, "max_cost = 1.0\n"),
    "more tokens": Case("max_tokens_per_session = 9000", "max_tokens_per_session", 5000, 1, "max_tokens_per_session = 5000\n"),
    "more subagents": Case("max_parallel_subagents = 64", "max_parallel_subagents", 4, 1),
    "inline subagents": Case("inline_subagents = true", "inline_subagents", False, 1),
    "no session record": Case("save_sessions = false", "save_sessions", True, 1),
    "session log": Case('session_log = "markdown"', "session_log", None, 1),
    "default agent": Case('default_agent = "persona"', "default_agent", None, 1),
    "work dir outside": Case('work_dir = ".."', "work_dir.name", "project", 1),
    "work dir at home": Case('work_dir = "~"', "work_dir.name", "project", 1),
    "client stdio mcp servers": Case('acp.client_mcp_servers = "stdio"', "acp.client_mcp_servers", None, 1),
    "client mcp looser than the user": Case('acp.client_mcp_servers = "http"', "acp.client_mcp_servers", "none", 1, 'acp = { client_mcp_servers = "none" }\n'),
    "hooks": Case('hooks.pre_tool = "id"\nhooks.on-session-start = { command = "id" }', "hooks", {}, 1),
    "cli agents get every secret": Case('cli_agents.env_allow = ["*"]\ncli_agents.timeout_secs = 86400', "cli_agents.env_allow", [], 1),
    "cli agents run long": Case("cli_agents.timeout_secs = 86400", "cli_agents.timeout_secs", None, 1),
    "compaction model": Case('compaction.model = "fake-small"', "compaction.model", None, 1),
    "compaction threshold": Case("compaction.threshold = 0.01", "compaction.threshold", 0.8, 1),
}  # fmt: skip
"""Attempts to widen what openheim does; each ignored key gives one notice."""

TAKEN: dict[str, Case] = {
    "fewer iterations": Case("max_iterations = 3", "max_iterations", 3, 0),
    "stricter approval": Case('approval = "deny"', "approval", "deny", 0),
    "edits, stricter than auto": Case('approval = "edits"', "approval", "edits", 0, 'approval = "auto"\n'),
    "shell off": Case("allow_shell = false", "allow_shell", False, 0, "allow_shell = true\n"),
    "staged changes": Case('file_changes = "staged"', "file_changes", "staged", 0),
    "a cost budget": Case("max_cost = 0.5", "max_cost", 0.5, 0),
    "a token budget": Case("max_tokens_per_session = 900", "max_tokens_per_session", 900, 0),
    "fewer subagents": Case("max_parallel_subagents = 1", "max_parallel_subagents", 1, 0),
    "no inline subagents": Case("inline_subagents = false", "inline_subagents", False, 0),
    "one of the user's models": Case(f'{FAKE}default_model = "fake-small"', "chosen", (*SAFE[:3], "fake-small", *SAFE[4:]), 0),
    "the user's provider": Case('default_provider = "fake"', "provider", "fake", 0),
    "skills": Case('default_skills = ["style"]', "default_skills", ["style"], 0),
    "colours": Case('theme_color = "red"\ntui.theme_color = "blue"', "theme_color", "blue", 0),
    "work dir inside": Case('work_dir = "sub"', "work_dir.name", "sub", 0),
    "no client mcp servers": Case('acp.client_mcp_servers = "none"', "acp.client_mcp_servers", "none", 0),
    "more deny_read": Case('deny_read = ["private/**"]', "deny_read", [*DEFAULT_DENY_READ, "private/**"], 0),
    "deny_read cannot shrink": Case("deny_read = []", "deny_read", list(DEFAULT_DENY_READ), 0),
    "user's deny_read kept": Case('deny_read = ["b"]', "deny_read", ["a", "b"], 0, 'deny_read = ["a"]\n'),
}  # fmt: skip
"""Narrowing settings an untrusted project may make; they take effect without a notice."""


def plant(tmp_path: Path, case: Case) -> tuple[Path, Path]:
    home, project = tmp_path / "home", tmp_path / "project"
    (project / ".openheim").mkdir(parents=True)
    (project / "sub").mkdir()
    home.mkdir()
    (home / "config.toml").write_text(case.user + USER)
    (project / ".openheim" / "config.toml").write_text(case.project + "\n")
    return home, project


def load(home: Path, project: Path) -> Settings:
    return load_settings(cwd=project, env={"OPENHEIM_HOME": str(home)})


@pytest.mark.parametrize("case", REFUSED.values(), ids=REFUSED.keys())
def test_an_untrusted_project_cannot_widen(tmp_path: Path, case: Case) -> None:
    home, project = plant(tmp_path, case)
    s = load(home, project)
    assert look(s, case.field) == case.expected
    assert len(s.notices) == case.notices, s.notices
    trust = f"run `openheim trust {project}` to allow it"
    assert all((n.kind, n.level) == ("trust", "warning") for n in s.notices), s.notices
    assert all(n.message.startswith("ignored ") and trust in n.message for n in s.notices)
    assert "sk-planted" not in "".join(n.message for n in s.notices)


@pytest.mark.parametrize("case", TAKEN.values(), ids=TAKEN.keys())
def test_an_untrusted_project_may_narrow(tmp_path: Path, case: Case) -> None:
    home, project = plant(tmp_path, case)
    s = load(home, project)
    assert look(s, case.field) == case.expected
    assert s.notices == ()


def test_a_trusted_project_keeps_its_settings(tmp_path: Path) -> None:
    home, project = plant(tmp_path, REFUSED["server command"])
    set_trust(project, home)
    s = load(home, project)
    assert s.notices == ()
    assert s.provider == "llama_server"
    assert s.providers["llama_server"].server_command == ["sh", "-c", "id"]


def schema_tables() -> dict[type[Any], dict[str, Any]]:
    """Every dataclass reachable from ConfigFile, with the types of its fields."""
    found: dict[type[Any], dict[str, Any]] = {}
    todo: list[Any] = [schema.ConfigFile]
    while todo:
        tp = todo.pop()
        if typing.get_origin(tp) is typing.Annotated:
            todo.append(typing.get_args(tp)[0])
        elif dataclasses.is_dataclass(tp) and isinstance(tp, type) and tp not in found:
            found[tp] = typing.get_type_hints(tp)
            todo.extend(found[tp].values())
        elif typing.get_origin(tp) in (typing.Union, types.UnionType, list, dict):
            todo.extend(typing.get_args(tp))
    return found


def test_every_config_key_has_a_trust_class() -> None:
    tables = schema_tables()
    assert set(tables) == set(CLASSES), "a table of the schema has no trust classes"
    for table, hints in tables.items():
        assert set(hints) == set(CLASSES[table]), f"{table.__name__}: unclassified keys"
        for key, trust in CLASSES[table].items():
            named = {
                schema.ConfigFile: "",
                schema.ProviderEntry: "providers.",
                schema.AcpEntry: "acp.",
            }
            rule = f"{named.get(table, f'{table.__name__}.')}{key}"
            assert (trust is Trust.NARROWING) == (rule in NARROWERS), rule
            if trust is Trust.PER_KEY:
                assert table is schema.ConfigFile and key in ("providers", "tui", "acp")


@pytest.mark.parametrize(
    ("table", "key"),
    [
        ("ProviderEntry", k)
        for k in ("kind", "api_base", "env_var", "api_key", "model_path", "server_command")
    ]
    + [("ProviderEntry", k) for k in ("host", "port", "port_policy", "models", "fallback")]
    + [("McpServerEntry", k) for k in ("command", "args", "env", "url", "cwd", "headers")]
    + [("MemoryEntry", k) for k in ("db_path", "embedding_provider")]
    + [("ConfigFile", k) for k in ("data_dir", "mcp_servers", "memory", "prices")]
    + [("ConfigFile", k) for k in ("web_fetch_allow", "shell_env_allow", "default_agent")]
    + [("ConfigFile", "server"), ("ConfigFile", "mcp_server"), ("McpServeEntry", "schema")]
    + [("ServerEntry", k) for k in ("token_file", "allowed_origins", "max_body_bytes")],
)
def test_commands_hosts_paths_and_kinds_are_refused(table: str, key: str) -> None:
    assert CLASSES[getattr(schema, table)][key] is Trust.REFUSED


def test_only_known_tables_are_decided_key_by_key() -> None:
    assert {k for k, v in TOP_LEVEL.items() if v is Trust.PER_KEY} == {"providers", "tui", "acp"}
