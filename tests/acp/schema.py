"""Validation of every JSON-RPC message an ACP agent emits against the official ACP JSON schema.

The schema is ``schema/v1/schema.json`` (and ``schema.unstable.json``) from the npm package
``@agentclientprotocol/sdk`` at a pinned version. It is not committed: :func:`ensure_schema_files`
fetches it once with ``npm pack`` into a cache folder outside the repository, so the tests always
check against the published protocol rather than a copy that could drift or be edited to pass.

:class:`AgentMessageValidator` watches a connection through the SDK's stream observers. It checks
each message the agent sends: the whole message against the schema's top-level ``Agent``
alternative, a request's or notification's ``params`` against the definition for its method, a
response's ``result`` against the response definition for the method of the client request it
answers (so it also watches the client's messages, to learn which id had which method) and an error
response's ``error`` against the schema's ``Error``. The method-to-definition tables come from the
schema's own ``x-method`` markers, so a new pinned version brings its methods with it. Failures are
collected, not raised, because the SDK swallows exceptions from observers.
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
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Final, Literal

import jsonschema  # type: ignore[import-untyped]
import jsonschema.exceptions  # type: ignore[import-untyped]
from acp.connection import StreamDirection, StreamEvent
from referencing import Registry
from referencing.jsonschema import specification_with

__all__ = [
    "CACHE_DIR_ENV",
    "SCHEMA_FILES",
    "SDK_INTEGRITY",
    "SDK_PACKAGE",
    "SDK_VERSION",
    "STABLE_SCHEMA",
    "UNSTABLE_SCHEMA",
    "AgentMessageValidator",
    "MethodDef",
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
_MAX_MESSAGE_CHARS: Final = 400

JsonObject = dict[str, Any]
Kind = Literal["request", "notification", "response"]


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
            f"{spec} from npm has integrity {integrity}, but tests/acp/schema.py pins "
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


@dataclass(frozen=True, slots=True)
class MethodDef:
    """Where a method's params or result are defined: a schema file and a ``$defs`` name."""

    schema_file: str
    definition: str


@dataclass
class _Schema:
    """One parsed schema file, its ``$ref`` registry and the method tables read from it."""

    file: str
    root: JsonObject
    uri: str
    registry: Registry[Any]
    validator_class: Any
    agent_pointer: str
    requests: dict[str, str]
    notifications: dict[str, str]
    responses: dict[str, str]
    error_definition: str
    _validators: dict[str, Any] = field(default_factory=dict)

    def validator(self, pointer: str) -> Any:
        """A validator for the subschema at JSON pointer ``pointer`` (e.g. ``/$defs/Error``)."""
        found = self._validators.get(pointer)
        if found is None:
            ref = {"$ref": f"{self.uri}#{pointer}"}
            found = self.validator_class(ref, registry=self.registry)
            self._validators[pointer] = found
        return found


