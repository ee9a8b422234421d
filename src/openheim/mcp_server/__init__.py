"""``openheim mcp serve``: openheim as an MCP server, so other agents and editors can call it.

The tools drive the library ``Runtime`` (``prompt``); the server holds no agent logic. The
modules:

- ``prompt``: one prompt through the runtime as an MCP tool result, with its usage and cost;
- ``elicit``: approvals as MCP elicitations where the client can be asked, else refused;
- ``schemas``: the JSON-schema tools ``validate_json``, ``json_example`` and ``submit``;
- ``cli_tools``: the coding-agent CLIs as tools ``claude_code``, ``codex`` and ``opencode``;
- ``server``: the MCP server and its tools, served on stdio;
- ``http``: the same server on streamable HTTP, behind a bearer token.

Importing this package imports nothing of the MCP SDK; ``server`` and ``http`` do.
"""
