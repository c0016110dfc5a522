"""The test suite's own layout, checked so that it cannot rot.

* every folder of Python files under tests/ is a package (``__init__.py``), so a test module has one name
  (``tests.dedup.test_exact``) however pytest or a subprocess imports it;
* shared code is imported one way, by its full name: ``from tests.helpers import ...``,
  ``from tests.<pkg>.<module> import ...``; never ``from conftest import ...`` (fixtures reach tests by
  pytest, not by import), never from another ``test_*`` module, never relatively or by a bare sibling name.

Imports are read with ``ast``, including those nested in functions and those in code kept in a plain
string literal for a subprocess (``python -c PROBE``); a ``tests.*`` module imported must exist.
"""

from __future__ import annotations

import ast
import importlib.util
import textwrap
from collections.abc import Iterator
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
PY_FILES = sorted(TESTS.rglob("*.py"))
# Modules and packages that live under tests/: importing one by its bare name means sys.path tricks
# (unless the name is also a real module elsewhere, e.g. the stdlib's io next to tests/io).
LOCAL_NAMES = {p.stem for p in PY_FILES if p.stem != "__init__"} | {p.parent.name for p in PY_FILES}


def _bare_local(name: str) -> bool:
    """``name`` (a top-level module name) is only found as a file or folder under tests/."""
    if name == "tests" or name not in LOCAL_NAMES:
        return False
    spec = importlib.util.find_spec(name)
    return spec is None or TESTS in Path(spec.origin or "").parents


FIX = (
    "move what is shared into tests/helpers.py or a helper module of the package (not named test_*), "
    "fixtures into a conftest.py, and import it as `from tests.<pkg>.<module> import ...`"
)


def _code_blocks(path: Path) -> Iterator[tuple[int, ast.AST]]:
    """The file's syntax tree, then each multi-line string literal that parses as Python with an import in
    it (a subprocess's script); yields (line offset, tree)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    yield 0, tree
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and "import " in node.value
            and "\n" in node.value
        ):
            try:
                sub = ast.parse(textwrap.dedent(node.value))
            except SyntaxError:
                continue
            yield node.lineno - 1, sub


def _imports(path: Path) -> Iterator[tuple[int, int, str, list[str]]]:
    """Every import in ``path``: (line, relative level, module, imported names)."""
    for offset, tree in _code_blocks(path):
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield offset + node.lineno, 0, alias.name, []
            elif isinstance(node, ast.ImportFrom):
                yield offset + node.lineno, node.level, node.module or "", [a.name for a in node.names]


def _module_file(dotted: str) -> Path | None:
    """The file of module ``tests.a.b`` (``tests/a/b.py`` or ``tests/a/b/__init__.py``), None if neither."""
    base = ROOT.joinpath(*dotted.split("."))
    for p in (base.with_suffix(".py"), base / "__init__.py"):
        if p.exists():
            return p
    return None


def _problem(level: int, module: str, names: list[str]) -> str | None:
    """What is wrong with ``from <level dots><module> import <names>`` (``import <module>`` when no names)."""
    parts = module.split(".") if module else [""]
    stmt = f"{'.' * level}{module}" + (f" import {', '.join(names)}" if names else "")
    test_modules = [
        m for m in [module] + [f"{module}.{n}" for n in names] if m.split(".")[-1].startswith("test_")
    ]
    if level:
        return f"relative import `from {stmt}`; use the full name `tests.<pkg>.<module>`"
    if "conftest" in parts or (parts[0] == "tests" and "conftest" in names):
        return f"imports a conftest (`{stmt}`); {FIX}"
    if test_modules:
        return f"imports the test module `{test_modules[0]}`; {FIX}"
    if _bare_local(parts[0]):
        return f"bare import of a tests/ module (`{stmt}`); use the full name `tests.<pkg>.<module>`"
    if parts[0] == "tests" and _module_file(module) is None:
        return f"`{module}` does not exist under tests/"
    return None


def _problems(path: Path) -> list[tuple[int, str]]:
    """(line, what is wrong) for each import in ``path`` that breaks the rules in this module's docstring."""
    found = [(line, _problem(level, module, names)) for line, level, module, names in _imports(path)]
    return [(line, msg) for line, msg in found if msg]


def test_every_test_folder_is_a_package() -> None:
    # Each folder holding Python files, and every folder between it and tests/ (else tests.a.b is no package).
    folders = sorted({d for p in PY_FILES for d in [p.parent, *p.parent.parents] if TESTS in [d, *d.parents]})
    missing = [str(d.relative_to(ROOT)) for d in folders if not (d / "__init__.py").exists()]
    assert missing == [], f"folders of test code without __init__.py (add an empty one): {missing}"


def test_shared_code_is_imported_by_its_full_name_never_from_conftest_or_a_test_module() -> None:
    problems = [f"{p.relative_to(ROOT)}:{line}: {msg}" for p in PY_FILES for line, msg in _problems(p)]
    assert problems == [], "\n".join(problems)


def test_the_check_sees_each_kind_of_bad_import(tmp_path: Path) -> None:
    """The checker itself, on a file with one import of each forbidden kind (and allowed ones)."""
    bad = tmp_path / "test_bad.py"
    lines = [  # one per line, no newline in any: the scan of this file's own strings skips them
        "from conftest import make_table",
        "from tests.conftest import corpora_path",
        "from tests.test_runner import write_inputs",
        "from tests.reliability import test_security",
        "from .toy import doc",
        "from dedup_helpers import split",
        "from tests.helpers import make_table",
        "from tests.proxy.toy import doc",
        "import pytest",
        "SCRIPT = '''",
        "import sys",
        "from test_train import _cfg",
        "'''",
        "def f():",
        "    from tests.no_such_module import x",
        "import io",  # the stdlib, though tests/io exists
    ]
    bad.write_text("\n".join(lines) + "\n")
    got = [(line, msg.split("; ")[0]) for line, msg in _problems(bad)]
    assert got == [
        (1, "imports a conftest (`conftest import make_table`)"),
        (2, "imports a conftest (`tests.conftest import corpora_path`)"),
        (3, "imports the test module `tests.test_runner`"),
        (4, "imports the test module `tests.reliability.test_security`"),
        (5, "relative import `from .toy import doc`"),
        (6, "bare import of a tests/ module (`dedup_helpers import split`)"),
        (15, "`tests.no_such_module` does not exist under tests/"),
        (12, "imports the test module `test_train`"),
    ]
