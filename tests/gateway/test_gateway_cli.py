"""``openheim gateway`` as a program: configuration errors, grants, a refused token, the
project config kept out, and logs that hold neither tokens nor message bodies."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from openheim.config.load import load_settings
from openheim.config.trust import set_trust
from openheim.gateway.state import GatewayState
from openheim.testing import FakeLLMServer, FakeReply
from tests.cli.test_cli import configure, env_for, openheim
from tests.gateway.fake_telegram import TOKEN, FakeTelegram
from tests.gateway.loopback import WAIT, serving
from tests.gateway.support import write_config

SECRET_WORDS = "my bank pin is 4321"


def test_no_platform_configured_is_a_usage_error(home: Path, work: Path) -> None:
    configure(home, None)
    done = openheim("gateway", home=home, cwd=work)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1].startswith("openheim: error: no chat platform is config")
    assert "Traceback" not in done.stderr


def test_a_flag_for_an_unconfigured_platform_is_refused(home: Path, work: Path) -> None:
    configure(home, None, extra='[gateway.telegram]\ntoken = "env:TG"\n')
    done = openheim("gateway", "--discord", home=home, cwd=work)
    assert done.returncode == 2
    assert "--discord: there is no [gateway.discord] table" in done.stderr


def test_a_token_written_into_the_config_is_refused_unshown(home: Path, work: Path) -> None:
    configure(home, None, extra=f'[gateway.telegram]\ntoken = "{TOKEN}"\n')
    done = openheim("gateway", home=home, cwd=work)
    assert done.returncode == 2
    assert "gateway.telegram.token must be env:NAME or file:PATH" in done.stderr
    assert TOKEN not in done.stderr + done.stdout


def test_a_missing_token_says_which_variable(home: Path, work: Path) -> None:
    configure(home, None, extra="[gateway.telegram]\n")
    done = openheim("gateway", home=home, cwd=work)
    assert done.returncode == 2
    assert "gateway.telegram.token is not set: env:TELEGRAM_BOT_TOKEN is empty" in done.stderr


def test_a_model_the_provider_does_not_offer_stops_the_gateway(home: Path, work: Path) -> None:
    gateway = '[gateway]\nmodels = ["fake-model", "fake-huge"]\n'
    gateway += '[gateway.telegram]\ntoken = "env:TG"\n'
    configure(home, None, extra=f'models = ["fake-large"]\n{gateway}')
    done = openheim("gateway", home=home, cwd=work, TG=TOKEN)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "openheim: error: gateway.models names 'fake-huge', which provider 'fake' does not "
        "offer (known: fake-model, fake-large) (list only models the provider offers, or add "
        "it to models in [providers.fake])"
    )


def test_grants_are_listed_and_revoked(home: Path, work: Path) -> None:
    configure(home, None)
    state = GatewayState(home / "gateway.db")
    state.grant("telegram", "222")
    state.close()
    listed = openheim("gateway", "--grants", home=home, cwd=work)
    assert listed.returncode == 0 and listed.stdout.startswith("telegram:222  granted ")
    revoked = openheim("gateway", "--revoke", "telegram:222", home=home, cwd=work)
    assert (revoked.returncode, revoked.stdout) == (0, "revoked telegram:222\n")
    again = openheim("gateway", "--revoke", "telegram:222", home=home, cwd=work)
    assert again.returncode == 2 and "telegram:222 has no grant" in again.stderr
    bad = openheim("gateway", "--revoke", "icq", home=home, cwd=work)
    assert bad.returncode == 2 and "is not PLATFORM:SENDER" in bad.stderr


def test_a_project_config_never_configures_the_gateway(home: Path, tmp_path: Path) -> None:
    configure(home, None)
    project = tmp_path / "project"
    (project / ".openheim").mkdir(parents=True)
    (project / ".openheim" / "config.toml").write_text(
        '[gateway]\npassphrase = "env:X"\n[gateway.telegram]\nallowed_users = ["666"]\n'
    )
    env = {"OPENHEIM_HOME": str(home)}
    untrusted = load_settings(cwd=project, env=env)
    assert untrusted.gateway.telegram is None and untrusted.gateway.passphrase is None
    set_trust(project, home)
    trusted = load_settings(cwd=project, env=env)
    assert trusted.project_trusted
    assert trusted.gateway.telegram is None and trusted.gateway.passphrase is None
    assert any("[gateway] ignored" in notice.message for notice in trusted.notices)


async def _gateway_process(home: Path, work: Path, *args: str, **env: str) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "openheim", *args, "gateway",
        cwd=work, env=env_for(home, **env), stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    return await _ended(process)


async def _ended(process: asyncio.subprocess.Process) -> tuple[int, str]:
    try:
        _, err = await asyncio.wait_for(process.communicate(), WAIT * 3)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode is not None
    return process.returncode, err.decode()


async def test_a_refused_token_ends_the_gateway_in_one_line(home: Path, work: Path) -> None:
    fake = FakeTelegram()
    async with serving(fake.app()) as url:
        with FakeLLMServer([]) as llm:
            write_config(home, llm, f'[gateway.telegram]\napi_base = "{url}"\n')
            code, err = await _gateway_process(home, work, TELEGRAM_BOT_TOKEN="999:wrong-token")
    assert code == 1
    assert err.splitlines()[-1] == (
        "openheim: error: Telegram: the bot token was refused (HTTP 401) (check the token "
        "that gateway.telegram.token names (see docs/gateway.md))"
    )
    assert "999:wrong-token" not in err


async def test_info_logs_hold_no_token_and_no_message(home: Path, work: Path) -> None:
    fake = FakeTelegram()
    async with serving(fake.app()) as url:
        with FakeLLMServer([f"you said: {SECRET_WORDS}"]) as llm:
            write_config(
                home,
                llm,
                f'[gateway.telegram]\napi_base = "{url}"\nallowed_users = ["111"]\n',
            )
            process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "openheim", "--log-level", "info", "gateway",
                cwd=work, env=env_for(home, TELEGRAM_BOT_TOKEN=TOKEN),
                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, start_new_session=True,
            )  # fmt: skip
            await fake.message(111, SECRET_WORDS)
            sent = await fake.wait_sent(1, timeout=WAIT * 2)
            process.terminate()
            code, err = await _ended(process)
    assert sent[0].text == f"you said: {SECRET_WORDS}"
    assert code == 143
    assert "openheim gateway: serving (Ctrl-C stops)" in err
    assert "telegram: message 111:" in err  # the run was logged at info
    assert TOKEN not in err and SECRET_WORDS not in err


def test_an_unknown_provider_stops_it_at_once(home: Path, work: Path) -> None:
    configure(home, None, extra='[gateway]\nprovider = "nope"\n[gateway.telegram]\n')
    done = openheim("gateway", home=home, cwd=work, TELEGRAM_BOT_TOKEN=TOKEN)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "nope" in done.stderr
    assert TOKEN not in done.stderr


def test_a_base_url_that_would_send_the_token_in_clear_is_refused(home: Path, work: Path) -> None:
    table = '[gateway.telegram]\napi_base = "http://api.example.com"\n'
    configure(home, None, extra=table)
    done = openheim("gateway", home=home, cwd=work, TELEGRAM_BOT_TOKEN=TOKEN)
    assert done.returncode == 2
    assert "gateway.telegram.api_base 'http://api.example.com' is not an https://" in done.stderr


async def _start(home: Path, work: Path) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "openheim", "gateway",
        cwd=work, env=env_for(home, TELEGRAM_BOT_TOKEN=TOKEN), stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True,
    )  # fmt: skip


async def test_a_killed_gateway_answers_at_its_next_start(home: Path, work: Path) -> None:
    fake = FakeTelegram()
    stalled = FakeReply(text="an answer cut short", hang_at=2)
    async with serving(fake.app()) as url:
        with FakeLLMServer([stalled, "answered after the crash", "same session"]) as llm:
            write_config(
                home, llm, f'[gateway.telegram]\napi_base = "{url}"\nallowed_users = ["111"]'
            )
            crashed = await _start(home, work)
            await fake.message(111, "a question")
            await asyncio.to_thread(llm.wait_for_requests, 1, WAIT * 2)
            crashed.kill()
            await _ended(crashed)
            restarted = await _start(home, work)
            await fake.wait_sent(1, timeout=WAIT * 2)
            await fake.message(111, "a follow-up")
            sent = await fake.wait_sent(2, timeout=WAIT * 2)
            restarted.terminate()
            code, err = await _ended(restarted)
        follow_up = [m.get("content") for m in llm.requests[2].messages]
    assert [s.text for s in sent] == ["answered after the crash", "same session"]
    assert code == 143, err
    assert "a question" in follow_up and "answered after the crash" in follow_up


def test_a_passphrase_named_but_unset_is_refused(home: Path, work: Path) -> None:
    configure(home, None, extra='[gateway]\npassphrase = "env:GW_PASS"\n[gateway.telegram]\n')
    done = openheim("gateway", home=home, cwd=work, TELEGRAM_BOT_TOKEN=TOKEN)
    assert done.returncode == 2
    assert "gateway.passphrase is not set: env:GW_PASS is empty" in done.stderr
