"""``openheim models``: list configured and local models; add a GGUF file by path or URL."""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from openheim.config.load import load_settings
from openheim.config.providers import infer_kind, provider_entries
from openheim.errors import ConfigError
from openheim.providers.local_models import local_models, quantisation_of
from openheim.term import exit_codes

CHUNK = 1024 * 1024


def models_command(args: argparse.Namespace) -> int:
    if args.models_command == "add":
        return _add(args.source, args.sha256)
    return _list()


def _list() -> int:
    settings = load_settings()
    out = sys.stdout
    out.write("configured providers:\n")
    for name, entry in provider_entries(settings).items():
        kind = infer_kind(name, entry)
        models = ", ".join(entry.models) if entry.models else entry.default_model or "-"
        marker = " (default)" if name == settings.provider else ""
        out.write(f"  {name}{marker} [{kind}]: {models}\n")
    found = local_models(settings.data_dir)
    out.write("local GGUF models:\n" if found else "local GGUF models: none\n")
    for model in found:
        size = f"{model.size / 1e6:.1f} MB"
        out.write(f"  {model.name}  {size}  {model.quantisation}  {model.source}  {model.path}\n")
    return exit_codes.OK


def _add(source: str, expected: str | None) -> int:
    settings = load_settings()
    folder = settings.data_dir / "models"
    folder.mkdir(parents=True, exist_ok=True)
    is_url = source.startswith(("http://", "https://"))
    name = Path(source.split("?")[0]).name if is_url else Path(source).name
    if not name.endswith(".gguf"):
        raise ConfigError(f"{name!r} is not a .gguf file", hint="models add takes a GGUF model")
    target = folder / name
    if target.exists():
        raise ConfigError(f"{target} already exists", hint="remove it first to replace it")
    with tempfile.NamedTemporaryFile(dir=folder, prefix=f".{name}.", delete=False) as tmp:
        try:
            chunks = _download(source) if is_url else _read_file(Path(source).expanduser())
            digest = _copy(chunks, tmp)
            _verify(digest, expected)
            tmp.close()
            Path(tmp.name).replace(target)
        except BaseException:
            Path(tmp.name).unlink(missing_ok=True)
            raise
    sys.stdout.write(f"added {target} ({quantisation_of(target)}, sha256 {digest})\n")
    return exit_codes.OK


def _copy(chunks: Iterator[tuple[bytes, int | None]], out: IO[bytes]) -> str:
    digest = hashlib.sha256()
    done = 0
    for chunk, total in chunks:
        out.write(chunk)
        digest.update(chunk)
        done += len(chunk)
        _progress(done, total)
    sys.stderr.write("\n")
    return digest.hexdigest()


def _progress(done: int, total: int | None) -> None:
    if total:
        sys.stderr.write(f"\r{done / 1e6:8.1f} / {total / 1e6:.1f} MB ({done * 100 // total}%)")
    else:
        sys.stderr.write(f"\r{done / 1e6:8.1f} MB")
    sys.stderr.flush()


def _verify(digest: str, expected: str | None) -> None:
    if expected and digest != expected.lower():
        raise ConfigError(
            f"checksum mismatch: got sha256 {digest}, expected {expected}",
            hint="the file is corrupt or not the one you meant; nothing was added",
        )


def _read_file(path: Path) -> Iterator[tuple[bytes, int | None]]:
    if not path.is_file():
        raise ConfigError(f"{path} is not a file", hint="pass the path of a .gguf file")
    total = path.stat().st_size
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK):
            yield chunk, total


def _download(url: str) -> Iterator[tuple[bytes, int | None]]:
    import httpx

    try:
        with httpx.stream("GET", url, follow_redirects=True, timeout=60) as response:
            if response.status_code >= 400:
                raise ConfigError(
                    f"downloading {url} failed: HTTP {response.status_code}",
                    hint="check the URL",
                )
            length = response.headers.get("content-length")
            total = int(length) if length and length.isdigit() else None
            for chunk in response.iter_bytes(CHUNK):
                yield chunk, total
    except httpx.HTTPError as err:
        raise ConfigError(f"downloading {url} failed: {err}", hint="check the URL") from None
