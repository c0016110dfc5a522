"""The import graph of ``curate``: no cycles, and packages in the order docs/design.md gives them.

Every import counts: module level, under ``if TYPE_CHECKING:``, and inside functions (a late import hides
a dependency; it does not remove it). A package may import only packages of lower layers in
:data:`PACKAGE_LAYERS`; inside ``curate.core`` a module imports only modules of lower layers in
:data:`CORE_LAYERS`. ``python tests/test_layers.py`` prints every breach and the first cycle found.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "curate"

# The packages, bottom up (docs/design.md, section 1). Packages in one layer do not import each other.
PACKAGE_LAYERS: list[set[str]] = [
    {"core"},  # stage contract, registry, rules, schema, resources, select, engine, errors
    {"io"},  # sources, readers, storage, run files, atomic writes, integrity
    {"filters", "dedup", "classify"},  # stages, and the fastText classifier they share
    {"instrument"},  # the proxy LM: tokenizer, model, training, streams, evaluation, eval sets
    {"targeting"},  # target samples and the scorers' fits to them
    {"scorers"},  # model-based stages (some use the instrument or a target fit)
    {"pipeline"},  # YAML -> typed config, key locations, validation
    {"runtime"},  # runner, segments, manifest, phases, context, process settings
    {"goodput"},  # goodput.json as one typed, versioned object; the interval -> call rule
    {"proxy", "export", "report", "plan"},  # the phases and the cost model
    {"verbs"},  # support code of the CLI's verbs on finished runs
    {"<root>"},  # curate/__init__, __main__, api, cli
]

# Inside curate.core, bottom up: the leaves hold the contract's data (errors, columns, resources, rules),
# then typed configuration (params) and the registry; the engine runs work and knows no stage; select is
# the one stage built on the others.
CORE_LAYERS: list[set[str]] = [
    {"curate.core", "curate.core.errors", "curate.core.schema", "curate.core.resources", "curate.core.rules"},
    {"curate.core.params"},
    {"curate.core.registry", "curate.core.partition"},
    {"curate.core.engine_base"},
    {"curate.core.ray_connect"},
    {"curate.core.ray_engine"},
    {"curate.core.engine"},
    {"curate.core.stage"},
    {"curate.core.select"},
]


# Inside curate.proxy (the measurement), bottom up: leaf modules (its errors, the paired statistics' library
# wrappers, the mixture regression), the statistics built on them, the recipe and control kinds, the proxy:
# section's spec, the training data, the analysis that assembles goodput.json, the designers of experiments
# (one measurement, successive halving, ablation, search, mixtures), and the phase and verbs on top.
PROXY_LAYERS: list[set[str]] = [
    {"curate.proxy.errors", "curate.proxy.stats"},
    {"curate.proxy.statistics"},
    {"curate.proxy.mixfit"},
    {"curate.proxy.kinds"},
    {"curate.proxy.spec"},
    {"curate.proxy.data"},
    {"curate.proxy.assembly"},
    {"curate.proxy.design"},
    {"curate.proxy.phase"},
    {"curate.proxy.cli"},
    {"curate.proxy.mixcli"},
    {"curate.proxy"},
]
MAX_MODULES = 20  # a package (or subpackage) holding more modules than this is a flat room: split it


# Modules that may import a module of the package by a name written as a string (an importlib.import_module
# or __import__ call on a literal or an f-string starting with "curate."), with why: none. Such an arrow is
# invisible to the checks above; the root composes the phases, the verbs and the packages of built-ins with
# import statements instead (curate/compose.py, curate/cli.py). The registry's lazy lookup,
# ``importlib.import_module(module)`` in curate/core/registry.py, takes a name it derived from a package the
# root imported and handed it (``hold_builtins``), so the arrow is the root's import.
STRING_IMPORTS_ALLOWED: dict[str, str] = {}
IMPORT_CALLS = ("import_module", "__import__")


def module_names(package: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name, for its __init__)."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def module_imports(path: Path, modules: dict[str, Path], root: Path = PACKAGE) -> set[str]:
    """The package's modules that ``path`` imports anywhere in its source (``from a import b`` counts as
    ``a.b`` when that is a module, else as ``a``; an unknown dotted name as its closest known parent)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in modules else node.module)
    own = ".".join(path.relative_to(root.parent).with_suffix("").parts).removesuffix(".__init__")
    out = set()
    for name in found:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        if name and name != own:
            out.add(name)
    return out


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    modules = module_names(package)
    return {name: module_imports(path, modules, package) for name, path in modules.items()}


