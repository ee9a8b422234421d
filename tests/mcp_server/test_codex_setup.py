"""The real ``codex exec`` (pinned in ``npm_clis``) with the entry the real ``openheim setup``
writes into its ``config.toml``, running openheim's MCP tools for a scripted model.

Codex does not offer MCP tools to the model up front: its first request offers a
``tool_search`` tool, the model searches, Codex answers with a ``tool_search_output`` listing
the matching tools in the namespace ``mcp__openheim``, and the model then calls one as a
``function_call`` with that namespace. The fake model (``FakeLLMServer``, Responses API) plays
those steps; the tool's result (or Codex's refusal) comes back in Codex's next request.

``codex exec`` runs with approval policy ``never``: a tool it would ask about fails. The
read-only JSON-schema tools (``readOnlyHint``) run without asking; every other openheim tool
runs only with the entry's ``default_tools_approval_mode = "approve"``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from openheim.testing import FakeLLMServer, FakeReply, RecordedRequest
from tests.cliagents import npm_clis

pytestmark = pytest.mark.timeout(npm_clis.INSTALL_TIMEOUT_S)

CODEX_MODEL = "gpt-5.5"
"""A model Codex knows: for an unknown one it uses fallback metadata without tool search, and
then offers the model no MCP tool at all."""
NAMESPACE = "mcp__openheim"
APPROVE_LINE = 'default_tools_approval_mode = "approve"\n'
ENTRY_HEADER = "[mcp_servers.openheim]\n"
REQUIRED_LINE = "required = true\n"
"""Added to the entry so that Codex waits for the server to start before the model's first
request: without it a search made before the server is up finds none of its tools."""
REFUSED = "MCP tool call requires approval, but approval policy is never"
AGENT_ANSWER = "agent answer 42"
SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}}
VALIDATE = {"data": {"n": "x"}, "schema": SCHEMA}
SEARCHES = {"validate_json": "validate json schema", "openheim": "openheim agent run task"}
ARGUMENTS: dict[str, dict[str, Any]] = {"validate_json": VALIDATE, "openheim": {"prompt": "x"}}
RESULTS = {"validate_json": "'x' is not of type 'integer'", "openheim": AGENT_ANSWER}


def _items_reply(items: Sequence[Mapping[str, Any]]) -> FakeReply:
    """A streamed Responses answer made of ``items`` (output items the fake cannot render
    itself: a ``tool_search_call``, a ``function_call`` with a namespace)."""
    response = {"id": "resp_codex", "object": "response", "model": CODEX_MODEL}
    events: list[Mapping[str, Any]] = [
        {"type": "response.created", "response": {**response, "status": "in_progress"}}
    ]
    for index, item in enumerate(items):
        opened = {**item, "status": "in_progress"}
        events.append({"type": "response.output_item.added", "output_index": index, "item": opened})
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    usage = {"input_tokens": 5, "output_tokens": 2, "total_tokens": 7}
    done = {**response, "status": "completed", "output": list(items), "usage": usage}
    events.append({"type": "response.completed", "response": done})
    return FakeReply(raw_events=events)


def _input_items(request: RecordedRequest, kind: str) -> list[dict[str, Any]]:
    """The items of ``kind`` in a Responses request's ``input``."""
    body = request.body if isinstance(request.body, dict) else {}
    items = body.get("input")
    return [i for i in items if i.get("type") == kind] if isinstance(items, list) else []


def _text(output: str | list[dict[str, Any]]) -> str:
    """The text of a ``function_call_output``: a string, or a list of ``input_text`` parts."""
    return output if isinstance(output, str) else "\n".join(part["text"] for part in output)


def _model(tool: str) -> Any:
    """The scripted model: search for ``tool``, call it, then finish; and openheim's own agent
    (chat completions, behind the ``openheim`` tool) answering ``AGENT_ANSWER``."""

    def reply(request: RecordedRequest) -> FakeReply:
        if request.path.endswith("/chat/completions"):
            return FakeReply(text=AGENT_ANSWER)
        if _input_items(request, "function_call_output"):
            return FakeReply(text="Done.")
        if _input_items(request, "tool_search_output"):
            call = {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_1",
                "namespace": NAMESPACE,
                "name": tool,
                "arguments": json.dumps(ARGUMENTS[tool]),
                "status": "completed",
            }
            return _items_reply([call])
        search = {
            "type": "tool_search_call",
            "id": "tsc_1",
            "call_id": "search_1",
            "execution": "client",
            "arguments": {"query": SEARCHES[tool]},
            "status": "completed",
        }
        return _items_reply([search])

    return reply


