"""``@tool``: turn a typed Python function into a Tool.

The argument model is a dataclass generated from the signature when the tool is first called (a
run offers many tools and calls few; making a dataclass costs about half a millisecond); the JSON
schema comes from the type hints, the description from the docstring's first paragraph, and each
parameter's description from its ``Args:`` entry (or ``Annotated[T, "text"]``). A parameter
annotated ``ToolContext`` receives the context and is not shown to the model. The function may
be sync or async and may return a string or a ToolOutput; a plain function runs in a worker
thread.
"""

from __future__ import annotations
import __future__

import asyncio
import dataclasses
import inspect
import re
import types
import typing
from collections.abc import Callable
from functools import cache
from typing import Annotated, Any, overload

from openheim.formats.typed import field_info, object_schema
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


class _Analysis:
    """What a tool function's signature and docstring say, the same for every tool made of it:
    the description, the parameters the model fills in, the ``ToolContext`` parameter, and,
    made on first use, the JSON schema and the argument dataclass.

    A session makes its own tool objects (closures over its memory store, its skills), but
    the closures made by one ``def`` share their code, hints and docstring, so one analysis
    serves them all (``_analysis``). Nothing here is changed once made, and the schema is
    only read by its users, so sharing it between sessions is safe."""

    __slots__ = ("ctx_param", "description", "model", "params", "schema")

    def __init__(self, fn: Callable[..., Any], name: str, description: str | None) -> None:
        doc_description, param_docs = _parse_docstring(fn.__doc__ or "")
        self.description = description or doc_description or name
        self.ctx_param: str | None = None
        self.params = self._signature(fn, param_docs)
        self.schema: dict[str, Any] | None = None
        self.model: type[Any] | None = None

    def _signature(
        self, fn: Callable[..., Any], docs: dict[str, str]
    ) -> tuple[inspect.Parameter, ...]:
        """The parameters the model fills in, each annotated with its resolved type and text."""
        hints = typing.get_type_hints(fn, include_extras=True)
        params = []
        for param in inspect.signature(fn).parameters.values():
            hint = hints.get(param.name, Any)
            if hint is ToolContext:
                self.ctx_param = param.name
                continue
            if param.name in docs and typing.get_origin(hint) is not Annotated:
                hint = Annotated[hint, docs[param.name]]
            params.append(param.replace(annotation=hint))
        return tuple(params)


_KEPT_PER_FUNCTION = 8
_Fingerprint = tuple[dict[str, Any], tuple[Any, ...]]
_ANALYSES: dict[types.CodeType, list[tuple[_Fingerprint, _Analysis]]] = {}
"""Analyses by the function's code, each with what else it depends on (``_fingerprint``);
the few newest per code are kept, so a function remade with ever new defaults cannot grow it."""


def _fingerprint(fn: Callable[..., Any], name: str, description: str | None) -> _Fingerprint:
    """What an analysis depends on besides the code: the globals the hints resolve in, the
    names, the docstring, the annotations (unless postponed, ``from __future__ import
    annotations``: then the code holds them, and reading them would make a dict per
    function) and the default values. Defaults are compared by
    identity (a closure's constant defaults are the same objects every time; the analysis's
    parameters hold the objects, so an id cannot be reused while it is kept)."""
    defaults = getattr(fn, "__defaults__", None) or ()
    keyword = getattr(fn, "__kwdefaults__", None) or {}
    code = getattr(fn, "__code__", None)
    postponed = code is not None and code.co_flags & __future__.annotations.compiler_flag
    return getattr(fn, "__globals__", {}), (
        name,
        description,
        fn.__doc__,
        None if postponed else dict(getattr(fn, "__annotations__", {})),
        tuple(id(value) for value in defaults),
        tuple((key, id(value)) for key, value in keyword.items()),
    )


def _analysis(fn: Callable[..., Any], name: str, description: str | None) -> _Analysis:
    """The analysis of ``fn``, shared with earlier tools of the same function and fingerprint
    (only plain functions: other callables are analysed each time)."""
    code = getattr(fn, "__code__", None)
    if not isinstance(code, types.CodeType):
        return _Analysis(fn, name, description)
    key = _fingerprint(fn, name, description)
    known = _ANALYSES.setdefault(code, [])
    for seen, found in known:
        if _same(seen, key):
            return found
    made = _Analysis(fn, name, description)
    known.append((key, made))
    del known[:-_KEPT_PER_FUNCTION]
    return made


def _same(one: _Fingerprint, other: _Fingerprint) -> bool:
    """Whether two fingerprints are equal: the same globals (by identity) and equal rest (an
    annotation whose ``==`` fails counts as new)."""
    try:
        return one[0] is other[0] and bool(one[1] == other[1])
    except Exception:
        return False


class FunctionTool(Tool):
    """A Tool that calls a Python function with its validated arguments; what the function's
    signature says is shared with every other tool of the same function (``_Analysis``)."""

    __slots__ = ("_analysis", "_model", "capabilities", "description", "fn", "name")

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
        self._analysis = _analysis(fn, self.name, description)
        self.description = self._analysis.description
        self.capabilities = capabilities
        self._model: type[Any] | None = None

    @property
    def args_model(self) -> type[Any]:  # type: ignore[override]
        """The arguments' frozen dataclass, made on the first use of any tool of this
        function."""
        if self._model is None:
            shared = self._analysis
            if shared.model is None:
                specs = [(p.name, p.annotation, _field(p)) for p in shared.params]
                name = "".join(part.title() for part in self.name.split("_")) + "Args"
                shared.model = dataclasses.make_dataclass(name, specs, frozen=True)
            self._model = shared.model
        return self._model

    @property
    def parameters(self) -> dict[str, Any]:
        """The schema, from the signature itself (no dataclass needed), made once per
        function; callers only read it."""
        shared = self._analysis
        if shared.schema is None:
            fields = [
                field_info(p.name, p.annotation, required=p.default is inspect.Parameter.empty)
                for p in shared.params
            ]
            shared.schema = object_schema(fields)
        return shared.schema

    async def call(self, args: Any, ctx: ToolContext) -> ToolOutput:
        kwargs = {f.name: getattr(args, f.name) for f in dataclasses.fields(args)}
        ctx_param = self._analysis.ctx_param
        if ctx_param:
            kwargs[ctx_param] = ctx
        if inspect.iscoroutinefunction(self.fn):
            result = await self.fn(**kwargs)
        else:  # plain functions may block: keep them off the event loop
            result = await asyncio.to_thread(self.fn, **kwargs)
        return result if isinstance(result, ToolOutput) else ToolOutput(str(result))


def _field(param: inspect.Parameter) -> Any:
    if param.default is inspect.Parameter.empty:
        return dataclasses.field()
    return dataclasses.field(default=param.default)


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
    caps = _capabilities(read_only, kind)

    def wrap(f: Callable[..., Any]) -> FunctionTool:
        return FunctionTool(f, name=name, description=description, capabilities=caps)

    return wrap(fn) if fn is not None else wrap


@cache
def _capabilities(read_only: bool, kind: ToolKind) -> Capabilities:
    """One ``Capabilities`` per combination: they are frozen, so every tool may share it."""
    return Capabilities(read_only=read_only, kind=kind)
