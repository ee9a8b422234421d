"""Stand-in CLIs for the runner's tests: small Python scripts that read the prompt on stdin and
print a stream in a CLI's JSON-lines format, or misbehave (hang, flood, fail, fork)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def claude_lines(answer: str) -> list[str]:
    """The lines Claude Code prints for an answer without tools (``stream-json``)."""

    def delta(text: str) -> dict[str, Any]:
        inner = {"type": "text_delta", "text": text}
        event = {"type": "content_block_delta", "index": 0, "delta": inner}
        return {"type": "stream_event", "event": event}

    records: list[dict[str, Any]] = [
        {"type": "system", "subtype": "init", "session_id": "s-standin", "tools": []},
        {"type": "stream_event", "event": {"type": "message_start", "message": {}}},
        *(delta(word) for word in answer.split(" ")),
        {"type": "assistant", "message": {"content": [{"type": "text", "text": answer}]}},
        {
            "type": "result",
            "subtype": "success",
            "is_error": False,
            "result": answer,
            "session_id": "s-standin",
            "usage": {"input_tokens": 3, "output_tokens": 2},
        },
    ]
    return [json.dumps(r) for r in records]


def write_script(folder: Path, body: str, name: str = "claude") -> Path:
    """An executable Python script named ``name`` in ``folder`` running ``body``."""
    path = folder / name
    path.write_text(
        f"#!{sys.executable}\nimport json, os, sys, time\nfrom typing import Any\n{body}\n"
    )
    path.chmod(0o755)
    return path


ECHO = """
prompt = sys.stdin.read()
print("banner: not JSON", flush=True)
answer = "echo " + str(len(prompt)) + " " + prompt[:20].replace(chr(10), " ")
for line in LINES(answer):
    print(line, flush=True)
"""
"""Claude's format, answering with the prompt's length and start (``LINES`` is filled in)."""


def echo_script(folder: Path, name: str = "claude") -> Path:
    source = Path(__file__).read_text()
    start = source.index("def claude_lines")
    end = source.index("def write_script")
    return write_script(folder, source[start:end] + ECHO.replace("LINES", "claude_lines"), name)


FORKS = """
child = os.fork()
if child == 0:
    time.sleep(1000)
    os._exit(0)
open("pids", "w").write(f"{os.getpid()} {child}")
print(json.dumps({"type": "stream_event", "session_id": "s", "event": {"type":
    "content_block_delta", "delta": {"type": "text_delta", "text": "started"}}}), flush=True)
time.sleep(1000)
"""
"""A CLI that forks a child, writes both pids to ``pids`` in its folder, says "started" in
Claude's format and hangs: for checking that nothing of it outlives its run."""
