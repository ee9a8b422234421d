"""Secrets: the redactor's formats and values, deny-read in every file tool, the child env."""

from __future__ import annotations

from pathlib import Path

import pytest

from openheim.errors import SandboxError, ToolError
from openheim.messages import (
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from openheim.process.child_env import child_env, is_secret_name
from openheim.redaction.secrets import REDACTED, Redactor, SecretPolicy, register_secret
from openheim.tools.base import ToolContext
from openheim.tools.builtin import edit_file, glob, list_dir, read_file, search, write_file
from openheim.tools.sandbox import PathSandbox
from tests.safety.secret_cases import FORMATS, PEM, PROJ_KEY
from tests.tools.support import call, ok


@pytest.mark.parametrize("secret", FORMATS.values(), ids=FORMATS.keys())
def test_each_key_format_is_redacted(secret: str) -> None:
    text = f"before {secret} after\nnext line"
    assert Redactor().redact(text) == f"before {REDACTED} after\nnext line"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Authorization: Bearer eyJhbGciOi.J9-WIi_OiIx", f"Authorization: Bearer {REDACTED}"),
        (
            '{"authorization": "Basic dXNlcjpwYXNzd29yZA=="}',
            f'{{"authorization": "Basic {REDACTED}"}}',
        ),
        (
            "url https://bob:hunter2pass@example.com/r.git",
            f"url https://bob:{REDACTED}@example.com/r.git",
        ),
    ],
)
def test_headers_and_urls_keep_their_prefix(text: str, expected: str) -> None:
    assert Redactor().redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "disk-usage-monitoring-service-and-more",  # 'sk-' inside a word
        "AKIAIOSFODNN7EXAMPLEX",  # too long for an AWS key id
        'headers = {"Authorization": f"Bearer {token}"}',
        'headers = {"x-goog-api-key": self.api_key}',
        "see https://example.com:8080/path@v2 for details",
    ],
)
def test_lookalikes_are_left_alone(text: str) -> None:
    assert Redactor().redact(text) == text


def test_a_private_key_cut_off_is_redacted_to_the_end() -> None:
    cut = "key:\n" + PEM[:90]
    assert Redactor().redact(cut) == f"key:\n{REDACTED}"


def test_registered_values_are_redacted_longest_first_and_literally() -> None:
    redactor = Redactor()
    for value in ("custom-value-1", "custom-value-1-longer", "a+b(c)*[d]?x", "short"):
        redactor.add(value)
    text = "custom-value-1-longer, custom-value-1, a+b(c)*[d]?x, short, a+b(c)[d]x"
    assert redactor.redact(text) == f"{REDACTED}, {REDACTED}, {REDACTED}, short, a+b(c)[d]x"
    assert redactor.finds("xx custom-value-1 xx") and not redactor.finds("custom-value-2")


def test_redact_message_covers_every_block_kind() -> None:
    redactor = Redactor()
    redactor.add("planted-value-123")
    message = Message(
        "assistant",
        (
            TextBlock(f"key {PROJ_KEY}"),
            ThinkingBlock("I saw planted-value-123", signature="sig"),
            ThinkingBlock("nothing here", signature="kept"),
            ToolUseBlock("c1", "t", {"a": ["planted-value-123", {"b": PROJ_KEY}], "n": 3}),
            ToolUseBlock(
                "c2", "t", raw_arguments="{planted-value-123", error="bad planted-value-123"
            ),
            ToolResultBlock("c1", f"out {PROJ_KEY}", is_error=True),
        ),
    )
    out = redactor.redact_message(message)
    assert "planted-value-123" not in repr(out) and PROJ_KEY not in repr(out)
    text, changed, kept, use, raw, result = out.content
    assert text == TextBlock(f"key {REDACTED}")
    assert isinstance(changed, ThinkingBlock) and changed.signature is None
    assert kept is message.content[2]
    assert isinstance(use, ToolUseBlock) and use.arguments == {
        "a": [REDACTED, {"b": REDACTED}],
        "n": 3,
    }
    assert isinstance(raw, ToolUseBlock) and raw.raw_arguments == "{" + REDACTED
    assert isinstance(result, ToolResultBlock) and result.is_error
    plain = Message.user("nothing secret")
    assert redactor.redact_message(plain) is plain


# --- deny-read ---------------------------------------------------------------------------------

SECRET_FILES = {
    ".env": ".env*",
    "app/.env.production": ".env*",
    "certs/server.pem": "*.pem",
    "tls.key": "*.key",
    "deploy/id_rsa": "id_rsa*",
    "deploy/id_rsa.pub": "id_rsa*",
    ".ssh/config": "~/.ssh/**",
    ".aws/credentials": "~/.aws/credentials",
    ".openheim/config.toml": "config.toml",
}
"""Planted files (relative to a work dir that is also ``~``) and the pattern each one hits."""


@pytest.fixture
def planted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A work dir that is also $HOME and holds $OPENHEIM_HOME, with every kind of secret file."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("OPENHEIM_HOME", str(tmp_path / ".openheim"))
    for rel in SECRET_FILES:
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"planted-secret in {rel}\n")
    (tmp_path / "notes.txt").write_text("planted-secret is not here, only the word\n")
    return tmp_path.resolve()


def context(work: Path, policy: SecretPolicy | None = None) -> ToolContext:
    """A context with the default policy (built now, from the environment) unless given."""
    ctx = ToolContext(PathSandbox(work), work, {})
    if policy is not None:
        ctx.secret_policy = policy
    return ctx