def package_of(module: str, package: Path = PACKAGE) -> str:
    """``curate.core.stage`` -> ``core``; a module at the package root (or the package itself) -> ``<root>``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and (package / parts[1]).is_dir() else "<root>"


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle (``[a, b, ..., a]``), or None when the graph has none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
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


def package_breaches(
    graph: dict[str, set[str]], layers: list[set[str]], package: Path = PACKAGE
) -> list[str]:
    """Every import of a package from one of the same or a higher layer (``a.b -> c.d``), and every
    package that is in no layer."""
    rank = {name: i for i, layer in enumerate(layers) for name in layer}
    top = package.name
    out = []
    for module, deps in sorted(graph.items()):
        src = package_of(module, package)
        if src not in rank:
            out.append(f"{module}: package {src!r} is in no layer")
            continue
        for dep in sorted(deps):
            dst = package_of(dep, package)
            if dst == src and dep != top:
                continue
            if dep == top and src != "<root>":
                out.append(f"{module} -> {dep} (the package's __init__, which imports the API)")
            elif dst != src and rank.get(dst, len(layers)) >= rank[src]:
                out.append(f"{module} -> {dep} ({src} is not above {dst})")
    return out


def _leading_text(node: ast.expr) -> str | None:
    """The text a string expression starts with, when it starts with a literal: ``"a.b"``, ``f"a.{x}"``,
    ``"a." + x``, ``"a.%s" % x``, ``"a.{}".format(x)``; None otherwise."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values:
        return _leading_text(node.values[0])
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mod):
        return _leading_text(node.left)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        return _leading_text(node.func.value)
    return None


def string_imports(path: Path, top: str = PACKAGE.name) -> list[str]:
    """``LINE: CALL`` for every ``import_module`` / ``__import__`` call (bare or as an attribute, e.g.
    ``importlib.import_module``) whose module argument is text starting with the package's name."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        called = (
            func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        )
        if called not in IMPORT_CALLS:
            continue
        args = [*node.args[:1], *(k.value for k in node.keywords if k.arg == "name")]
        text = _leading_text(args[0]) if args else None
        if text is not None and re.match(rf"{re.escape(top)}(\.|$)", text):
            out.append(f"{node.lineno}: {ast.unparse(node)}")
    return out


def docstrings(tree: ast.AST) -> set[int]:
    """The ``id`` of every docstring node of a module, class or function."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def upward_names(module: str, path: Path, package: Path = PACKAGE) -> list[str]:
    """``LINE: NAME`` for every dotted name of the package above ``module`` (a ``curate.core`` module) held
    in a string of its code: a package other than ``core``, or a core module not below it in
    :data:`CORE_LAYERS`. Docstrings are documentation and are not read; f-strings are, piece by piece."""
    top = package.name
    rank = {name: i for i, layer in enumerate(CORE_LAYERS) for name in layer}
    tree = ast.parse(path.read_text())
    skip = docstrings(tree)
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or id(node) in skip:
            continue
        for found in re.finditer(rf"\b{re.escape(top)}\.\w+(?:\.\w+)*", node.value):
            name = found.group()
            parts = name.split(".")
            named = ".".join(parts[:3])
            if parts[1] != "core" or (
                named != module and rank.get(named, len(CORE_LAYERS)) >= rank.get(module, 0)
            ):
                out.append((node.lineno, name))
    return [f"{line}: {name}" for line, name in sorted(out)]


def test_no_import_cycle_among_curate_modules() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_no_import_cycle_among_curate_packages() -> None:
    graph = import_graph()
    packages: dict[str, set[str]] = {}
    for module, deps in graph.items():
        src = package_of(module)
        packages.setdefault(src, set()).update(package_of(d) for d in deps if package_of(d) != src)
    cycle = find_cycle(packages)
    assert cycle is None, "package cycle: " + " -> ".join(cycle or [])


def test_packages_import_only_lower_layers() -> None:
    breaches = package_breaches(import_graph(), PACKAGE_LAYERS)
    assert not breaches, "imports against docs/design.md's package order:\n" + "\n".join(breaches)


def test_every_package_has_a_layer() -> None:
    found = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()} | {"<root>"}
    assert found == set().union(*PACKAGE_LAYERS)


def test_core_is_layered() -> None:
    graph = import_graph()
    core = {m for m in graph if package_of(m) == "core"}
    assert core == set().union(*CORE_LAYERS), "a core module is missing from CORE_LAYERS"
    below: set[str] = set()
    for layer in CORE_LAYERS:
        for module in sorted(layer):
            upward = sorted(m for m in graph[module] if m not in below)
            assert not upward, f"{module} imports {upward}, which are not below it in CORE_LAYERS"
        below |= layer


def proxy_unit(module: str) -> str | None:
    """The unit of :data:`PROXY_LAYERS` a ``curate.proxy`` module belongs to: its subpackage, or itself."""
    parts = module.split(".")
    if parts[:2] != ["curate", "proxy"]:
        return None
    if len(parts) >= 3 and (PACKAGE / "proxy" / parts[2]).is_dir():
        return ".".join(parts[:3])
    return module


def test_the_measurement_is_layered() -> None:
    """curate.proxy's subpackages import only those below them in PROXY_LAYERS (each module of a
    subpackage may import the others of its own subpackage)."""
    graph = import_graph()
    rank = {unit: i for i, layer in enumerate(PROXY_LAYERS) for unit in layer}
    units = {u for m in graph if (u := proxy_unit(m))}
    assert units == set(rank), f"curate.proxy units missing from PROXY_LAYERS: {sorted(units - set(rank))}"
    breaches = [
        f"{m} -> {d}"
        for m, deps in sorted(graph.items())
        if (u := proxy_unit(m))
        for d in sorted(deps)
        if (v := proxy_unit(d)) and v != u and rank[v] >= rank[u]
    ]
    assert not breaches, "imports against PROXY_LAYERS:\n" + "\n".join(breaches)


