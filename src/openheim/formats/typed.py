"""Typed records from JSON-like data, and JSON schemas from type hints.

One small mechanism serves tool arguments (the model's JSON into a dataclass, and the schema the
model sees) and config files (TOML tables into dataclasses). It understands ``str``, ``int``,
``float``, ``bool``, ``None``, ``Any``, ``Literal``, unions, ``list[T]``, ``dict[str, T]``, enums
and nested dataclasses. ``Annotated[T, "text"]`` or ``field(metadata={"doc": "text"})`` gives a
field its description; ``Annotated[T, Bounds(...)]`` limits a number's range (NaN is never in
range). Unknown keys are rejected with the nearest valid key. Kept free of pydantic so importing
it costs nothing.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar, Union

T = TypeVar("T")

_NONE = type(None)
_EXACT_FLOAT_INT = 2**53
"""Whole floats beyond this are not exact integers (``1e20``), so they are not taken as ints."""


class TypeCheckError(ValueError):
    """``path`` names the bad key (``providers.openai.timeout_secs``); ``problem`` says why."""

    def __init__(self, path: str, problem: str, *, suggestion: str | None = None) -> None:
        self.path = path
        self.problem = problem
        self.suggestion = suggestion
        where = f"{path}: " if path else ""
        hint = f" (did you mean {suggestion!r}?)" if suggestion else ""
        super().__init__(f"{where}{problem}{hint}")


@dataclasses.dataclass(frozen=True, slots=True)
class Bounds:
    """The range a number must lie in: ``low`` (exclusive when ``above``) up to ``high``."""

    low: float | None = None
    high: float | None = None
    above: bool = False

    def problem(self, value: float) -> str | None:
        """Why ``value`` is out of range, or None when it is inside."""
        low_ok = self.low is None or (value > self.low if self.above else value >= self.low)
        if low_ok and (self.high is None or value <= self.high):
            return None  # NaN fails both comparisons, so it never gets here
        return f"must be {self.describe()}, got {value!r}"

    def describe(self) -> str:
        low = None if self.low is None else _number(self.low)
        high = None if self.high is None else _number(self.high)
        above = "greater than" if self.above else "at least"
        if low is not None and high is not None:
            return f"{above} {low} and at most {high}"
        return f"{above} {low}" if low is not None else f"at most {high}"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _bounds_of(tp: Any) -> Bounds | None:
    if typing.get_origin(tp) is typing.Annotated:
        return next((m for m in typing.get_args(tp)[1:] if isinstance(m, Bounds)), None)
    return None


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _strip_annotated(tp: Any) -> tuple[Any, str | None]:
    if typing.get_origin(tp) is typing.Annotated:
        base, *extra = typing.get_args(tp)
        doc = next((m for m in extra if isinstance(m, str)), None)
        return base, doc
    return tp, None


@dataclasses.dataclass(frozen=True, slots=True)
class FieldInfo:
    name: str
    type: Any
    doc: str | None
    required: bool


_FIELDS: dict[type[Any], tuple[FieldInfo, ...]] = {}


def fields_of(cls: type[Any]) -> tuple[FieldInfo, ...]:
    """The fields of a dataclass with resolved types and descriptions (cached)."""
    found = _FIELDS.get(cls)
    if found is None:
        found = _FIELDS[cls] = _collect_fields(cls)
    return found


def _collect_fields(cls: type[Any]) -> tuple[FieldInfo, ...]:
    """The fields of a dataclass with resolved types and descriptions."""
    hints = typing.get_type_hints(cls, include_extras=True)
    out = []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        out.append(field_info(f.name, hints[f.name], required=required, doc=f.metadata.get("doc")))
    return tuple(out)


def field_info(name: str, hint: Any, *, required: bool, doc: str | None = None) -> FieldInfo:
    """A field of type ``hint`` (its ``Annotated`` text the description unless ``doc`` is
    given; its bounds kept on the type, where ``convert`` and ``json_schema`` see them)."""
    tp, found = _strip_annotated(hint)
    bounds = _bounds_of(hint)
    if bounds is not None:
        tp = typing.Annotated[tp, bounds]
    return FieldInfo(name, tp, found if doc is None else doc, required)


def json_schema(tp: Any) -> dict[str, Any]:
    """The JSON schema of a type (objects for dataclasses, with ``additionalProperties: false``)."""
    bounds = _bounds_of(tp)
    tp, doc = _strip_annotated(tp)
    schema = _schema(tp)
    if doc:
        schema["description"] = doc
    if bounds is not None:
        schema.update(_bounds_schema(bounds))
    return schema


def _bounds_schema(bounds: Bounds) -> dict[str, float]:
    out: dict[str, float] = {}
    if bounds.low is not None:
        out["exclusiveMinimum" if bounds.above else "minimum"] = bounds.low
    if bounds.high is not None:
        out["maximum"] = bounds.high
    return out


def _schema(tp: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return _object_schema(tp)
    simple = {str: "string", int: "integer", float: "number", bool: "boolean", _NONE: "null"}
    if tp in simple:
        return {"type": simple[tp]}
    if tp is Any:
        return {}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return {"type": "string", "enum": [m.value for m in tp]}
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Literal:
        return {"enum": list(args)}
    if origin in (Union, types.UnionType):
        options = [json_schema(a) for a in args if a is not _NONE]
        return options[0] if len(options) == 1 else {"anyOf": options}
    if origin in (list, Sequence, tuple):
        return {"type": "array", "items": json_schema(args[0]) if args else {}}
    if origin in (dict, Mapping):
        return {"type": "object", "additionalProperties": json_schema(args[1]) if args else {}}
    raise TypeError(f"no JSON schema for type {tp!r}")


def _object_schema(cls: type[Any]) -> dict[str, Any]:
    return object_schema(fields_of(cls))


def object_schema(fields: Sequence[FieldInfo]) -> dict[str, Any]:
    """The JSON schema of an object with ``fields`` (no other properties allowed)."""
    props = {}
    for f in fields:
        props[f.name] = json_schema(f.type)
        if f.doc:
            props[f.name]["description"] = f.doc
    required = [f.name for f in fields if f.required]
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return schema


def from_mapping(cls: type[T], data: object, path: str = "") -> T:
    """Build dataclass ``cls`` from ``data``, checking every value; raise TypeCheckError."""
    if not isinstance(data, Mapping):
        raise TypeCheckError(path, f"expected a table/object, got {_describe(data)}")
    known = {f.name: f for f in fields_of(cls)}
    for key in data:
        if key not in known:
            import difflib  # only an unknown key pays for it

            near = difflib.get_close_matches(str(key), list(known), n=1)
            raise TypeCheckError(
                _join(path, str(key)), "unknown key", suggestion=near[0] if near else None
            )
    values = {}
    for name, info in known.items():
        if name in data:
            values[name] = convert(info.type, data[name], _join(path, name))
        elif info.required:
            raise TypeCheckError(_join(path, name), "required key is missing")
    return cls(**values)


def convert(tp: Any, value: object, path: str) -> Any:
    """Check ``value`` against ``tp`` and return it in that type's shape."""
    bounds = _bounds_of(tp)
    out = _convert(_strip_annotated(tp)[0], value, path)
    if bounds is not None and isinstance(out, int | float) and not isinstance(out, bool):
        problem = bounds.problem(out)
        if problem is not None:
            raise TypeCheckError(path, problem)
    return out


