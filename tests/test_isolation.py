"""The test suite's own isolation: no test reads or writes the real ``~/.openheim``."""

from __future__ import annotations

import os
from pathlib import Path

from openheim.api import Runtime
from openheim.config.load import load_settings


def test_a_runtime_built_without_a_home_gets_the_tests_own(work: Path) -> None:
    real = Path.home() / ".openheim"
    home = Path(os.environ["OPENHEIM_HOME"])
    assert home != real and home.is_dir() and list(home.iterdir()) == []
    assert load_settings(cwd=work).data_dir == home
    runtime = Runtime(provider="openai", model="m", api_base="http://127.0.0.1:9/v1", work_dir=work)
    assert runtime.settings.data_dir == home
    assert "OPENHEIM_PROVIDER" not in os.environ and "OPENHEIM_MODEL" not in os.environ
