from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from openheim.store.sqlite import SQLiteStore, open_store


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    """A fresh store in a temporary data dir, closed after the test."""
    with open_store(tmp_path) as opened:
        yield opened