def _convert(tp: Any, value: object, path: str) -> Any:
    if tp is Any:
        return value
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return from_mapping(tp, value, path)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (Union, types.UnionType):
        return _convert_union(args, value, path)
    if origin is typing.Literal:
        if value in args and type(value) in {type(a) for a in args}:
            return value
        choices = ", ".join(repr(a) for a in args)
        raise TypeCheckError(path, f"must be one of {choices}, got {value!r}")
    if origin in (list, Sequence, tuple):
        if not isinstance(value, list | tuple):
            raise TypeCheckError(path, f"expected a list, got {_describe(value)}")
        items = [convert(args[0], v, _join(path, i)) for i, v in enumerate(value)]
        return tuple(items) if origin is tuple else items
    if origin in (dict, Mapping):
        if not isinstance(value, Mapping):
            raise TypeCheckError(path, f"expected a table/object, got {_describe(value)}")
        return {str(k): convert(args[1], v, _join(path, str(k))) for k, v in value.items()}
    return _convert_scalar(tp, value, path)


def _convert_union(args: tuple[Any, ...], value: object, path: str) -> Any:
    """The first option ``value`` fits. When none fits, an error found inside an option's
    table or list (``value`` had that option's shape) is raised as it is, with its key's path;
    otherwise one error at ``path`` lists every option's problem."""
    if value is None and _NONE in args:
        return None
    errors: list[TypeCheckError] = []
    for option in args:
        if option is _NONE:
            continue
        try:
            return convert(option, value, path)
        except TypeCheckError as err:
            errors.append(err)
    inner = next((err for err in errors if err.path != path), None)
    if inner is not None:
        raise inner
    raise TypeCheckError(path, " or ".join(dict.fromkeys(err.problem for err in errors)))


def _convert_scalar(tp: Any, value: object, path: str) -> Any:
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(value)
        except ValueError:
            choices = ", ".join(repr(m.value) for m in tp)
            raise TypeCheckError(path, f"must be one of {choices}, got {value!r}") from None
    if tp is bool:
        if isinstance(value, bool):
            return value
    elif tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer() and abs(value) <= _EXACT_FLOAT_INT:
            return int(value)
    elif tp is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    elif tp is str:
        if isinstance(value, str):
            return value
    elif tp is _NONE:
        if value is None:
            return None
    else:
        raise TypeError(f"unsupported type {tp!r} at {path}")
    raise TypeCheckError(path, f"expected {_type_name(tp)}, got {_describe(value)}")


def _type_name(tp: Any) -> str:
    names = {str: "a string", int: "an integer", float: "a number", bool: "true or false"}
    return names.get(tp, "null")


def _describe(value: object) -> str:
    if value is None:
        return "null"
    kinds = {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}
    for kind, name in kinds.items():
        if type(value) is kind:
            return f"{name} ({value!r})" if kind is not str or len(str(value)) < 40 else name
    if isinstance(value, Mapping):
        return "a table/object"
    if isinstance(value, list | tuple):
        return "a list"
    return type(value).__name__