def _refs_in(node: Any) -> Iterator[str]:
    """The ``$defs`` names that ``node`` refers to directly (without following the refs)."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            yield ref.removeprefix("#/$defs/")
        for value in node.values():
            yield from _refs_in(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs_in(value)


def _method_table(defs: JsonObject, node: Any) -> dict[str, str]:
    """Method name -> definition name for the definitions ``node`` refers to.

    The schema marks each method's params and result definitions with ``x-method``; the extension
    catch-alls (``ExtRequest`` and the like) have none and accept anything, so they are left out.
    """
    table: dict[str, str] = {}
    for name in _refs_in(node):
        method = defs.get(name, {}).get("x-method")
        if isinstance(method, str):
            table.setdefault(method, name)
    return table


@cache
def _load_schema(directory: Path, file: str) -> _Schema:
    """Parse one schema file and derive the agent-to-client method tables from it."""
    root: JsonObject = json.loads((directory / file).read_text(encoding="utf-8"))
    try:
        defs: JsonObject = root["$defs"]
        alternatives: list[JsonObject] = root["anyOf"]
        agent_index = next(i for i, alt in enumerate(alternatives) if alt.get("title") == "Agent")
        requests = _method_table(defs, defs["AgentRequest"]["properties"]["params"])
        notifications = _method_table(defs, defs["AgentNotification"]["properties"]["params"])
        for alternative in alternatives:  # `$/cancel_request` and other `$/` notifications
            if alternative.get("title") == "ProtocolLevel":
                notifications.update(_method_table(defs, alternative["properties"]["params"]))
        response_kinds: list[JsonObject] = defs["AgentResponse"]["anyOf"]
        result = next(
            k["properties"]["result"] for k in response_kinds if "result" in k["required"]
        )
        error = next(k["properties"]["error"] for k in response_kinds if "error" in k["required"])
        responses = _method_table(defs, result)
        error_definition = next(_refs_in(error))
    except (KeyError, StopIteration, TypeError) as exc:
        raise RuntimeError(
            f"{directory / file} does not have the layout tests/acp/schema.py expects "
            f"(Agent alternative, AgentRequest/AgentResponse/AgentNotification): {exc!r}"
        ) from exc
    uri = f"urn:acp-schema:{SDK_VERSION}:{file}"
    dialect = root.get("$schema", "https://json-schema.org/draft/2020-12/schema")
    resource = specification_with(dialect).create_resource(root)
    return _Schema(
        file=file,
        root=root,
        uri=uri,
        registry=Registry().with_resource(uri, resource),
        validator_class=jsonschema.validators.validator_for(
            root, default=jsonschema.Draft202012Validator
        ),
        agent_pointer=f"/anyOf/{agent_index}",
        requests=requests,
        notifications=notifications,
        responses=responses,
        error_definition=error_definition,
    )


def _short(text: str) -> str:
    return text if len(text) <= _MAX_MESSAGE_CHARS else text[: _MAX_MESSAGE_CHARS - 3] + "..."


def _tag_mismatches(errors: list[Any]) -> list[Any]:
    """The errors that rule a ``oneOf``/``anyOf`` branch out at once: the value has the wrong
    type, or a direct member has the wrong ``const`` (a tag such as ``sessionUpdate``)."""
    return [
        e
        for e in errors
        if (e.validator == "type" and not e.path) or (e.validator == "const" and len(e.path) <= 1)
    ]


def _explain(error: Any) -> tuple[Any, str]:
    """The error to report for ``error`` and a readable reason.

    The schema's unions (``oneOf``/``anyOf``) are mostly tagged: each branch fixes a member such
    as ``sessionUpdate`` with ``const``. jsonschema's ``best_match`` then stops at "is not valid
    under any of the given schemas", which hides the real problem. So: when exactly one branch
    accepts the tag, look inside that branch; when no branch does, say which tag values exist.
    """
    while error.validator in {"anyOf", "oneOf"} and error.context:
        branches: dict[Any, list[Any]] = {}
        for sub in error.context:
            branches.setdefault(sub.relative_schema_path[0], []).append(sub)
        candidates = [subs for subs in branches.values() if not _tag_mismatches(subs)]
        if len(candidates) == 1:
            error = jsonschema.exceptions.best_match(candidates[0])
            continue
        if candidates:
            break
        # Every branch ruled out: is it because of one tag (or, for an enum-like union of
        # constants, the value itself) that has no branch?
        tags = [e for subs in branches.values() for e in _tag_mismatches(subs)]
        tags = [e for e in tags if e.validator == "const"]
        members = {tuple(e.path) for e in tags}
        if len(members) != 1:
            break
        (member,) = members
        allowed = sorted({json.dumps(e.validator_value) for e in tags})
        value = error.instance
        for key in member:
            value = value.get(key) if isinstance(value, dict) else None
        if json.dumps(value) in allowed:
            break
        subject = f"{member[0]} {json.dumps(value)}" if member else json.dumps(value)
        return error, _short(f"{subject} is none of {', '.join(allowed)}")
    return error, _short(error.message)


def _id_key(value: Any) -> str:
    """A dict key for a JSON-RPC id that keeps ``1`` and ``"1"`` apart."""
    return json.dumps(value, sort_keys=True)


class AgentMessageValidator:
    """Checks every message an ACP agent sends against the official schema; collects failures.

    Wire it into the client's connection with ``observers=[validator.observer]`` (the SDK calls it
    with each raw message: ``INCOMING`` ones come from the agent, ``OUTGOING`` ones from the
    client), or into an agent-side connection with :attr:`agent_side_observer`, or call
    :meth:`feed` directly. Then :meth:`assert_valid` at the end of the test.

    A method found in ``schema.json`` is checked against it; one found only in
    ``schema.unstable.json`` against that. With ``unstable=True`` everything is checked against the
    unstable schema, for an agent that uses the unstable protocol. Extension methods (``_name``)
    have no schema beyond the JSON-RPC envelope.
    """

    def __init__(self, *, unstable: bool = False, directory: Path | None = None) -> None:
        folder = ensure_schema_files(directory)
        unstable_schema = _load_schema(folder, UNSTABLE_SCHEMA)
        schemas = [unstable_schema] if unstable else [_load_schema(folder, STABLE_SCHEMA)]
        schemas.append(unstable_schema)
        self._schemas = {s.file: s for s in schemas}
        self._default = schemas[0]
        self.request_defs = self._merge(schemas, "requests")
        """Agent-to-client request methods and their params definitions."""
        self.notification_defs = self._merge(schemas, "notifications")
        """Agent-to-client notification methods and their params definitions."""
        self.response_defs = self._merge(schemas, "responses")
        """Client-to-agent request methods and the definitions of the agent's results."""
        self.checked = 0
        """How many agent messages have been validated."""
        self.seen: Counter[str] = Counter()
        """Agent messages validated, by kind and method: ``"notification session/update"``,
        ``"request fs/read_text_file"``, ``"response initialize"``, ``"error session/load"``."""
        self._errors: list[str] = []
        self._client_methods: dict[str, str] = {}
        self._unanswered: dict[str, JsonObject] = {}

    @staticmethod
    def _merge(
        schemas: list[_Schema], table: Literal["requests", "notifications", "responses"]
    ) -> dict[str, MethodDef]:
        merged: dict[str, MethodDef] = {}
        for schema in schemas:  # the first schema that knows a method wins
            for method, definition in getattr(schema, table).items():
                merged.setdefault(method, MethodDef(schema.file, definition))
        return merged

    @property
    def unstable_only_methods(self) -> set[str]:
        """Methods (any kind) defined only in ``schema.unstable.json``."""
        tables = (self.request_defs, self.notification_defs, self.response_defs)
        return {m for t in tables for m, d in t.items() if d.schema_file == UNSTABLE_SCHEMA}

    @property
    def errors(self) -> list[str]:
        """Readable failures so far, including responses to ids the client never sent."""
        unmatched = [
            f"agent->client response id={message.get('id')!r}: answers no request the client sent "
            "(or answers one twice)"
            for message in self._unanswered.values()
        ]
        return [*self._errors, *unmatched]

    def assert_valid(self) -> None:
        """Fail if any message was invalid, or if none was checked (observer not wired in)."""
        errors = self.errors
        if errors:
            listing = "\n".join(f"  - {e}" for e in errors)
            raise AssertionError(
                f"{len(errors)} of the agent's ACP messages break the schema "
                f"({SDK_PACKAGE}@{SDK_VERSION}):\n{listing}"
            )
        if self.checked == 0:
            raise AssertionError(
                "no agent message was validated: was validator.observer passed to the connection?"
            )

    def observer(self, event: StreamEvent) -> None:
        """Stream observer for a client-side connection (``ClientSideConnection``,
        ``spawn_agent_process``): incoming messages are the agent's."""
        self.feed(event.message, from_agent=event.direction == StreamDirection.INCOMING)

    def agent_side_observer(self, event: StreamEvent) -> None:
        """Stream observer for an agent-side connection (``AgentSideConnection``,
        ``run_agent``): outgoing messages are the agent's."""
        self.feed(event.message, from_agent=event.direction == StreamDirection.OUTGOING)

    def feed(self, message: Mapping[str, Any], *, from_agent: bool) -> None:
        """Validate an agent message, or note which method a client request has.

        Never raises for a bad message: the SDK logs and ignores exceptions from observers, so
        every problem, even one in this validator, is recorded in :attr:`errors` instead.
        """
        try:
            if from_agent:
                self._check_agent_message(message)
            else:
                self._note_client_message(message)
        except Exception as exc:
            self._errors.append(f"validator failed on {_short(repr(message))}: {exc!r}")

    def _note_client_message(self, message: Mapping[str, Any]) -> None:
        method = message.get("method")
        if not isinstance(method, str) or "id" not in message:
            return  # a notification or a response from the client: nothing the agent answers
        key = _id_key(message["id"])
        self._client_methods[key] = method
        early = self._unanswered.pop(key, None)
        if early is not None:  # the agent's response was observed before the request
            self._check_response(early)

    def _check_agent_message(self, message: Mapping[str, Any]) -> None:
        self.checked += 1
        method = message.get("method")
        kind: Kind
        if method is not None:
            kind = "request" if "id" in message else "notification"
        elif "id" in message:
            kind = "response"
        else:
            self._errors.append(
                f"agent->client message is neither request, notification nor response: "
                f"{_short(json.dumps(message))}"
            )
            return
        if kind != "response":
            self.seen[f"{kind} {method}"] += 1
        defs = self.notification_defs if kind == "notification" else self.request_defs
        found = defs.get(method) if isinstance(method, str) else None
        schema = self._schemas[found.schema_file] if found else self._default
        before = len(self._errors)
        if kind == "response":
            self._check_response(message)
        elif found is not None:
            pointer = f"/$defs/{found.definition}"
            params = message.get("params")
            self._validate(schema, pointer, params, "params", message, kind, found.definition)
        elif not (isinstance(method, str) and method.startswith("_")):
            self._fail(message, kind, f"{method!r} is not an agent->client {kind} in the schema")
        if len(self._errors) == before:  # else the envelope check would mostly repeat the error
            self._validate(schema, schema.agent_pointer, message, "message", message, kind, "Agent")

    def _check_response(self, message: Mapping[str, Any]) -> None:
        if "result" in message and "error" in message:
            self._fail(message, "response", "has both `result` and `error`")
        request_id = message.get("id")
        method = self._client_methods.pop(_id_key(request_id), None)
        if "error" in message and (method is not None or request_id is None):
            # The error object's shape does not depend on the method. (An id of null answers a
            # request that could not be read.)
            self.seen[f"error {method}"] += 1
            definition = self._default.error_definition
            pointer = f"/$defs/{definition}"
            error = message["error"]
            self._validate(
                self._default, pointer, error, "error", message, "response", definition, method
            )
        elif method is None:
            self._unanswered[_id_key(request_id)] = dict(message)  # until the request shows up
        elif "result" in message:
            self._check_result(message, method)

    def _check_result(self, message: Mapping[str, Any], method: str) -> None:
        self.seen[f"response {method}"] += 1
        found = self.response_defs.get(method)
        if found is None:
            if not method.startswith("_"):
                self._fail(message, "response", f"the schema has no result for method {method!r}")
            return
        schema = self._schemas[found.schema_file]
        pointer = f"/$defs/{found.definition}"
        result = message["result"]
        self._validate(
            schema, pointer, result, "result", message, "response", found.definition, method
        )

    def _validate(
        self,
        schema: _Schema,
        pointer: str,
        instance: Any,
        part: str,
        message: Mapping[str, Any],
        kind: Kind,
        definition: str,
        method: str | None = None,
    ) -> None:
        error = jsonschema.exceptions.best_match(schema.validator(pointer).iter_errors(instance))
        if error is None:
            return
        error, reason = _explain(error)
        where = error.json_path.replace("$", part, 1)
        detail = f"{part} does not match {definition} ({schema.file}): {reason} at {where}"
        self._fail(message, kind, detail, method)

    def _fail(
        self, message: Mapping[str, Any], kind: Kind, detail: str, method: str | None = None
    ) -> None:
        name = method or message.get("method")
        label = f"agent->client {kind}"
        if name is not None:
            label += f" {name}" if kind != "response" else f" to {name}"
        if "id" in message:
            label += f" id={message['id']!r}"
        self._errors.append(f"{label}: {detail}")