def test_no_package_is_a_flat_room() -> None:
    crowded = {
        str(d.relative_to(PACKAGE.parent)): n
        for d in [PACKAGE, *(p for p in PACKAGE.rglob("*") if (p / "__init__.py").exists())]
        if (n := len([f for f in d.glob("*.py") if f.name != "__init__.py"])) > MAX_MODULES
    }
    assert not crowded, f"packages with more than {MAX_MODULES} modules: {crowded}"


def test_no_module_imports_the_package_by_a_string() -> None:
    """Every arrow between the package's modules is an import statement the checks above read: no
    ``import_module("curate.x")`` / ``import_module(f"curate.{name}.phase")`` / ``__import__`` (but in
    :data:`STRING_IMPORTS_ALLOWED`, each of which must still do it)."""
    found = {m: hits for m, path in module_names().items() if (hits := string_imports(path))}
    unexplained = [
        f"{m}:{hit}" for m, hits in sorted(found.items()) if m not in STRING_IMPORTS_ALLOWED for hit in hits
    ]
    assert not unexplained, "imports by a string, which the layer checks cannot see:\n" + "\n".join(
        unexplained
    )
    assert set(STRING_IMPORTS_ALLOWED) <= set(found), "allowed string imports that no longer exist"


def test_core_names_no_package_above_it() -> None:
    """A core module holds no dotted name of a package above it (nor of a core module above it) in a
    string: such a name is an arrow the import checks cannot see (the list of packages holding built-ins is
    handed to the registry by the root, ``curate/compose.py``)."""
    modules = module_names()
    found = [
        f"{m}:{hit}"
        for m, path in sorted(modules.items())
        if package_of(m) == "core"
        for hit in upward_names(m, path)
    ]
    assert not found, "upward names in curate/core:\n" + "\n".join(found)


def test_the_string_checks_see_each_form(tmp_path: Path) -> None:
    """An import by a literal, an f-string, a concatenation, ``%`` and ``format``, bare or through
    ``importlib``, is found; one of another package, or of a name held in a variable, is not. In the core,
    a code string naming a package above (or a core module above) is found, a docstring naming one is not."""
    src = tmp_path / "m.py"
    src.write_text(
        "import importlib\n"
        "from importlib import import_module\n"
        "importlib.import_module(f'curate.{name}.phase')\n"
        "import_module('curate.proxy')\n"
        "__import__('curate.' + name)\n"
        "importlib.import_module('curate.%s.cli' % name)\n"
        "importlib.import_module(name='curate.{}'.format(name))\n"
        "importlib.import_module(f'{__name__}.{name}')\n"
        "importlib.import_module('numpy')\n"
        "importlib.import_module('curated.x')\n"
        "importlib.import_module(module)\n"
    )
    assert [hit.split(":")[0] for hit in string_imports(src)] == ["3", "4", "5", "6", "7"]
    core = tmp_path / "registry.py"
    core.write_text(
        '"""Read by curate.pipeline.config (a docstring)."""\n'
        "PACKAGES = ['curate.io', 'curate.proxy.spec']\n"
        "MODULES = ['curate.core.select', 'curate.core.errors']\n"
        "where = f'curate.export.{name}'\n"
        "def f():\n"
        '    """Not this: curate.report."""\n'
        "    return 'curate.report'\n"
    )
    assert upward_names("curate.core.registry", core) == [
        "2: curate.io",
        "2: curate.proxy.spec",
        "3: curate.core.select",
        "4: curate.export",
        "7: curate.report",
    ]


def test_find_cycle_reports_a_loop() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_checks_see_a_late_import_that_breaks_the_order(tmp_path: Path) -> None:
    """A tree whose low package imports a high one inside a function, and a TYPE_CHECKING circle: both
    found (the checks read every import, not only those that run at import time)."""
    pkg = tmp_path / "curate"
    for sub in ("core", "pipeline"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "core" / "a.py").write_text("def f():\n    from curate.pipeline.b import g\n    return g\n")
    (pkg / "pipeline" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from curate.pipeline import c\n"
    )
    (pkg / "pipeline" / "c.py").write_text("import curate.pipeline.b\n")
    graph = import_graph(pkg)
    assert graph["curate.core.a"] == {"curate.pipeline.b"}
    assert package_breaches(graph, [{"core"}, {"pipeline"}, {"<root>"}], pkg) == [
        "curate.core.a -> curate.pipeline.b (core is not above pipeline)"
    ]
    assert find_cycle(graph) == ["curate.pipeline.b", "curate.pipeline.c", "curate.pipeline.b"]


if __name__ == "__main__":
    g = import_graph()
    print("module cycle:", find_cycle(g))
    print("\n".join(package_breaches(g, PACKAGE_LAYERS)) or "no breach of the package order")
    for name, path in module_names().items():
        for hit in string_imports(path):
            print(f"{name}:{hit} (an import by a string)")
