"""Start-up and one-shot wall time, measured with hyperfine against a baseline in the same run.

(a) ``openheim --version`` beside ``python -c pass`` (target: at most 60 ms);
(b) ``openheim run "hi"`` against a FakeLLMServer on loopback that answers instantly
    (target: at most 150 ms).

Prints median and p90 of each command and its ratio to the ``python -c pass`` baseline.

    .venv/bin/python bench/startup.py [--runs 30]     # needs hyperfine on PATH
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
from pathlib import Path

from openheim.testing import FakeLLMServer

TARGETS_MS = {"openheim --version": 60.0, "openheim run": 150.0}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def hyperfine(
    commands: dict[str, str], runs: int, env: dict[str, str], out: Path
) -> dict[str, list[float]]:
    args = ["hyperfine", "--style", "none", "--warmup", "3", "--runs", str(runs), "-N"]
    args += ["--export-json", str(out)]
    for name, command in commands.items():
        args += ["--command-name", name, command]
    subprocess.run(args, check=True, env=env, stdout=subprocess.DEVNULL)
    results = json.loads(out.read_text())["results"]
    return {r["command"]: [t * 1000 for t in r["times"]] for r in results}


def main(runs: int) -> int:
    if shutil.which("hyperfine") is None:
        print(
            "hyperfine is not installed (Debian/Ubuntu: apt-get install hyperfine)", file=sys.stderr
        )
        return 2
    bindir = Path(sys.executable).parent
    python, openheim = shlex.quote(sys.executable), shlex.quote(str(bindir / "openheim"))
    with tempfile.TemporaryDirectory() as tmp, FakeLLMServer(default="ok") as server:
        home = Path(tmp) / "home"
        home.mkdir()
        (home / "config.toml").write_text(
            'default_provider = "bench"\n[providers.bench]\n'
            f'api_base = "{server.base_url}"\ndefault_model = "bench-model"\n'
        )
        env = {**os.environ, "OPENHEIM_HOME": str(home)}
        commands = {
            "python -c pass": f"{python} -c pass",
            "openheim --version": f"{openheim} --version",
            "openheim run": f"{openheim} run hi",
        }
        times = hyperfine(commands, runs, env, Path(tmp) / "out.json")
    base = statistics.median(times["python -c pass"])
    print(f"{'command':<22}{'median ms':>11}{'p90 ms':>9}{'vs python':>11}{'target ms':>11}")
    for name, values in times.items():
        med = statistics.median(values)
        target = TARGETS_MS.get(name)
        shown = f"{target:>11.0f}" if target else f"{'':>11}"
        print(f"{name:<22}{med:>11.1f}{percentile(values, 0.9):>9.1f}{med / base:>10.2f}x{shown}")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=30)
    sys.exit(main(parser.parse_args().runs))
