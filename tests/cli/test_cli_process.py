"""``cli.process``: the program's exit runs the exit hooks and flushes its streams, keeps its
exit code, and falls back to the usual exit where ending at once could lose something."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest

import openheim
from openheim.cli import process


class Ended(Exception):
    """``os._exit`` was called (with ``code``)."""

    def __init__(self, code: int) -> None:
        self.code = code


class Recorded(io.StringIO):
    def __init__(self, calls: list[str], name: str, fail: bool = False) -> None:
        super().__init__()
        self.calls, self.name, self.fail = calls, name, fail

    def flush(self) -> None:
        self.calls.append(f"flush {self.name}")
        if self.fail:
            raise BrokenPipeError(32, "Broken pipe")


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What ``exit_now`` did, in order; ``os._exit`` raises ``Ended`` instead of ending."""
    done: list[str] = []

    def end(code: int) -> None:
        done.append(f"_exit {code}")
        raise Ended(code)

    monkeypatch.setattr("os._exit", end)
    monkeypatch.setattr("atexit._run_exitfuncs", lambda: done.append("hooks"))
    monkeypatch.setattr("threading.active_count", lambda: 1)  # as in the program, not pytest
    return done


def recorded_streams(
    calls: list[str], monkeypatch: pytest.MonkeyPatch, *, broken: bool = False
) -> None:
    """Streams that record their flushes (set in the test itself: pytest's capture puts its
    own back between a fixture and the test)."""
    monkeypatch.setattr(sys, "stdout", Recorded(calls, "stdout", fail=broken))
    monkeypatch.setattr(sys, "stderr", Recorded(calls, "stderr"))


def test_hooks_run_and_streams_flush_before_the_end(
    calls: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    recorded_streams(calls, monkeypatch)
    with pytest.raises(Ended):
        process.exit_now(3)
    assert calls == ["hooks", "flush stdout", "flush stderr", "_exit 3"]


def test_another_thread_alive_means_the_usual_exit(
    calls: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("threading.active_count", lambda: 2)
    recorded_streams(calls, monkeypatch)
    with pytest.raises(SystemExit) as stop:
        process.exit_now(4)
    assert stop.value.code == 4
    assert calls == []  # the interpreter joins the thread, then runs the hooks itself


def test_a_stream_that_cannot_flush_means_the_usual_exit(
    calls: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    recorded_streams(calls, monkeypatch, broken=True)
    with pytest.raises(SystemExit) as stop:
        process.exit_now(5)
    assert stop.value.code == 5
    assert calls == ["hooks", "flush stdout"]  # the interpreter reports the broken pipe


@pytest.mark.parametrize(("args", "code"), [(["--version"], 0), (["nonsense"], 2)])
def test_the_program_keeps_its_output_hooks_and_exit_code(args: list[str], code: int) -> None:
    script = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('hook ran'))\n"
        "from openheim.cli.main import main\n"
        f"sys.argv = ['openheim', *{args!r}]\n"
        "main()\n"
        "print('not reached')"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == code
    lines = done.stdout.splitlines()
    assert lines[-1] == "hook ran"
    assert "not reached" not in lines
    expected = f"openheim {openheim.__version__}"
    assert (lines[0] == expected) if code == 0 else ("invalid choice" in done.stderr)