def _codex_home(home: Path, server: FakeLLMServer, *, approve: bool) -> Path:
    """``$HOME/.codex`` with ``server`` as model provider and the entry the real ``openheim
    setup --only codex`` adds, made ``required`` (without its approval line when not
    ``approve``)."""
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True)
    config = codex_home / "config.toml"
    config.write_text(
        f'model = "{CODEX_MODEL}"\nmodel_provider = "fake"\n\n[model_providers.fake]\n'
        f'name = "fake"\nbase_url = "{server.base_url}"\nenv_key = "OPENAI_API_KEY"\n'
        'wire_api = "responses"\n'
    )
    openheim_home = home / "openheim"
    openheim_home.mkdir()
    (openheim_home / "config.toml").write_text(
        f'default_provider = "fake"\n[providers.fake]\napi_base = "{server.base_url}"\n'
        'default_model = "fake-model"\n'
    )
    env = {**_clean_env(), "HOME": str(home), "OPENHEIM_HOME": str(openheim_home)}
    setup = [sys.executable, "-m", "openheim", "setup", "--only", "codex"]
    done = subprocess.run(setup, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    text = config.read_text()
    assert ENTRY_HEADER in text
    text = text.replace(ENTRY_HEADER, ENTRY_HEADER + REQUIRED_LINE)
    if not approve:
        assert APPROVE_LINE in text
        text = text.replace(APPROVE_LINE, "")
    config.write_text(text)
    return codex_home


def _clean_env() -> dict[str, str]:
    """This environment without openheim's settings and API keys."""
    return {
        k: v for k, v in os.environ.items() if not k.startswith("OPENHEIM_") and "_API_KEY" not in k
    }


def _codex_exec(codex_home: Path, work: Path) -> list[dict[str, Any]]:
    """Run ``codex exec --json`` on a prompt; the events it printed."""
    codex = npm_clis.ensure_clis() / "codex"
    env = {
        **_clean_env(),
        "HOME": str(codex_home.parent),
        "CODEX_HOME": str(codex_home),
        "OPENAI_API_KEY": "sk-test-fake",
    }
    argv = [str(codex), "exec", "--json", "--skip-git-repo-check", "Use the openheim tools."]
    done = subprocess.run(
        argv,
        env=env,
        cwd=work,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


@pytest.mark.parametrize(
    ("tool", "approve", "outcome"),
    [
        ("validate_json", True, RESULTS["validate_json"]),
        ("openheim", True, RESULTS["openheim"]),
        ("validate_json", False, RESULTS["validate_json"]),  # read-only: Codex does not ask
        ("openheim", False, REFUSED),  # the entry's approval line is what lets it run
    ],
)
def test_codex_exec_runs_openheim_tools_with_the_setup_entry(
    tmp_path: Path, tool: str, approve: bool, outcome: str
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    with FakeLLMServer(default=_model(tool)) as server:
        codex_home = _codex_home(tmp_path / "home", server, approve=approve)
        events = _codex_exec(codex_home, work)
    responses = [r for r in server.requests if r.path.endswith("/responses")]
    offered = [t.get("type") for t in responses[0].body["tools"]]
    assert "tool_search" in offered
    found = _input_items(responses[1], "tool_search_output")[0]["tools"]
    namespace = next(t for t in found if t.get("name") == NAMESPACE)
    assert tool in {t["name"] for t in namespace["tools"]}
    outputs = _input_items(responses[2], "function_call_output")
    assert [o["call_id"] for o in outputs] == ["call_1"]
    assert outcome in _text(outputs[0]["output"])
    calls = [e["item"] for e in events if e["type"] == "item.completed"]
    call = next(i for i in calls if i["type"] == "mcp_tool_call")
    assert (call["server"], call["tool"]) == ("openheim", tool)
    assert call["status"] == ("failed" if outcome == REFUSED else "completed")
