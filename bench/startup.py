"""Start-up and one-shot wall time, against a baseline measured in the same run.

(a) ``openheim --version`` beside ``python -c pass`` (target: at most 40 ms);
(b) ``openheim run "hi"`` against a FakeLLMServer on loopback that answers instantly
    (target: at most 150 ms).

Prints median and p90 of each command and its ratio to the ``python -c pass`` baseline. With
hyperfine on PATH it does the timing; without it, each command runs as a subprocess timed with
``time.perf_counter``, the commands taking turns (A B C A B C ...) after three warm-up rounds
(the times then include starting a process from Python, for the baseline too), and the median
CPU time (user + system) of each command's process is printed too: on a shared machine it
changes much less with the load than wall time does. The warm-up rounds write the bytecode
caches an installed package has (``PYTHONDONTWRITEBYTECODE`` is left out of the commands'
environment); the load average is printed, since on a busy machine every figure grows.

With ``--instructions`` (and valgrind installed) each command also runs once under callgrind,
after the timed runs wrote the bytecode caches, and its instruction count is printed beside
``python -c pass``'s: a figure that a busy machine does not change, for comparing two versions.

    .venv/bin/python bench/startup.py [--runs 30] [--no-hyperfine] [--instructions]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from subprocess import DEVNULL

from openheim.testing import FakeLLMServer

TARGETS_MS = {"openheim --version": 40.0, "openheim run": 150.0}
WARMUP = 3


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def hyperfine(
    commands: dict[str, list[str]], runs: int, env: dict[str, str], out: Path
) -> dict[str, list[float]]:
    args = ["hyperfine", "--style", "none", "--warmup", str(WARMUP), "--runs", str(runs), "-N"]
    args += ["--export-json", str(out)]
    for name, argv in commands.items():
        args += ["--command-name", name, shlex.join(argv)]
    subprocess.run(args, check=True, env=env, stdout=subprocess.DEVNULL)
    results = json.loads(out.read_text())["results"]
    return {r["command"]: [t * 1000 for t in r["times"]] for r in results}


def perf_counter_runs(
    commands: dict[str, list[str]], runs: int, env: dict[str, str]
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Milliseconds per run of each command, wall time and the CPU time (user + system) the
    command's process used, the commands taking turns, warm-up rounds left out."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    for round_number in range(WARMUP + runs):
        for name, argv in commands.items():
            start = time.perf_counter()
            process = subprocess.Popen(argv, env=env, stdout=DEVNULL, stderr=DEVNULL)
            _pid, status, usage = os.wait4(process.pid, 0)
            elapsed = (time.perf_counter() - start) * 1000
            process.returncode = os.waitstatus_to_exitcode(status)
            if process.returncode:
                raise subprocess.CalledProcessError(process.returncode, argv)
            if round_number >= WARMUP:
                times[name].append(elapsed)
                cpu[name].append((usage.ru_utime + usage.ru_stime) * 1000)
    return times, cpu


def instructions(argv: list[str], env: dict[str, str]) -> float:
    """Millions of instructions ``argv`` executes, counted by valgrind's callgrind."""
    args = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv]
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600, check=True)
    line = next(x for x in done.stderr.splitlines() if "Collected" in x)
    return int(line.split()[-1]) / 1e6


def print_instructions(commands: dict[str, list[str]], env: dict[str, str]) -> None:
    counted = {
        name: instructions(argv, {**env, "PYTHONHASHSEED": "0"}) for name, argv in commands.items()
    }
    base = counted["python -c pass"]
    print(f"{'command':<22}{'instructions (M)':>18}{'vs python':>11}")
    for name, value in counted.items():
        print(f"{name:<22}{value:>18.1f}{value / base:>10.2f}x")


def main(runs: int, use_hyperfine: bool, count: bool = False) -> int:
    use_hyperfine = use_hyperfine and shutil.which("hyperfine") is not None
    openheim = str(Path(sys.executable).parent / "openheim")
    with tempfile.TemporaryDirectory() as tmp, FakeLLMServer(default="ok") as server:
        home = Path(tmp) / "home"
        home.mkdir()
        (home / "config.toml").write_text(
            'default_provider = "bench"\n[providers.bench]\n'
            f'api_base = "{server.base_url}"\ndefault_model = "bench-model"\n'
        )
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["OPENHEIM_HOME"] = str(home)
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "openheim --version": [openheim, "--version"],
            "openheim run": [openheim, "run", "hi"],
        }
        cpu: dict[str, list[float]] = {}
        if use_hyperfine:
            times = hyperfine(commands, runs, env, Path(tmp) / "out.json")
        else:
            times, cpu = perf_counter_runs(commands, runs, env)
        if count and shutil.which("valgrind"):
            print_instructions(commands, env)
    base = statistics.median(times["python -c pass"])
    method = "hyperfine" if use_hyperfine else "time.perf_counter around subprocess.run"
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"{runs} runs each, timed with {method}; load average {load}")
    print(
        f"{'command':<22}{'median ms':>11}{'p90 ms':>9}{'vs python':>11}{'target ms':>11}", end=""
    )
    print(f"{'cpu ms':>9}" if cpu else "")
    for name, values in times.items():
        med = statistics.median(values)
        target = TARGETS_MS.get(name)
        shown = f"{target:>11.0f}" if target else f"{'':>11}"
        print(
            f"{name:<22}{med:>11.1f}{percentile(values, 0.9):>9.1f}{med / base:>10.2f}x{shown}",
            end="",
        )
        print(f"{statistics.median(cpu[name]):>9.1f}" if cpu else "")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument(
        "--no-hyperfine",
        action="store_true",
        help="time with perf_counter even if hyperfine is there",
    )
    parser.add_argument(
        "--instructions", action="store_true", help="also count instructions with valgrind"
    )
    arguments = parser.parse_args()
    sys.exit(main(arguments.runs, not arguments.no_hyperfine, arguments.instructions))
