"""The cache of compiled dataclass methods: hits, misses, bad files, bounds, and the hook."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from openheim.process import codecache
from openheim.process.codecache import CodeCache


@pytest.fixture(autouse=True)
def writes_bytecode(monkeypatch: pytest.MonkeyPatch) -> None:
    """As Python does unless PYTHONDONTWRITEBYTECODE is set (it may be, where tests run)."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)


SOURCES = [f"def __create_fn__():\n def f(self):\n  return {n}\n return f" for n in range(5)]


def saved(path: Path, sources: list[str]) -> CodeCache:
    cache = CodeCache(str(path))
    for source in sources:
        cache.compiled(source)
    cache.save()
    return cache


def test_a_saved_entry_is_used_by_the_next_process_without_compiling(tmp_path: Path) -> None:
    path = tmp_path / "cache.bin"
    saved(path, SOURCES)
    again = CodeCache(str(path))
    codes = [again.compiled(source) for source in SOURCES]
    assert again._added == 0
    assert codes == [compile(source, "<string>", "exec") for source in SOURCES]


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[:-7],  # cut short
        lambda data: data[:20] + bytes([data[20] ^ 0xFF]) + data[21:],  # a flipped byte
        lambda data: b"OHDC" + (0).to_bytes(4, "big") + data[8:],  # another interpreter
        lambda data: b"not a cache at all",
        lambda data: b"",
    ],
    ids=["cut", "flipped", "other-python", "garbage", "empty"],
)
def test_a_bad_file_is_ignored_and_replaced(tmp_path: Path, damage: object) -> None:
    path = tmp_path / "cache.bin"
    saved(path, SOURCES)
    path.write_bytes(damage(path.read_bytes()))  # type: ignore[operator]
    cache = saved(path, SOURCES[:2])
    assert cache._codes is not None and len(cache._codes) == 2
    again = CodeCache(str(path))
    again.compiled(SOURCES[0])
    assert again._added == 0


def test_nothing_is_written_where_bytecode_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    saved(tmp_path / "cache.bin", SOURCES)
    assert not (tmp_path / "cache.bin").exists()


def test_the_cache_keeps_the_newest_entries_up_to_its_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(codecache, "MAX_ENTRIES", 3)
    path = tmp_path / "cache.bin"
    saved(path, SOURCES)
    again = CodeCache(str(path))
    again.compiled(SOURCES[4])
    assert again._codes is not None
    assert list(again._codes) == SOURCES[2:]


def test_an_unwritable_folder_is_no_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    saved(blocker / "cache.bin", SOURCES)  # its folder is a file: nothing written, no error
    assert list(tmp_path.iterdir()) == [blocker]


HOOKED = """
import dataclasses, inspect, sys
from openheim.process import codecache
assert dataclasses.exec is codecache.cached_exec
assert "exec(" in inspect.getsource(dataclasses)  # the source still found through our loader

@dataclasses.dataclass(frozen=True, slots=True)
class Point:
    x: int
    y: int = 0

p = Point(1)
assert (repr(p), p == Point(1, 0), hash(p) == hash(Point(1))) == ("Point(x=1, y=0)", True, True)
try:
    p.x = 2
except dataclasses.FrozenInstanceError:
    print("frozen")
"""


INSTALL = "from openheim.process import codecache\ncodecache.install()"


@pytest.mark.parametrize("first", [INSTALL, f"import dataclasses\n{INSTALL}"])
def test_dataclasses_compile_through_the_cache_and_behave_as_ever(
    tmp_path: Path, first: str
) -> None:
    script = f"{first}\n{textwrap.dedent(HOOKED)}"
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "frozen"


def test_only_openheims_own_classes_go_through_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = CodeCache(str(tmp_path / "cache.bin"))
    monkeypatch.setattr(codecache, "CACHE", cache)
    made: dict[str, object] = {}
    codecache.cached_exec(SOURCES[0], {"__name__": "openheim.events"}, made)
    codecache.cached_exec(SOURCES[1], {"__name__": "someone.else"}, made)
    codecache.cached_exec(SOURCES[2], {}, made)
    assert cache._codes is not None and list(cache._codes) == [SOURCES[0]]
    assert callable(made["__create_fn__"])


def test_a_damaged_entry_is_compiled_again(tmp_path: Path) -> None:
    path = tmp_path / "cache.bin"
    cache = saved(path, SOURCES[:1])
    assert cache._codes is not None
    cache._codes[SOURCES[0]] = b"not marshal data"
    assert cache.compiled(SOURCES[0]) == compile(SOURCES[0], "<string>", "exec")
    assert cache._added == 1
