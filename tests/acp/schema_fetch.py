"""Fetching and caching the pinned official ACP JSON schema files with ``npm pack``.

The schema is ``schema/v1/schema.json`` (and ``schema.unstable.json``) from the npm package
``@agentclientprotocol/sdk`` at a pinned version. It is not committed: :func:`ensure_schema_files`
fetches it once with ``npm pack`` into a cache folder outside the repository, so the tests always
check against the published protocol rather than a copy that could drift or be edited to pass.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import uuid
from pathlib import Path
from typing import Final

__all__ = [
    "CACHE_DIR_ENV",
    "SCHEMA_FILES",
    "SDK_INTEGRITY",
    "SDK_PACKAGE",
    "SDK_VERSION",
    "STABLE_SCHEMA",
    "UNSTABLE_SCHEMA",
    "SchemaFetchError",
    "ensure_schema_files",
    "schema_dir",
]

SDK_PACKAGE: Final = "@agentclientprotocol/sdk"
SDK_VERSION: Final = "2.4.0"
# The npm integrity of that version's tarball. npm checks it against the registry's metadata too;
# pinning it here means a changed registry or mirror cannot change what the tests validate against.
# When SDK_VERSION changes, the fetch error prints the new tarball's value to paste here.
SDK_INTEGRITY: Final = (
    "sha512-7qJ8nnyj7WesC5ve185ioTpB2/svQoeGV4HA4nLEhgDUrcmBe54/08VcXc/"
    "oL4p14tDbxxECZzdYmUYQ+4l+Wg=="
)
STABLE_SCHEMA: Final = "schema.json"
UNSTABLE_SCHEMA: Final = "schema.unstable.json"
SCHEMA_FILES: Final = (STABLE_SCHEMA, UNSTABLE_SCHEMA)
CACHE_DIR_ENV: Final = "OPENHEIM_ACP_SCHEMA_DIR"

_MEMBER_PREFIX: Final = "package/schema/v1/"
# Under pytest-timeout's 60 s per test, so a slow fetch fails with the message below instead.
_NPM_TIMEOUT_S: Final = 50


class SchemaFetchError(RuntimeError):
    """The pinned ACP schema could not be fetched: npm is missing, failed or gave the wrong file."""


def schema_dir() -> Path:
    """The cache folder for the pinned version's schema files, outside the repository.

    ``$OPENHEIM_ACP_SCHEMA_DIR/<version>`` when that variable is set (to share or pre-fill the
    cache, e.g. on an offline machine), else ``<XDG cache or ~/.cache>/openheim-tests/acp-schema/
    <version>``. The version in the path means a new pin never reuses an old download.
    """
    override = os.environ.get(CACHE_DIR_ENV)
    if override:
        return Path(override).expanduser() / SDK_VERSION
    xdg = os.environ.get("XDG_CACHE_HOME")
    cache_root = Path(xdg) if xdg else Path.home() / ".cache"
    return cache_root / "openheim-tests" / "acp-schema" / SDK_VERSION


def ensure_schema_files(directory: Path | None = None) -> Path:
    """Make sure the pinned schema files are in ``directory`` (default :func:`schema_dir`).

    Fetches them with ``npm pack`` the first time and returns the folder. Each file is written to a
    temporary name and moved into place with ``os.replace``, so two test processes fetching at once
    both end with whole files. Raises :class:`SchemaFetchError`, which fails the test, if npm is
    missing or the fetch goes wrong: these checks must not be skipped silently.
    """
    target = directory if directory is not None else schema_dir()
    if all((target / name).is_file() for name in SCHEMA_FILES):
        return target
    with tempfile.TemporaryDirectory(prefix="openheim-acp-schema-") as tmp:
        contents = _extract_schema_files(_npm_pack(Path(tmp), target))
    target.mkdir(parents=True, exist_ok=True)
    for name, data in contents.items():
        _write_atomically(target / name, data)
    return target


def _install_hint(target: Path) -> str:
    return (
        f"The ACP tests validate openheim's messages against the official ACP JSON schema, which "
        f"they fetch once with `npm pack {SDK_PACKAGE}@{SDK_VERSION}`. Install Node.js 18+ with "
        f"npm (and let npm reach its registry), or put {', '.join(SCHEMA_FILES)} from that "
        f"package's {_MEMBER_PREFIX.removeprefix('package/')} into {target}."
    )


def _npm_pack(workdir: Path, target: Path) -> Path:
    """Download the pinned package tarball into ``workdir`` with npm and check its integrity."""
    npm = shutil.which("npm")
    if npm is None:
        raise SchemaFetchError(f"npm was not found on PATH. {_install_hint(target)}")
    spec = f"{SDK_PACKAGE}@{SDK_VERSION}"
    env = {**os.environ, "npm_config_update_notifier": "false", "npm_config_fund": "false"}
    try:
        proc = subprocess.run(
            [npm, "pack", spec, "--ignore-scripts"],
            cwd=workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=_NPM_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise SchemaFetchError(
            f"`npm pack {spec}` took over {_NPM_TIMEOUT_S} s. {_install_hint(target)}"
        ) from None
    except OSError as exc:
        raise SchemaFetchError(f"could not run {npm}: {exc}. {_install_hint(target)}") from exc
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip()[-2000:]
        raise SchemaFetchError(
            f"`npm pack {spec}` failed with exit status {proc.returncode}:\n{detail}\n"
            f"{_install_hint(target)}"
        )
    tarballs = sorted(workdir.glob("*.tgz"))
    if len(tarballs) != 1:
        raise SchemaFetchError(f"`npm pack {spec}` left {len(tarballs)} tarballs, expected one")
    digest = hashlib.sha512(tarballs[0].read_bytes()).digest()
    integrity = "sha512-" + base64.b64encode(digest).decode("ascii")
    if integrity != SDK_INTEGRITY:
        raise SchemaFetchError(
            f"{spec} from npm has integrity {integrity}, but tests/acp/schema_fetch.py pins "
            f"{SDK_INTEGRITY}; if SDK_VERSION was changed on purpose, update SDK_INTEGRITY"
        )
    return tarballs[0]


def _extract_schema_files(tarball: Path) -> dict[str, bytes]:
    """Read just the schema files out of the tarball, writing nothing the archive names."""
    contents: dict[str, bytes] = {}
    with tarfile.open(tarball, "r:gz") as archive:
        for name in SCHEMA_FILES:
            member_name = _MEMBER_PREFIX + name
            try:
                member = archive.getmember(member_name)
            except KeyError:
                raise SchemaFetchError(f"{tarball.name} has no {member_name}") from None
            stream = archive.extractfile(member) if member.isfile() else None
            if stream is None:
                raise SchemaFetchError(f"{member_name} in {tarball.name} is not a regular file")
            with stream:
                data = stream.read()
            try:
                json.loads(data)
            except ValueError as exc:
                raise SchemaFetchError(f"{member_name} is not JSON: {exc}") from exc
            contents[name] = data
    return contents


def _write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see either no file or the whole file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
