"""Config files, layering, env and flag overrides, provider resolution (the trust boundary of
project files is tested in the other files of this folder)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from openheim.config import providers
from openheim.config.load import Overrides, Settings, load_settings
from openheim.config.providers import resolve_provider
from openheim.config.trust import is_trusted, set_trust, trusted_folders
from openheim.errors import ConfigError
from openheim.process.logs import RedactingFormatter, register_secret
from openheim.providers.base import ProviderSettings

RUST_CONFIG = """
default_provider = "openai"
max_iterations = 12
theme_color = "magenta"
default_skills = ["rust"]
allow_shell = false

[providers.openai]
api_base = "https://api.openai.com/v1"
default_model = "gpt-4"
models = ["gpt-4", "gpt-4-turbo"]
env_var = "OPENAI_API_KEY"
timeout_secs = 30
max_tokens = 4096

[providers.ollama]
api_base = "http://localhost:11434/v1"
default_model = "llama2"
models = ["llama2"]

[mcp_servers.filesystem]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]
env = { }

[mcp_servers.remote]
url = "http://localhost:8080/mcp"

[memory]
embedding_provider = "openai"
embedding_model = "text-embedding-3-small"
top_k = 7
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def load(home: Path, cwd: Path, overrides: Overrides | None = None, /, **env: str) -> Settings:
    return load_settings(overrides, cwd=cwd, env={"OPENHEIM_HOME": str(home), **env})


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_no_config_means_defaults(home: Path, project: Path) -> None:
    s = load(home, project)
    assert (s.max_iterations, s.allow_shell, s.work_dir, s.sources) == (10, False, project, [])
    assert s.data_dir == home


def test_every_rust_openheim_key_is_accepted(home: Path, project: Path) -> None:
    write(home / "config.toml", RUST_CONFIG)
    s = load(home, project)
    assert s.max_iterations == 12
    assert s.theme_color == "magenta"
    assert s.default_skills == ["rust"]
    assert s.providers["openai"].timeout_secs == 30
    assert s.mcp_servers["filesystem"].args[0] == "-y"
    assert s.mcp_servers["remote"].url == "http://localhost:8080/mcp"
    assert s.memory.top_k == 7


def test_tui_theme_overrides_top_level(home: Path, project: Path) -> None:
    write(home / "config.toml", 'theme_color = "red"\n[tui]\ntheme_color = "blue"\n')
    assert load(home, project).theme_color == "blue"


def test_tui_theme_is_read(home: Path, project: Path) -> None:
    write(home / "config.toml", '[tui]\ntheme = "nord"\n')
    assert load(home, project).theme == "nord"


@pytest.mark.parametrize(
    ("text", "key", "suggestion"),
    [
        ("max_iteration = 3\n", "max_iteration", "max_iterations"),
        ('[providers.openai]\napi_bse = "x"\n', "providers.openai.api_bse", "api_base"),
        ('[mcp_servers.x]\ncomand = "npx"\n', "mcp_servers.x.comand", "command"),
    ],
)
def test_unknown_keys_name_file_key_and_nearest(
    home: Path, project: Path, text: str, key: str, suggestion: str
) -> None:
    path = write(home / "config.toml", text)
    with pytest.raises(ConfigError) as err:
        load(home, project)
    message = str(err.value)
    assert str(path) in message and key in message and repr(suggestion) in message


def test_wrong_type_is_explained(home: Path, project: Path) -> None:
    write(home / "config.toml", 'max_iterations = "ten"\n')
    with pytest.raises(ConfigError, match="max_iterations: expected an integer"):
        load(home, project)


def test_invalid_toml_reports_the_line(home: Path, project: Path) -> None:
    write(home / "config.toml", "max_iterations = 3\nallow_shell = \n")
    with pytest.raises(ConfigError, match=r"invalid TOML.*line 2"):
        load(home, project)


def test_project_overrides_user(home: Path, project: Path) -> None:
    write(home / "config.toml", "max_iterations = 5\n")
    write(project / ".openheim" / "config.toml", "max_iterations = 3\n")
    sub = project / "src"
    sub.mkdir()
    s = load(home, sub)
    assert s.max_iterations == 3
    assert s.project_root == project


def test_trusted_project_may_widen(home: Path, project: Path) -> None:
    write(
        project / ".openheim" / "config.toml",
        'allow_shell = true\n[mcp_servers.x]\ncommand = "ls"\n',
    )
    assert set_trust(project, home) is True
    s = load(home, project)
    assert s.allow_shell is True and "x" in s.mcp_servers
    assert s.notices == ()


