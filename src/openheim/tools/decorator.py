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

import asyncio
import dataclasses
import inspect
import re
import typing
from collections.abc import Callable
from functools import cached_property
from typing import Annotated, Any, overload

from openheim.tools.base import Capabilities, Tool, ToolContext, ToolKind, ToolOutput
from openheim.typed import field_info, object_schema

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
        self._ctx_param: str | None = None
        self._params = self._signature(fn, param_docs)
        self._model: type[Any] | None = None

    def _signature(self, fn: Callable[..., Any], docs: dict[str, str]) -> list[inspect.Parameter]:
        """The parameters the model fills in, each annotated with its resolved type and text."""
        hints = typing.get_type_hints(fn, include_extras=True)
        params = []
        for param in inspect.signature(fn).parameters.values():
            hint = hints.get(param.name, Any)
            if hint is ToolContext:
                self._ctx_param = param.name
                continue
            if param.name in docs and typing.get_origin(hint) is not Annotated:
                hint = Annotated[hint, docs[param.name]]
            params.append(param.replace(annotation=hint))
        return params

    @property
    def args_model(self) -> type[Any]:  # type: ignore[override]
        """The arguments' frozen dataclass, made on first use."""
        if self._model is None:
            specs = [(p.name, p.annotation, _field(p)) for p in self._params]
            name = "".join(part.title() for part in self.name.split("_")) + "Args"
            self._model = dataclasses.make_dataclass(name, specs, frozen=True)
        return self._model

    @cached_property
    def parameters(self) -> dict[str, Any]:
        """The schema, from the signature itself (no dataclass needed)."""
        fields = [
            field_info(p.name, p.annotation, required=p.default is inspect.Parameter.empty)
            for p in self._params
        ]
        return object_schema(fields)

    async def call(self, args: Any, ctx: ToolContext) -> ToolOutput:
        kwargs = {f.name: getattr(args, f.name) for f in dataclasses.fields(args)}
        if self._ctx_param:
            kwargs[self._ctx_param] = ctx
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
    caps = Capabilities(read_only=read_only, kind=kind)

    def wrap(f: Callable[..., Any]) -> FunctionTool:
        return FunctionTool(f, name=name, description=description, capabilities=caps)

    return wrap(fn) if fn is not None else wrap
