"""The import graph of ``curate``: no cycles, and a layered core.

Only module-level imports count (those that run when the module is imported, including the ones under
``if TYPE_CHECKING:``); an import inside a function is a deliberate late binding, e.g. of an optional
dependency. ``python tests/test_layers.py`` prints the core's layers and every core module's imports.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "curate"

# The core, bottom up: a module imports only curate modules of lower layers. The leaves hold the
# contract's data (columns, resources, rules) and the registry; the engine runs work and knows no stage;
# a stage may name the engine in a type hint; select is the one stage built on the others.
CORE_LAYERS = [
    {"curate.schema", "curate.resources", "curate.rules", "curate.registry"},
    {"curate.engine"},
    {"curate.stage"},
    {"curate.select"},
]


def module_names(package: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name, for its __init__)."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def module_imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that ``path`` imports at module level (``from a import b`` counts as
    ``a.b`` when that is a module, else as ``a``)."""
    found: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    found.add(sub if sub in modules else node.module)
            elif isinstance(node, ast.If | ast.Try | ast.With):
                for block in ("body", "orelse", "finalbody"):
                    visit(getattr(node, block, []))
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)

    visit(ast.parse(path.read_text()).body)
    own = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
    return {m for m in found if m in modules and m != own}


def import_graph() -> dict[str, set[str]]:
    modules = module_names()
    return {name: module_imports(path, modules) for name, path in modules.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle (``[a, b, ..., a]``), or None when the graph has none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (cycle := walk(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := walk(node)):
            return cycle
    return None


def test_no_import_cycle_among_curate_modules() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_core_is_layered() -> None:
    graph = import_graph()
    below: set[str] = set()
    for layer in CORE_LAYERS:
        for module in sorted(layer):
            upward = sorted(m for m in graph[module] if m.startswith("curate") and m not in below)
            assert not upward, f"{module} imports {upward}, which are not below it in CORE_LAYERS"
        below |= layer


def test_find_cycle_reports_a_loop() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


if __name__ == "__main__":
    g = import_graph()
    print("cycle:", find_cycle(g))
    for i, layer in enumerate(CORE_LAYERS):
        for m in sorted(layer):
            print(f"layer {i}  {m:16} imports {sorted(g[m]) or '-'}")
