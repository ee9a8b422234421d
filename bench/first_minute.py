"""The first minute on the embedded model: the demo's prompt, cold and warm, against the full
prompt, with llama.cpp's own counters, and the prefix cache's hit rate.

(a) The demo: ``openheim run --tool-choice required "List this folder and name its files."`` on
    the shipped SmolLM2-135M, in a sample folder, as a subprocess with ``--json`` and debug
    logs. Three variants take turns each round: ``warm`` (the compact prompt, its prefix cache
    present), ``cold`` (the compact prompt, a fresh data dir so no cache) and the baseline
    ``full`` (``small = false``: the full prompt and tool list, no cache, as before small-model
    prompts existed). For each: wall time to the tool call, to the first answer token and to
    the end; the first request's prompt tokens; whether the answer came through a tool call and
    names the sample files. Targets: warm <= 15 s, cold <= 30 s on 2 cores.
(b) Where the time goes: for each model call of the last round, llama.cpp's counters (prompt
    tokens evaluated and their time, generated tokens and their time) and the rest of the
    call (loading the model or the cached state, sampling, the grammar, Python).
(c) The prefix cache: ten runs with the same settings, and ten with the context size changed
    every run; the hit rate of each (expected: 9 of 10, and 0 of 10).
(d) The demo in this project's root, cold (a fresh data dir) and warm: wall time, exit code and
    the answer's first line.
(e) The repetition guard's effect: a listing told one name a line (as small models' answers
    were framed before), which SmolLM2-135M answers by repeating lines; tokens generated and
    seconds without the guard (to the 512-token limit) and with it.

    .venv/bin/python bench/first_minute.py [--rounds 3] [--cache-runs 10]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from openheim.term.exit_codes import ERROR, USAGE

PROMPT = "List this folder and name its files."
SAMPLE = ("alpha.txt", "bravo.md", "charlie.py")
TARGETS_S = {"warm": 15.0, "cold": 30.0}
CALL_LINE = re.compile(
    r"llama\.cpp: prompt (\d+) tokens \(prefix (\d+), cache (\w+)\), evaluated (\d+) in "
    r"([\d.]+) ms; generated (\d+) tokens in ([\d.]+) ms; call ([\d.]+) ms"
)


@dataclass
class Run:
    """One demo run: seconds to the tool call, first answer token and end; what it did."""

    to_tool: float | None = None
    to_text: float | None = None
    total: float = 0.0
    prompt_tokens: int = 0
    named: int = 0
    code: int = 0
    answer: str = ""
    calls: list[tuple[int, int, str, int, float, int, float, float]] = field(default_factory=list)


def config(home: Path, extra: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(f'default_provider = "local"\n[providers.local]\n{extra}')


def demo(home: Path, work: Path) -> Run:
    """One ``openheim run`` of the demo's prompt, timed from its events as they arrive."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENHEIM_")}
    env["OPENHEIM_HOME"] = str(home)
    argv = [sys.executable, "-m", "openheim", "--log-level", "debug", "run", "--json"]
    argv += ["--no-session", "--tool-choice", "required", "--max-iterations", "4", PROMPT]
    run, text = Run(), []
    start = time.perf_counter()
    with subprocess.Popen(
        argv, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        for line in proc.stdout:
            event = json.loads(line)
            now = time.perf_counter() - start
            if event["type"] == "tool_call" and run.to_tool is None:
                run.to_tool = now
            elif event["type"] == "text_delta":
                run.to_text = run.to_text or now
                text.append(event["text"])
            elif event["type"] == "usage" and not run.prompt_tokens:
                usage = event["usage"]
                run.prompt_tokens = usage["input_tokens"] + usage.get("cache_read_tokens", 0)
        errors = proc.stderr.read()
    run.total = time.perf_counter() - start
    run.code = proc.returncode
    if proc.returncode in (ERROR, USAGE):  # other codes (a stop, a denial) are reported
        raise SystemExit(f"the demo failed ({proc.returncode}):\n{errors[-2000:]}")
    for match in CALL_LINE.finditer(errors):
        g = match.groups()
        run.calls.append(
            (
                int(g[0]),
                int(g[1]),
                g[2],
                int(g[3]),
                float(g[4]),
                int(g[5]),
                float(g[6]),
                float(g[7]),
            )
        )
    run.answer = "".join(text)
    run.named = sum(name in run.answer for name in SAMPLE)
    return run


def seconds(values: list[float | None]) -> str:
    found = [v for v in values if v is not None]
    return f"{statistics.median(found):6.1f}" if found else "     -"


def report(name: str, runs: list[Run]) -> None:
    target = TARGETS_S.get(name)
    total = statistics.median(r.total for r in runs)
    verdict = (
        f"target <= {target:.0f} s: {'met' if total <= target else 'MISSED'}" if target else ""
    )
    print(
        f"  {name:5s} tool call {seconds([r.to_tool for r in runs])} s  first answer token "
        f"{seconds([r.to_text for r in runs])} s  end {total:6.1f} s (max "
        f"{max(r.total for r in runs):.1f})  prompt {runs[0].prompt_tokens:5d} tokens  "
        f"tool first {sum(r.to_tool is not None for r in runs)}/{len(runs)}  files named "
        f"{min(r.named for r in runs)}-{max(r.named for r in runs)} of {len(SAMPLE)}  exit "
        f"{','.join(str(r.code) for r in runs)}  {verdict}"
    )


def breakdown(name: str, run: Run) -> None:
    for n, call in enumerate(run.calls, 1):
        prompt, prefix, cache, evaluated, p_ms, generated, g_ms, call_ms = call
        rest = call_ms - p_ms - g_ms
        print(
            f"  {name:5s} call {n}: prompt {prompt:5d} tokens (prefix {prefix}, cache {cache:6s}) "
            f"evaluated {evaluated:5d} in {p_ms:7.0f} ms | generated {generated:3d} in "
            f"{g_ms:6.0f} ms | rest {rest:6.0f} ms | call {call_ms:6.0f} ms"
        )


def hit_rate(root: Path, work: Path, runs: int, *, change: bool) -> tuple[int, int]:
    """Prefix cache hits among the first model calls of ``runs`` demo runs."""
    home = root / ("changed" if change else "same")
    hits = 0
    for n in range(runs):
        config(home, f"n_ctx = {2048 + 64 * n if change else 2048}\n")
        first = demo(home, work).calls[0]
        hits += first[2] == "disk"
    return hits, runs


def in_the_root(root: Path) -> None:
    """(d): the demo in this project's root, cold then warm."""
    project = Path(__file__).resolve().parent.parent
    config(root / "rooted", "")
    for name in ("cold", "warm"):
        run = demo(root / "rooted", project)
        first = run.answer.strip().splitlines()[0][:100] if run.answer.strip() else ""
        print(f"  {name:5s} {run.total:6.1f} s  exit {run.code}  answer: {first!r}")


async def guard_effect() -> None:
    """(e): the same looping reply with and without the repetition guard."""
    from openheim.messages import Message
    from openheim.providers.base import ModelRequest, Provider, ProviderSettings
    from openheim.providers.llama_cpp import LlamaCppProvider
    from openheim.providers.repetition import RepetitionGuard

    names = ".ci/ .git/ .gitignore .venv/ CHANGELOG.md README.md bench/ docs/ pyproject.toml"
    listing = "\n".join([*names.split(), "scripts/", "src/", "tests/"])
    ask = f"The folder . holds:\n{listing}\n\nUsing only this result, answer: {PROMPT}"
    settings = ProviderSettings("local", "llama_cpp", "", "SmolLM2-135M-Instruct", n_ctx=2048)
    settings = dataclasses.replace(settings, temperature=0.0, seed=7)
    request = ModelRequest("m", (Message.user(ask),), system="You are openheim.", max_tokens=512)
    for guarded in (False, True):
        inner = LlamaCppProvider(settings)
        provider: Provider = RepetitionGuard(inner) if guarded else inner
        start = time.perf_counter()
        finish = [i.finish async for i in provider.stream(request) if hasattr(i, "finish")]
        seconds = time.perf_counter() - start
        await provider.aclose()
        print(
            f"  {'guarded' if guarded else 'bare':7s} generated {inner.stats.generated_tokens:3d} "
            f"tokens in {seconds:5.1f} s  finish {finish[-1]}"
        )


def main(rounds: int, cache_runs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        work = root / "work"
        work.mkdir()
        for name in SAMPLE:
            (work / name).write_text("sample\n")
        config(root / "warm", "")
        demo(root / "warm", work)  # fills the warm home's cache
        results: dict[str, list[Run]] = {"warm": [], "cold": [], "full": []}
        for n in range(rounds):  # the variants take turns: warm cold full warm cold full ...
            results["warm"].append(demo(root / "warm", work))
            config(root / f"cold{n}", "")
            results["cold"].append(demo(root / f"cold{n}", work))
            config(root / f"full{n}", "small = false\nprefix_cache_mb = 0\n")
            results["full"].append(demo(root / f"full{n}", work))
        load = os.getloadavg()[0]
        print(f"(a) the demo's prompt, {rounds} rounds, medians (load average {load:.1f})")
        for name, runs in results.items():
            report(name, runs)
        warm, full = (statistics.median(r.total for r in results[k]) for k in ("warm", "full"))
        print(f"  warm / full: {warm / full:.2f}")
        print("(b) llama.cpp's counters, last round")
        for name, runs in results.items():
            breakdown(name, runs[-1])
        print(f"(c) prefix cache hits over {cache_runs} runs")
        same = hit_rate(root, work, cache_runs, change=False)
        changed = hit_rate(root, work, cache_runs, change=True)
        print(
            f"  same settings: {same[0]}/{same[1]}   context size changed each run: "
            f"{changed[0]}/{changed[1]}"
        )
        print("(d) the demo in this project's root")
        in_the_root(root)
        print("(e) the repetition guard on a looping reply")
        asyncio.run(guard_effect())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cache-runs", type=int, default=10)
    args = parser.parse_args()
    main(args.rounds, args.cache_runs)
