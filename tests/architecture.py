"""The architecture rules, checked on a package tree against its architecture document.

* Every module of the package has one row in a table of the document, ``| `path` | layer | what
  it does |`` (``path`` relative to the package folder, ``layer`` one of ``LAYERS``), and every
  such row names a module that exists. The document is the one place that says a module's layer,
  so it and this check cannot drift apart.
* Imports point down: a module may import modules of its own layer and of the layers below it,
  never above (``core`` <- ``runtime`` <- ``surface``). Every import counts wherever it stands:
  at module level, under ``if TYPE_CHECKING:`` (a type-only import still couples the lower layer
  to the upper one's names), inside a function (a lazy import is an import all the same), and
  relative ones. A module that imports by name (``importlib.import_module``) also refers to every
  module that a string constant of it names exactly.
* Surfaces are siblings: a module of one surface package (``SURFACES``) never imports another
  surface's modules, and a module of a shared package (one that is no surface: ``chat/``,
  ``term/``) imports none at all; only the launcher (``LAUNCHER``, the command line that opens
  each surface) may. Modules at the package's top (its front ``__init__`` and ``__main__``)
  are the package's own face and are not checked.
* Surfaces reach the runtime through its face: a module of a surface-layer package imports
  ``runtime`` (``FACE``) only at its front, and only names its ``__all__`` offers; never a
  submodule past it (``runtime.approvals``: ``from runtime import approvals`` instead) nor the
  library's face for host programs (``api``, ``LIBRARY_FACE``), in any of the forms above.
* No module is longer than ``MODULE_LINES`` lines, and no function or method of a core module
  (nested ones included, each counted from its ``def`` line to its last line) is longer than
  ``CORE_FUNCTION_LINES``.

``problems`` returns every breach as one line that names the file and says what to change.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

LAYERS = ("core", "runtime", "surface")
"""From the bottom up: a layer may import its own modules and those of the layers before it."""
SURFACES = ("acp", "cli", "gateway", "mcp_server", "repl", "server", "tui")
"""The packages of ``src/openheim`` that are surfaces: each one a way a person or a program
reaches the agent."""
LAUNCHER = "cli"
"""The surface that opens the others (``openheim chat``, ``openheim serve``, ...)."""
FACE = "runtime"
"""The package whose front (``__init__`` and its ``__all__``) is all that surfaces may import
of the runtime."""
LIBRARY_FACE = "api"
"""The library's face for host programs: surfaces import ``FACE`` instead."""
MODULE_LINES = 400
MODULE_LINE_LIMITS = {"loop.py": 300}
"""Tighter limits for modules a newcomer must read in one sitting: the agent loop."""
CORE_FUNCTION_LINES = 60

_ROW = re.compile(r"^\|\s*`(?P<path>[^`]+\.py)`\s*\|\s*(?P<layer>[^|]*?)\s*\|(?P<what>.*)\|\s*$")
_BY_NAME = frozenset({"import_module", "__import__"})


@dataclass(frozen=True, slots=True)
class Module:
    """One source file of the package: where it is, its dotted name and its syntax tree."""

    path: str
    """Relative to the package folder, with ``/``: ``providers/base.py``."""
    name: str
    """The dotted name it is imported by: ``openheim.providers.base``."""
    shown: str
    """How messages name it: ``openheim/providers/base.py``."""
    lines: int
    tree: ast.Module


@dataclass(frozen=True, slots=True)
class Table:
    """The layers the document gives, and what is wrong with its rows."""

    layers: dict[str, str]
    """Module path -> layer."""
    problems: list[str]


