from __future__ import annotations

from pathlib import Path

import pytest

from openheim.tools.base import ToolContext


@pytest.fixture
def work(ctx: ToolContext) -> Path:
    """The (real) work dir of the ``ctx`` fixture, which is also its cwd."""
    return ctx.cwd
