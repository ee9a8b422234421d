"""Fixtures of the web page's browser tests: Debian's chromium through Playwright, and the
folder the tests write their screenshots to."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, async_playwright

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture
def artefacts(tmp_path: Path) -> Path:
    """``$OPENHEIM_ARTEFACTS`` when set, else a folder of the test's own."""
    folder = Path(os.environ.get("OPENHEIM_ARTEFACTS") or tmp_path / "artefacts")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            yield launched
        finally:
            await launched.close()
