"""Compiled code of the methods ``dataclasses`` writes, kept across runs as ``.pyc`` files keep
a module's.

On Python 3.11 and 3.12, making a dataclass writes the source text of each method it adds
(``__init__``, ``__repr__``, ``__eq__``, ``__hash__``, a frozen class's ``__setattr__`` and
``__delattr__``) and compiles it: for the hundred dataclasses of an ``openheim run`` that parsing
and compiling was a third of the whole command's work, the same every time. ``install()`` routes
the ``exec`` calls of the ``dataclasses`` module through this cache once that module is imported
(a ``sys.meta_path`` finder that answers once, so importing openheim does not import dataclasses).
The source text is the whole key, so a cached code object is exactly what compiling it gives.

Only openheim's own dataclasses go through it (a library's or a caller's are compiled as
ever), so it holds what openheim's modules define. It is one file in openheim's ``__pycache__``
folder, beside the bytecode of its modules, with the same trust: read on the first dataclass
made, each entry unmarshalled only when its class is made; written (atomically, at exit, only
when something new was compiled) where Python writes bytecode; bounded to ``MAX_ENTRIES`` (the
oldest dropped first); and a file of another interpreter or one that fails its checksum is
ignored and replaced.
"""

from __future__ import annotations

import atexit
import importlib.machinery
import marshal
import os
import sys
import types
import zlib

TYPE_CHECKING = False  # not typing's: importing typing costs `openheim --version` 3 ms
if TYPE_CHECKING:
    from typing import Any

MAX_ENTRIES = 2048
_HEADER = b"OHDC" + sys.hexversion.to_bytes(4, "big")
_FOLDER = os.path.join(os.path.dirname(__file__), "__pycache__")


class CodeCache:
    """Source text to its compiled code (marshalled), loaded from and saved to ``path``."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._codes: dict[str, bytes] | None = None
        self._added = 0

    def compiled(self, source: str) -> types.CodeType:
        """The code of ``source`` (compiled as ``exec`` does it), from the cache if it is there."""
        if self._codes is None:
            self._codes = self._load()
        code = _code(self._codes.get(source))
        if code is not None:
            return code
        code = compile(source, "<string>", "exec")
        self._codes[source] = marshal.dumps(code)
        self._added += 1
        if self._added == 1:
            atexit.register(self.save)
        return code

    def _load(self) -> dict[str, bytes]:
        try:
            with open(self.path, "rb") as file:
                data = file.read()
        except OSError:
            return {}
        body = data[len(_HEADER) + 4 :]
        checksum = zlib.crc32(body).to_bytes(4, "big")
        if data[: len(_HEADER)] != _HEADER or data[len(_HEADER) : len(_HEADER) + 4] != checksum:
            return {}
        try:
            loaded = marshal.loads(body)
        except (EOFError, ValueError, TypeError):
            return {}
        if not isinstance(loaded, dict):
            return {}
        return {k: v for k, v in loaded.items() if isinstance(k, str) and isinstance(v, bytes)}

    def save(self) -> None:
        """Write the cache if anything was added, unless bytecode is not to be written."""
        if not self._added or self._codes is None or sys.dont_write_bytecode:
            return
        kept = dict(list(self._codes.items())[-MAX_ENTRIES:])
        body = marshal.dumps(kept)
        data = _HEADER + zlib.crc32(body).to_bytes(4, "big") + body
        temporary = f"{self.path}.{os.getpid()}.tmp"
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            with open(temporary, "wb") as file:
                file.write(data)
            os.replace(temporary, self.path)
        except OSError:  # a read-only install: no cache, as with bytecode
            if os.path.exists(temporary):
                os.unlink(temporary)
        self._added = 0


def _code(data: bytes | None) -> types.CodeType | None:
    """The code object marshalled in ``data``; None for none, or for anything else."""
    if data is None:
        return None
    try:
        code = marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return None
    return code if isinstance(code, types.CodeType) else None


CACHE = CodeCache(os.path.join(_FOLDER, f"dataclass-methods.{sys.implementation.cache_tag}.bin"))


def cached_exec(source: Any, globals: dict[str, Any], locals: Any = None, /) -> None:
    """``exec`` as ``dataclasses`` calls it (``globals`` are those of the class's module), with
    the source text of openheim's own classes compiled through ``CACHE``."""
    if isinstance(source, str) and str(globals.get("__name__", "")).startswith("openheim."):
        source = CACHE.compiled(source)
    exec(source, globals, locals)


def install() -> None:
    """Have ``dataclasses`` compile through the cache: now if it is imported, else when it is."""
    module = sys.modules.get("dataclasses")
    if module is not None:
        module.exec = cached_exec  # type: ignore[attr-defined]
    elif _Finder not in sys.meta_path:
        sys.meta_path.insert(0, _Finder)


class _Finder:
    """A ``sys.meta_path`` finder for ``dataclasses``: it answers once, with the standard
    library's own spec whose loader sets the module's ``exec`` after running it."""

    @staticmethod
    def find_spec(name: str, path: object = None, target: object = None) -> Any:
        if name != "dataclasses":
            return None
        sys.meta_path.remove(_Finder)
        spec = importlib.machinery.PathFinder.find_spec(name)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader)  # type: ignore[assignment]
        return spec


class _Loader:
    """The standard loader, then ``exec`` set; everything else is the standard loader's."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec: object) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        self._loader.exec_module(module)
        module.exec = cached_exec  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)
