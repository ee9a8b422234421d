"""``@tool``: turn a typed Python function into a Tool.

The argument model is a dataclass generated from the signature; the JSON schema comes from the type
hints, the description from the docstring's first paragraph, and each parameter's description from
its ``Args:`` entry (or ``Annotated[T, "text"]``). A parameter annotated ``ToolContext`` receives
the context and is not shown to the model. The function may be sync or async and may return a
string or a ToolOutput; a plain function runs in a worker thread.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import re
import typing
from collections.abc import Callable
from typing import Annotated, Any, overload

from openheim.tools.base import Capabilities, Tool, ToolContext, ToolKind, ToolOutput

_ARG_LINE = re.compile(r"^\s*(\w+)(?:\s*\([^)]*\))?:\s*(.*)$")


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Description (the first paragraph) and per-argument descriptions from ``Args:``.

    An argument entry sits at the section's first indentation; deeper lines continue it (even
    when they contain a colon); an unindented line starts the next section (``Returns:``...).
    """
    text = inspect.cleandoc(doc)
    head, _, rest = text.partition("\nArgs:\n")
    params: dict[str, str] = {}
    indent: int | None = None
    last: str | None = None
    for line in rest.splitlines():
        depth = len(line) - len(line.lstrip())
        if not line.strip():
            continue
        if depth == 0:
            break
        indent = depth if indent is None else indent
        if depth <= indent and (m := _ARG_LINE.match(line)):
            last = m.group(1)
            params[last] = m.group(2).strip()
        elif depth > indent and last:
            params[last] += " " + line.strip()
    description = head.split("\n\n")[0].replace("\n", " ").strip()
    return description, params


class FunctionTool(Tool):
    """A Tool that calls a Python function with its validated arguments."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        capabilities: Capabilities,
    ) -> None:
        self.fn = fn
        self.name = name or fn.__name__
        doc_description, param_docs = _parse_docstring(fn.__doc__ or "")
        self.description = description or doc_description or self.name
        self.capabilities = capabilities
        key = _model_key(fn, self.name)
        built = _MODELS.get(key) if key is not None else None
        if built is None:
            built = _build_model(fn, self.name, param_docs)
            if key is not None:
                _remember(key, built)
        self.args_model, self._ctx_param = built

    async def call(self, args: Any, ctx: ToolContext) -> ToolOutput:
        kwargs = {f.name: getattr(args, f.name) for f in dataclasses.fields(args)}
        if self._ctx_param:
            kwargs[self._ctx_param] = ctx
        if inspect.iscoroutinefunction(self.fn):
            result = await self.fn(**kwargs)
        else:  # plain functions may block: keep them off the event loop
            result = await asyncio.to_thread(self.fn, **kwargs)
        return result if isinstance(result, ToolOutput) else ToolOutput(str(result))


_Built = tuple[type[Any], str | None]
"""A function's argument model, and the name of its ``ToolContext`` parameter (if any)."""
_MODELS: dict[tuple[Any, ...], _Built] = {}
MAX_MODELS = 512
"""Argument models kept for reuse; a function made anew for each session (a closure over the
session's store) has the same signature every time, and building a dataclass costs about a
millisecond and a few KiB, so each session would otherwise pay that per tool."""


def _model_key(fn: Callable[..., Any], name: str) -> tuple[Any, ...] | None:
    """What the model of ``fn`` depends on (code, name, docstring, annotations, defaults with
    their types), or None when any of them cannot be hashed (a mutable default)."""
    given: dict[int | str, Any] = dict(enumerate(fn.__defaults__ or ()))
    given.update(fn.__kwdefaults__ or {})
    defaults = tuple((k, type(v), v) for k, v in given.items())
    key = (fn.__code__, name, fn.__doc__, tuple(fn.__annotations__.items()), defaults)
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _remember(key: tuple[Any, ...], built: _Built) -> None:
    if len(_MODELS) >= MAX_MODELS:
        _MODELS.clear()
    _MODELS[key] = built


def _build_model(fn: Callable[..., Any], name: str, docs: dict[str, str]) -> _Built:
    hints = typing.get_type_hints(fn, include_extras=True)
    specs: list[tuple[str, Any, Any]] = []
    ctx_param: str | None = None
    for param in inspect.signature(fn).parameters.values():
        hint = hints.get(param.name, Any)
        if hint is ToolContext:
            ctx_param = param.name
            continue
        if param.name in docs and typing.get_origin(hint) is not Annotated:
            hint = Annotated[hint, docs[param.name]]
        default = (
            dataclasses.field()
            if param.default is inspect.Parameter.empty
            else dataclasses.field(default=param.default)
        )
        specs.append((param.name, hint, default))
    model_name = "".join(part.title() for part in name.split("_")) + "Args"
    return dataclasses.make_dataclass(model_name, specs, frozen=True), ctx_param


@overload
def tool(fn: Callable[..., Any], /) -> FunctionTool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    kind: ToolKind = ToolKind.OTHER,
) -> Callable[[Callable[..., Any]], FunctionTool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    kind: ToolKind = ToolKind.OTHER,
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Make a Tool of a function: ``@tool`` or ``@tool(read_only=True, kind=ToolKind.READ)``."""
    caps = Capabilities(read_only=read_only, kind=kind)

    def wrap(f: Callable[..., Any]) -> FunctionTool:
        return FunctionTool(f, name=name, description=description, capabilities=caps)

    return wrap(fn) if fn is not None else wrap
