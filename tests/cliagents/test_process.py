"""Running a CLI: the prompt on stdin (even past the argument-length limit), the deadline, the
output cap, failures, and no process left behind when the caller stops early."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from openheim.cliagents.argv import MODEL
from openheim.cliagents.parse import CliOutcome, CliText
from openheim.cliagents.run import CliRequest, run_cli
from openheim.cliagents.spec import CLAUDE
from openheim.errors import ProviderError
from tests.cliagents.standin import FORKS, echo_script, write_script
from tests.processes import alive, wait_until


def _request(script: Path, cwd: Path, prompt: str = "hi", timeout: float = 30.0) -> CliRequest:
    return CliRequest(CLAUDE, str(script), prompt, cwd, MODEL, timeout=timeout)


async def _drain(request: CliRequest) -> tuple[list[CliText], CliOutcome]:
    texts: list[CliText] = []
    outcome: CliOutcome | None = None
    async for item in run_cli(request):
        if isinstance(item, CliOutcome):
            outcome = item
        elif isinstance(item, CliText):
            texts.append(item)
    assert outcome is not None
    return texts, outcome


async def test_prompt_past_the_argument_limit_goes_through_stdin(tmp_path: Path) -> None:
    prompt = "x" * (3 * 1024 * 1024)  # past ARG_MAX (2 MiB) and MAX_ARG_STRLEN (128 KiB)
    texts, outcome = await _drain(_request(echo_script(tmp_path), tmp_path, prompt))
    assert outcome.text == f"echo {len(prompt)} {'x' * 20}"
    assert "".join(t.text for t in texts) == outcome.text.replace(" ", "")
    assert outcome.session_id == "s-standin"
    assert outcome.usage.input_tokens == 3


async def test_a_silent_cli_is_stopped_at_its_deadline(tmp_path: Path) -> None:
    script = write_script(tmp_path, "time.sleep(100)")
    with pytest.raises(ProviderError, match=r"claude: no answer within 0.5 s"):
        await _drain(_request(script, tmp_path, timeout=0.5))


async def test_output_past_the_cap_stops_the_run(tmp_path: Path) -> None:
    body = "chunk = 'y' * 65536\nwhile True:\n    sys.stdout.write(chunk)\n    sys.stdout.flush()"
    script = write_script(tmp_path, body)
    with pytest.raises(ProviderError, match=r"printed more than 10485760 bytes"):
        await _drain(_request(script, tmp_path))


async def test_a_failing_cli_says_why(tmp_path: Path) -> None:
    script = write_script(tmp_path, "print('bad flag --x', file=sys.stderr)\nsys.exit(3)")
    with pytest.raises(ProviderError, match=r"exited with status 3: bad flag --x"):
        await _drain(_request(script, tmp_path))


async def test_a_cli_that_reports_nothing_fails(tmp_path: Path) -> None:
    script = write_script(tmp_path, "print('just words')")
    with pytest.raises(ProviderError, match="ended without reporting a result"):
        await _drain(_request(script, tmp_path))


async def test_a_missing_program_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ProviderError, match="could not start"):
        await _drain(_request(tmp_path / "nope", tmp_path))


async def test_cancelling_the_caller_kills_the_whole_process_group(tmp_path: Path) -> None:
    script = write_script(tmp_path, FORKS)
    started = asyncio.Event()

    async def consume() -> None:
        async for item in run_cli(_request(script, tmp_path)):
            if isinstance(item, CliText):
                started.set()

    task = asyncio.ensure_future(consume())
    await asyncio.wait_for(started.wait(), 20)
    pids = [int(p) for p in (tmp_path / "pids").read_text().split()]
    assert all(alive(pid) for pid in pids)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await wait_until(lambda: not any(alive(pid) for pid in pids))


async def test_closing_the_stream_early_kills_the_cli(tmp_path: Path) -> None:
    script = write_script(tmp_path, FORKS)
    events = run_cli(_request(script, tmp_path))
    first = await asyncio.wait_for(events.__anext__(), 20)
    assert first == CliText("started")
    pids = [int(p) for p in (tmp_path / "pids").read_text().split()]
    await events.aclose()
    await wait_until(lambda: not any(alive(pid) for pid in pids))