def test_trust_list_add_remove(home: Path, project: Path) -> None:
    assert not is_trusted(project, home)
    set_trust(project, home)
    assert set_trust(project, home) is False  # already there
    assert is_trusted(project / "sub", home)
    assert trusted_folders(home) == [project.resolve()]
    set_trust(project, home, trusted=False)
    assert trusted_folders(home) == []


def test_corrupt_trust_file_is_an_error(home: Path, project: Path) -> None:
    write(home / "trusted_folders.json", "{not json")
    with pytest.raises(ConfigError, match=r"trusted_folders\.json"):
        is_trusted(project, home)


def test_env_and_flags_override_files(home: Path, project: Path) -> None:
    write(home / "config.toml", "max_iterations = 5\nallow_shell = false\n")
    s = load(home, project, OPENHEIM_MAX_ITERATIONS="8", OPENHEIM_ALLOW_SHELL="yes")
    assert (s.max_iterations, s.allow_shell) == (8, True)
    flags = Overrides(max_iterations=9, allow_shell=False)
    s = load(home, project, flags, OPENHEIM_MAX_ITERATIONS="8", OPENHEIM_ALLOW_SHELL="1")
    assert (s.max_iterations, s.allow_shell) == (9, False)


@pytest.mark.parametrize(
    ("name", "value", "match"),
    [
        ("OPENHEIM_ALLOW_SHELL", "maybe", "not a boolean"),
        ("OPENHEIM_MAX_ITERATIONS", "lots", "not a whole number"),
        ("OPENHEIM_MAX_ITERATIONS", "0", "at least 1"),
        ("OPENHEIM_WORK_DIR", "/does/not/exist", "not an existing directory"),
    ],
)
def test_bad_env_values(home: Path, project: Path, name: str, value: str, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        load(home, project, None, **{name: value})


def resolve(home: Path, project: Path, *, config: str = "", **env: str) -> ProviderSettings:
    if config:
        write(home / "config.toml", config)
    settings = load(
        home, project, None, **{k: v for k, v in env.items() if k.startswith("OPENHEIM")}
    )
    return resolve_provider(settings, env=env)


def test_kind_is_inferred_from_the_name(home: Path, project: Path) -> None:
    config = (
        '[providers.openai]\napi_base = "https://a/v1"\ndefault_model = "m"\n'
        '[providers.vllm]\napi_base = "http://127.0.0.1:8000/v1"\ndefault_model = "q"\n'
    )
    p = resolve(home, project, config=config, OPENAI_API_KEY="sk-test-123456")
    assert p.kind == "openai" and p.api_key == "sk-test-123456"
    p = resolve(home, project, OPENHEIM_PROVIDER="vllm")
    assert (p.kind, p.model, p.api_key) == (
        "openai_compatible",
        "q",
        None,
    )


def test_builtin_provider_picked_from_env_key(home: Path, project: Path) -> None:
    p = resolve(home, project, OPENAI_API_KEY="sk-env-key-0001")
    assert (p.name, p.api_base) == ("openai", "https://api.openai.com/v1")


def test_no_provider_and_no_embedded_model(
    home: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(providers, "embedded_model_available", lambda: False)
    with pytest.raises(ConfigError, match="no model provider is configured") as err:
        resolve(home, project)
    assert "openheim[local]" in str(err.value) and "OPENAI_API_KEY" in str(err.value)


def test_no_provider_falls_back_to_the_embedded_model(
    home: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(providers, "embedded_model_available", lambda: True)
    chosen = resolve(home, project)
    assert (chosen.name, chosen.kind, chosen.model) == (
        "local",
        "llama_cpp",
        "SmolLM2-135M-Instruct",
    )
    assert chosen.api_key is None and chosen.data_dir == home


def test_unknown_provider(home: Path, project: Path) -> None:
    with pytest.raises(ConfigError, match="unknown provider 'nope'"):
        resolve(home, project, OPENHEIM_PROVIDER="nope")


def test_missing_key_names_the_variable(home: Path, project: Path) -> None:
    with pytest.raises(ConfigError, match=r"no API key for provider 'openai'.*OPENAI_API_KEY"):
        resolve(home, project, OPENHEIM_PROVIDER="openai")


def test_env_key_beats_inline_key(home: Path, project: Path) -> None:
    config = '[providers.openai]\napi_key = "sk-inline-000000"\n'
    p = resolve(home, project, config=config, OPENAI_API_KEY="sk-env-000000")
    assert p.api_key == "sk-env-000000"
    p = resolve(home, project, OPENHEIM_PROVIDER="openai")
    assert p.api_key == "sk-inline-000000"


def test_inline_key_over_plain_http_is_refused(home: Path, project: Path) -> None:
    config = (
        '[providers.lan]\napi_base = "http://10.0.0.5:8000/v1"\ndefault_model = "m"\n'
        'api_key = "sk-inline-000000"\n'
    )
    with pytest.raises(ConfigError, match="plain http") as err:
        resolve(home, project, config=config)
    assert "sk-inline" not in str(err.value)
    config = config.replace("10.0.0.5", "127.0.0.1")
    assert resolve(home, project, config=config).api_key == "sk-inline-000000"


def test_unknown_model_is_refused(home: Path, project: Path) -> None:
    config = '[providers.openai]\nmodels = ["gpt-4"]\n'
    with pytest.raises(ConfigError, match=r"unknown model 'gpt-9'.*gpt-4"):
        resolve(home, project, config=config, OPENAI_API_KEY="k" * 10, OPENHEIM_MODEL="gpt-9")


def test_keys_never_reach_log_lines() -> None:
    register_secret("sk-very-secret-value")
    record = logging.LogRecord("x", logging.INFO, "f", 1, "key=%s", ("sk-very-secret-value",), None)
    assert RedactingFormatter("%(message)s").format(record) == "key=[REDACTED]"


def test_prices_and_budgets(home: Path, project: Path) -> None:
    write(
        home / "config.toml",
        "max_cost = 2.5\nmax_tokens_per_session = 100000\n"
        '[prices."my-model"]\ninput = 1.0\noutput = 2.0\ncache_read = 0.1\n',
    )
    s = load(home, project)
    assert (s.max_cost, s.max_tokens_per_session) == (2.5, 100000)
    assert s.prices["my-model"].cache_read == 0.1 and s.prices["my-model"].cache_write is None


def test_price_needs_input_and_output(home: Path, project: Path) -> None:
    write(home / "config.toml", '[prices."m"]\ninput = 1.0\n')
    with pytest.raises(ConfigError, match=r"prices\.m\.output: required key is missing"):
        load(home, project)


@pytest.mark.parametrize(
    ("env", "config", "api_base"),
    [
        (
            {"ANTHROPIC_API_KEY": "sk-ant-0001", "ANTHROPIC_BASE_URL": "http://127.0.0.1:4000"},
            "",
            "http://127.0.0.1:4000/v1",
        ),
        (
            {"ANTHROPIC_API_KEY": "sk-ant-0001", "ANTHROPIC_BASE_URL": "https://gw.test/anth/"},
            "",
            "https://gw.test/anth/v1",
        ),
        (
            {"OPENAI_API_KEY": "sk-oai-0001", "OPENAI_BASE_URL": "https://proxy.test/v1"},
            "",
            "https://proxy.test/v1",
        ),
        (
            {"OPENAI_API_KEY": "sk-oai-0001", "OPENAI_BASE_URL": "http://localhost:8080/v1/"},
            "",
            "http://localhost:8080/v1",
        ),
        (
            {"OPENAI_API_KEY": "sk-oai-0001", "OPENAI_BASE_URL": "https://proxy.test/v1"},
            '[providers.openai]\napi_base = "https://mine.test/v1"\n',
            "https://mine.test/v1",
        ),
        (
            {"OPENAI_BASE_URL": "https://proxy.test/v1", "OPENHEIM_PROVIDER": "openai"},
            '[providers.openai]\napi_key = "sk-inline-0001"\n',
            "https://api.openai.com/v1",
        ),
        (
            {"ANTHROPIC_API_KEY": "sk-ant-0001", "OPENAI_BASE_URL": "https://proxy.test/v1"},
            "",
            "https://api.anthropic.com/v1",
        ),
    ],
)
def test_an_inherited_key_goes_to_the_inherited_base_url(
    home: Path, project: Path, env: dict[str, str], config: str, api_base: str
) -> None:
    assert resolve(home, project, config=config, **env).api_base == api_base


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ("ftp://127.0.0.1/x", "not an http"),
        ("127.0.0.1:4000", "not an http"),
        ("http://[::1", "not an http"),
        ("http://10.0.0.5:8000", "plain http"),
        ("http://user:hunter2-pass@gw.test", "plain http"),
    ],
)
def test_a_bad_inherited_base_url_is_refused(
    home: Path, project: Path, value: str, match: str
) -> None:
    env = {"ANTHROPIC_API_KEY": "sk-ant-0001", "ANTHROPIC_BASE_URL": value}
    with pytest.raises(ConfigError, match=match) as err:
        resolve(home, project, **env)
    assert "ANTHROPIC_BASE_URL" in str(err.value) and "hunter2" not in str(err.value)