def read_modules(package: Path) -> dict[str, Module]:
    """Every ``.py`` file under ``package`` (a folder whose name is the package's), by path."""
    modules: dict[str, Module] = {}
    for file in sorted(package.rglob("*.py")):
        relative = file.relative_to(package)
        parts = [package.name, *relative.with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        source = file.read_text(encoding="utf-8")
        path = relative.as_posix()
        modules[path] = Module(
            path=path,
            name=".".join(parts),
            shown=f"{package.name}/{path}",
            lines=len(source.splitlines()),
            tree=ast.parse(source, filename=str(file)),
        )
    return modules


def read_table(document: str) -> Table:
    """The module rows of the document's tables; a row with an unknown layer, a duplicate or no
    description is a problem."""
    layers: dict[str, str] = {}
    problems: list[str] = []
    for number, line in enumerate(document.splitlines(), start=1):
        row = _ROW.match(line.strip())
        if row is None:
            continue
        path, layer, what = row["path"], row["layer"].strip("` "), row["what"].strip()
        where = f"architecture document line {number} (`{path}`)"
        if layer not in LAYERS:
            problems.append(f"{where}: layer {layer!r} is none of {', '.join(LAYERS)}")
        elif path in layers:
            problems.append(f"{where}: the module is listed twice; keep one row")
        elif not what:
            problems.append(f"{where}: say in one sentence what the module does")
        else:
            layers[path] = layer
    return Table(layers, problems)


def problems(package: Path, document: Path) -> list[str]:
    """Every breach of the rules in ``package`` measured against ``document``."""
    modules = read_modules(package)
    table = read_table(document.read_text(encoding="utf-8"))
    return [
        *table.problems,
        *unlisted(modules, table.layers),
        *stale(modules, table.layers),
        *long_modules(modules),
        *long_core_functions(modules, table.layers),
        *upward_imports(modules, table.layers),
        *face_imports(modules, table.layers),
    ]


def unlisted(modules: Mapping[str, Module], layers: Mapping[str, str]) -> list[str]:
    """Modules with no row, each with the row to add (its layer the lowest its imports allow)."""
    by_name = {module.name: module for module in modules.values()}
    found = []
    for path, module in modules.items():
        if path in layers:
            continue
        below = [layers.get(by_name[name].path) for _, name in imports(module, by_name)]
        lowest = max((LAYERS.index(layer) for layer in below if layer), default=0)
        found.append(
            f"{module.shown} is not in the architecture document: add the row "
            f"| `{path}` | {LAYERS[lowest]} | <what it does, in one sentence> |"
        )
    return found


def stale(modules: Mapping[str, Module], layers: Mapping[str, str]) -> list[str]:
    """Rows that name no module of the package."""
    return [
        f"the architecture document lists `{path}`, which does not exist: remove or rename its row"
        for path in layers
        if path not in modules
    ]


def long_modules(modules: Mapping[str, Module]) -> list[str]:
    """Modules over their limit: ``MODULE_LINE_LIMITS`` or else ``MODULE_LINES`` lines."""
    return [
        f"{module.shown} has {module.lines} lines, over {limit}: split it by what it does"
        for module in modules.values()
        if module.lines > (limit := MODULE_LINE_LIMITS.get(module.path, MODULE_LINES))
    ]


def long_core_functions(modules: Mapping[str, Module], layers: Mapping[str, str]) -> list[str]:
    """Functions and methods of core modules over ``CORE_FUNCTION_LINES`` lines."""
    found = []
    for path, module in modules.items():
        if layers.get(path) != "core":
            continue
        for node in ast.walk(module.tree):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > CORE_FUNCTION_LINES:
                found.append(
                    f"{module.shown}:{node.lineno}: {node.name}() has {length} lines, over "
                    f"{CORE_FUNCTION_LINES} for a core function: split it"
                )
    return found


def upward_imports(modules: Mapping[str, Module], layers: Mapping[str, str]) -> list[str]:
    """Imports from a module into a module of a higher layer."""
    by_name = {module.name: module for module in modules.values()}
    found = []
    for path, module in modules.items():
        layer = layers.get(path)
        if layer is None:
            continue
        for line, name in sorted(set(imports(module, by_name))):
            target = by_name[name]
            above = layers.get(target.path)
            if above is not None and LAYERS.index(above) > LAYERS.index(layer):
                found.append(
                    f"{module.shown}:{line}: {layer} module imports {name} ({above}): move the "
                    f"code it needs down to {layer}, or pass it in from above"
                )
    return found


def cross_surface_imports(
    modules: Mapping[str, Module], surfaces: Collection[str], launcher: str
) -> list[str]:
    """Imports from a module of a package into another package that is a surface, except from
    ``launcher`` (modules at the top of the package are not checked)."""
    by_name = {module.name: module for module in modules.values()}
    found = []
    for path, module in modules.items():
        own = _package_of(path)
        if own is None or own == launcher:
            continue
        for line, name in sorted(set(imports(module, by_name))):
            other = _package_of(by_name[name].path)
            if other is not None and other != own and other in surfaces:
                what = "surface" if own in surfaces else "shared package"
                found.append(
                    f"{module.shown}:{line}: {what} {own} imports {name} of the surface "
                    f"{other}: move what both need to a shared package, or let {launcher} "
                    "pass it in"
                )
    return found


def face_imports(modules: Mapping[str, Module], layers: Mapping[str, str]) -> list[str]:
    """Imports from a module of a surface-layer package past the runtime's face: a submodule of
    ``FACE``, a name its ``__all__`` does not offer, or ``LIBRARY_FACE``."""
    by_name = {module.name: module for module in modules.values()}
    front = modules.get(f"{FACE}/__init__.py")
    if front is None:
        return []
    offered = _all_of(front)
    library = front.name.rpartition(".")[0] + f".{LIBRARY_FACE}"
    found = []
    for path, module in modules.items():
        if layers.get(path) != "surface" or _package_of(path) is None:
            continue
        for line, name, what in sorted(set(_references(module, by_name, front.name))):
            if name == library or name.startswith(f"{library}."):
                fix = f"{name} is the library's face for host programs: import from {front.name}"
            elif name.startswith(f"{front.name}."):
                fix = f"{name} is past the runtime's face: import it through {front.name}"
            elif name == front.name and what and what not in offered:
                fix = (
                    f"{front.name} does not offer {what} (its __all__): add it there if surfaces "
                    "need it, or keep it inside the runtime"
                )
            else:
                continue
            found.append(f"{module.shown}:{line}: surface module imports {fix}")
    return found


def _references(
    module: Module, by_name: Mapping[str, Module], face: str
) -> Iterator[tuple[int, str, str]]:
    """``(line, module name, name)`` for each import of ``module``: the name it takes from
    ``face`` (``from face import name``), else ``""`` with the module it imports."""
    taken = set()
    for node in ast.walk(module.tree):
        if isinstance(node, ast.ImportFrom) and _absolute(module, node) == face:
            for alias in node.names:
                taken.add((node.lineno, f"{face}.{alias.name}"))
                yield node.lineno, face, alias.name
    for line, name in imports(module, by_name):
        if name != face and (line, name) not in taken:
            yield line, name, ""


def _all_of(module: Module) -> frozenset[str]:
    """The names a module's ``__all__ = [...]`` lists."""
    for node in module.tree.body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(name, ast.Name) and name.id == "__all__" for name in node.targets)
            and isinstance(node.value, ast.List | ast.Tuple)
        ):
            return frozenset(
                item.value
                for item in node.value.elts
                if isinstance(item, ast.Constant) and isinstance(item.value, str)
            )
    return frozenset()


