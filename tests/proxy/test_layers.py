"""The proxy package's two layers (issue 21, item 7): the instrument (tokenizer, model, training,
evaluation, streams, token shards) and the experiment built on it (config, recipes, controls, statistics,
ladder, search, ablation, the report's inputs). The instrument imports nothing of the experiment, and
no module of the package is in an import circle. Imports are read from the source (function-level ones
included, ``if TYPE_CHECKING:`` blocks excluded), so a lazy import inside a function counts too."""

from __future__ import annotations

import ast
from pathlib import Path

import curate

ROOT = Path(curate.__file__).resolve().parent
INSTRUMENT = {
    "tokenizer", "model", "decoder", "fused_ce", "schedule", "device", "train", "evaluate", "hashing", "grams",
    "shards", "runs", "choice",
}  # fmt: skip


def _modules() -> dict[str, Path]:
    out = {}
    for p in ROOT.rglob("*.py"):
        parts = ("curate", *p.relative_to(ROOT).with_suffix("").parts)
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    return out


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(path: Path, mods: dict[str, Path]) -> set[str]:
    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        if _type_checking(node):
            return
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            subs = [a.name for a in node.names if f"{node.module}.{a.name}" in mods]
            out.update(f"{node.module}.{s}" for s in subs)
            if node.module in mods and len(subs) < len(node.names):
                out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in mods)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text()))
    return out


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    return {m: _imports(p, mods) for m, p in mods.items()}


def _closure(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        m = todo.pop()
        for n in graph.get(m, ()):
            if n not in seen:
                seen.add(n)
                todo.append(n)
    return seen


def test_the_instrument_imports_nothing_of_the_experiment():
    graph = _graph()
    proxy = {m.rsplit(".", 1)[1] for m in graph if m.startswith("curate.proxy.")}
    assert proxy >= INSTRUMENT, INSTRUMENT - proxy
    for name in sorted(INSTRUMENT):
        reached = {
            m.rsplit(".", 1)[1]
            for m in _closure(graph, f"curate.proxy.{name}")
            if m.startswith("curate.proxy.")
        }
        assert reached <= INSTRUMENT, (
            f"curate.proxy.{name} reaches the experiment: {sorted(reached - INSTRUMENT)}"
        )


def test_no_proxy_module_is_in_an_import_circle():
    graph = _graph()
    for m in sorted(graph):
        if m.startswith("curate.proxy"):
            assert m not in _closure(graph, m), f"{m} imports itself back (an import circle)"


def test_the_check_sees_a_circle_and_a_layer_breach(tmp_path):
    """The reader the two tests use finds a function-level import and skips TYPE_CHECKING ones."""
    src = tmp_path / "m.py"
    src.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from curate.proxy.config import X\n"
        "def f():\n    from curate.proxy.phase import run_phase\n"
    )
    assert _imports(src, _modules()) == {"curate.proxy.phase"}
