"""The registry's lazy lookup of built-ins, over the packages the root hands it (``curate/compose.py``).

The registry reads the public modules of the packages given to ``hold_builtins`` and imports only the
module that registers a name asked for; which packages those are is the root's to say, so
``curate/core`` names no package above it (``tests/test_layers.py``).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import curate.compose as compose
from curate.core import registry
from curate.core.registry import RegistryError, hold_builtins, holders


@pytest.fixture
def demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A package ``regdemo`` with its own registry (``_reg``), two public modules registering a name each,
    and a private module whose registration is not a built-in. The registry's holders are restored after."""
    pkg = tmp_path / "regdemo"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "_reg.py").write_text(
        'from curate.core.registry import Registry\nTHINGS = Registry("thing", "THINGS")\n'
    )
    for stem, name in (("alpha", "alpha_v1"), ("beta", "beta_v1"), ("_hidden", "hidden_v1")):
        (pkg / f"{stem}.py").write_text(
            textwrap.dedent(f"""\
                from regdemo._reg import THINGS

                @THINGS.add("{name}")
                class Thing:
                    pass
                """)
        )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "_HOLDERS", list(registry._HOLDERS))
    registry.builtin_index.cache_clear()
    import regdemo
    import regdemo._reg

    yield regdemo, regdemo._reg.THINGS
    for name in [m for m in sys.modules if m == "regdemo" or m.startswith("regdemo.")]:
        del sys.modules[name]
    registry.builtin_index.cache_clear()


def test_a_held_package_s_names_are_listed_without_importing_its_modules(demo) -> None:
    pkg, things = demo
    assert things.names() == []  # not held yet: nothing registers a thing
    hold_builtins(pkg)
    assert holders()[-1] == "regdemo"
    assert things.names() == ["alpha_v1", "beta_v1"]  # _hidden.py is private: not a built-in
    assert registry.builtin_index()["THINGS"] == {"alpha_v1": "regdemo.alpha", "beta_v1": "regdemo.beta"}
    assert not {"regdemo.alpha", "regdemo.beta", "regdemo._hidden"} & set(sys.modules)


def test_a_lookup_imports_only_the_module_that_registers_the_name(demo) -> None:
    pkg, things = demo
    hold_builtins(pkg)
    cls = things.get("beta_v1")
    assert (cls.__module__, cls.name) == ("regdemo.beta", "beta_v1")
    assert "regdemo.beta" in sys.modules
    assert "regdemo.alpha" not in sys.modules
    with pytest.raises(RegistryError, match=r"^unknown thing 'hidden_v1'; valid things: alpha_v1, beta_v1$"):
        things.get("hidden_v1")


def test_a_package_held_twice_is_read_once_and_a_module_is_refused(demo) -> None:
    pkg, _ = demo
    before = holders()
    hold_builtins(pkg, pkg)
    hold_builtins(pkg)
    assert holders() == [*before, "regdemo"]
    import regdemo.alpha

    with pytest.raises(TypeError, match=r"^hold_builtins: 'regdemo.alpha' is a module, not a package; give"):
        hold_builtins(regdemo.alpha)


def test_the_root_hands_the_registry_its_packages_of_built_ins() -> None:
    """``import curate`` (which every module of the package runs first) holds the root's packages, in its
    order; the core keeps no list of its own."""
    assert (
        holders()
        == [p.__name__ for p in compose.BUILTIN_PACKAGES]
        == [
            "curate.core",
            "curate.io",
            "curate.filters",
            "curate.dedup",
            "curate.scorers",
            "curate.targeting",
            "curate.proxy.spec",
            "curate.export",
            "curate.report",
        ]
    )
    assert not hasattr(registry, "BUILTIN_PACKAGES")
    assert not hasattr(registry, "BUILTIN_MODULES")
    index = registry.builtin_index()
    assert index["STAGES"]["select"] == "curate.core.select"
    assert index["STAGES"]["gopher_quality_v1"] == "curate.filters.gopher_quality"
    assert index["SOURCES"]["jsonl"] == "curate.io.readers"


def _run(code: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_import_curate_composes_without_loading_numpy_pyarrow_torch_or_a_thread() -> None:
    """The composition runs at ``import curate``, before ``curate`` enters its network namespace and sets
    the allocator (curate/cli.py): it must load none of those libraries and start no thread."""
    code = (
        "import sys, threading, curate\n"
        "from curate.core.registry import holders\n"
        "from curate.runtime.phases import installed\n"
        "print(len(holders()), ','.join(p.name for p in installed()), threading.active_count(),\n"
        "      *(m in sys.modules for m in ('numpy', 'pyarrow', 'torch', 'ray', 'curate.proxy.phase')))\n"
    )
    assert _run(code) == ["9", "proxy,export,report", "1", "False", "False", "False", "False", "False"]


def test_a_pipeline_of_heuristic_filters_loads_no_torch_and_no_phase() -> None:
    """Parsing and building a pipeline of heuristic filters and a dedup imports the modules that register
    its stages, and neither torch nor any phase's module nor the proxy's section parser."""
    code = textwrap.dedent("""\
        import sys
        from curate.pipeline.config import build_stages, parse_pipeline
        text = '''
        name: t
        input: {path: data/*.jsonl, format: jsonl}
        stages:
          - filter: gopher_quality_v1
          - dedup: exact_dedup_v1
        '''
        build_stages(parse_pipeline(text, path='p.yaml'))
        heavy = ('torch', 'transformers', 'curate.proxy.spec.config', 'curate.proxy.phase',
                 'curate.export.phase', 'curate.report.phase', 'curate.scorers.perplexity')
        print(*(m in sys.modules for m in heavy), 'curate.filters.gopher_quality' in sys.modules,
              'curate.dedup.exact' in sys.modules)
        """)
    assert _run(code) == ["False"] * 7 + ["True", "True"]
