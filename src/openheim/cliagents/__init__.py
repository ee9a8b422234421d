"""Coding-agent CLIs (Claude Code, Codex, OpenCode) run as contained, non-interactive children.

``spec`` finds each CLI's program and builds its environment, ``argv`` its command line with
the containment flags, ``parse`` reads its JSON-lines stream and ``process`` runs it with a
timeout, an output cap and a guaranteed end. The MCP tools of ``openheim mcp serve`` and the
provider kinds ``claude_cli``, ``codex_cli`` and ``opencode_cli`` are both built on ``run``.
"""