def _package_of(path: str) -> str | None:
    """The top folder of a module path (``tui`` of ``tui/app.py``); None at the top."""
    folder, slash, _ = path.partition("/")
    return folder if slash else None


def imports(module: Module, by_name: Mapping[str, Module]) -> Iterator[tuple[int, str]]:
    """``(line, module name)`` for each module of the package that ``module`` refers to."""
    by_string = False
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield from _known(node.lineno, alias.name, by_name)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, node)
            for alias in node.names:
                inner = f"{base}.{alias.name}"
                yield from _known(node.lineno, inner if inner in by_name else base, by_name)
        elif isinstance(node, ast.Name | ast.Attribute):
            by_string = (
                by_string or (node.id if isinstance(node, ast.Name) else node.attr) in _BY_NAME
            )
    if by_string:
        for node in ast.walk(module.tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and node.value in by_name
            ):
                yield node.lineno, node.value


def _absolute(module: Module, node: ast.ImportFrom) -> str:
    """The module a ``from ... import`` reads from, relative imports resolved."""
    if node.level == 0:
        return node.module or ""
    package = module.name.split(".")
    if not module.path.endswith("__init__.py"):
        package.pop()
    package = package[: len(package) - (node.level - 1)]
    return ".".join([*package, *([node.module] if node.module else [])])


def _known(line: int, name: str, by_name: Mapping[str, Module]) -> Iterator[tuple[int, str]]:
    """``name``, or the nearest package above it, if it is a module of the package."""
    while name and name not in by_name:
        name = name.rpartition(".")[0]
    if name:
        yield line, name


# Planted breaches, in a package ``pkg`` under tmp_path with its own document.

DOCUMENT_HEAD = "# pkg\n\n| module | layer | what it does |\n| --- | --- | --- |\n"


def plant(tmp_path: Path, files: dict[str, str], rows: dict[str, str]) -> list[str]:
    """Write ``files`` into ``tmp_path/pkg``, a document with ``rows`` (path -> layer), and
    return what the rules find."""
    package = tmp_path / "pkg"
    for path, source in {"__init__.py": "", **files}.items():
        (package / path).parent.mkdir(parents=True, exist_ok=True)
        (package / path).write_text(textwrap.dedent(source), encoding="utf-8")
    lines = [f"| `{path}` | {layer} | Does its part. |" for path, layer in rows.items()]
    document = tmp_path / "architecture.md"
    document.write_text(DOCUMENT_HEAD + "\n".join(lines) + "\n", encoding="utf-8")
    return problems(package, document)