@pytest.mark.parametrize("rel", SECRET_FILES)
async def test_every_default_pattern_is_refused_by_the_file_tools(planted: Path, rel: str) -> None:
    ctx = context(planted)
    with pytest.raises(SandboxError, match="secret pattern") as err:
        await call(read_file, ctx, path=rel)
    assert "secrets are not shown to the model" in str(err.value)
    assert SECRET_FILES[rel] in str(err.value)
    with pytest.raises(ToolError, match="secret pattern"):
        await call(edit_file, ctx, path=rel, old_string="planted", new_string="x")
    with pytest.raises(ToolError, match="secret pattern"):
        await call(write_file, ctx, path=rel, content="overwritten")
    assert (planted / rel).read_text() == f"planted-secret in {rel}\n"


async def test_search_skips_secret_files_and_counts_them(planted: Path) -> None:
    out = await ok(search, context(planted), pattern="planted-secret")
    matches = [line for line in out.splitlines() if not line.startswith("[")]
    assert matches == ["notes.txt:1: planted-secret is not here, only the word"]
    assert f"[skipped {len(SECRET_FILES)} files matching secret patterns; never shown]" in out


async def test_listing_still_shows_the_names(planted: Path) -> None:
    ctx = context(planted)
    assert ".env" in (await ok(list_dir, ctx, path=".")).splitlines()
    assert "id_rsa.pub" in await ok(list_dir, ctx, path="deploy")
    assert "certs/server.pem" in await ok(glob, ctx, pattern="**/*.pem")


@pytest.mark.parametrize("rel", SECRET_FILES)
async def test_an_empty_policy_allows_everything(planted: Path, rel: str) -> None:
    ctx = context(planted, SecretPolicy.from_config([]))
    assert await ok(read_file, ctx, path=rel) == f"planted-secret in {rel}\n"
    assert rel in await ok(search, ctx, pattern="planted-secret in")


async def test_links_case_and_configured_patterns(planted: Path) -> None:
    (planted / "innocent.txt").symlink_to(planted / ".env")
    (planted / "Secrets").mkdir()
    (planted / "Secrets" / "prod.json").write_text("{}")
    ctx = context(planted)
    for alias in ("innocent.txt", ".ENV", "./app/../.env"):
        with pytest.raises(SandboxError, match=r"'\.env\*'"):
            await call(read_file, ctx, path=alias)
    assert await ok(read_file, ctx, path="Secrets/prod.json") == "{}"
    custom = context(planted, SecretPolicy.from_config(["secrets/*.json"]))
    with pytest.raises(SandboxError, match="secrets/"):
        await call(read_file, custom, path="Secrets/prod.json")
    assert await ok(read_file, custom, path=".env") == "planted-secret in .env\n"
    assert SecretPolicy.from_config().match(planted / "a.key.txt") is None


async def test_a_folder_with_a_secret_looking_name_can_be_listed(planted: Path) -> None:
    (planted / "ssl.key").mkdir()
    (planted / "ssl.key" / "readme.txt").write_text("about keys")
    ctx = context(planted)
    assert await ok(list_dir, ctx, path="ssl.key") == "readme.txt"
    assert await ok(read_file, ctx, path="ssl.key/readme.txt") == "about keys"


# --- child environment -------------------------------------------------------------------------

PARENT = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/home/u",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "TERM": "xterm",
    "OPENHEIM_HOME": "/home/u/.openheim",
    "OPENAI_API_KEY": "plain-looking-value",
    "GITHUB_TOKEN": "abc",
    "DB_PASSWORD": "pw",
    "AWS_SECRET_ACCESS_KEY": "x",
    "SIGNING_KEY": "x",
    "RANDOM_SETTING": "not in the base",
    "MY_FLAG": "on",
    "LOOKS_FINE": PROJ_KEY,
    "DATABASE_URL": "postgres://app:hunter2pass@db/app",
    "CUSTOM_HOLDER": "value-child-env-test-1",
}


def test_child_env_keeps_the_safe_base_and_drops_the_rest() -> None:
    env = child_env(PARENT)
    assert env == {
        k: PARENT[k] for k in ("PATH", "HOME", "LANG", "LC_ALL", "TERM", "OPENHEIM_HOME")
    }


def test_child_env_honours_the_allow_list_but_never_passes_secrets() -> None:
    register_secret("value-child-env-test-1")
    env = child_env(PARENT, allow=["MY_*", "*_TOKEN", "LOOKS_FINE", "DATABASE_URL", "CUSTOM_*"])
    assert env["MY_FLAG"] == "on"
    assert not {"GITHUB_TOKEN", "LOOKS_FINE", "DATABASE_URL", "CUSTOM_HOLDER"} & set(env)
    everything = child_env(PARENT, allow=["*"])
    assert set(everything) == set(env) | {"RANDOM_SETTING"}


def test_child_env_adds_declared_extra_as_given() -> None:
    env = child_env({"PATH": "/bin", "SERVER_TOKEN": "t"}, extra={"SERVER_TOKEN": "declared"})
    assert env == {"PATH": "/bin", "SERVER_TOKEN": "declared"}


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("ANTHROPIC_API_KEY", True),
        ("npm_config_authToken", True),
        ("PGPASSWORD", True),
        ("MYSQL_PWD", True),
        ("STRIPE_KEY", True),
        ("GIT_AUTHOR_NAME", False),
        ("KEYBOARD_LAYOUT", False),
        ("PWD", False),
    ],
)
def test_secret_names(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret
