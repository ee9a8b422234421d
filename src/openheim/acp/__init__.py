"""The Agent Client Protocol surface: ``openheim acp`` and ``serve_acp`` over any byte streams."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from openheim.acp.server import serve_acp as serve_acp

__all__ = ["serve_acp"]


def __getattr__(name: str) -> Any:
    if name == "serve_acp":
        from openheim.acp.server import serve_acp

        return serve_acp
    raise AttributeError(f"module 'openheim.acp' has no attribute {name!r}")
