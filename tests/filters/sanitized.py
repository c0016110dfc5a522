"""Run pytest with the native module taken from another build of it (``make test-native-sanitized``).

    python tests/filters/sanitized.py BUILD.so [pytest arguments...]

``make`` builds ``curate/filters/_native.c`` with AddressSanitizer and UndefinedBehaviorSanitizer into
``build/asan/`` and runs this under ``LD_PRELOAD`` of the ASan runtime. The extension in BUILD.so is
loaded as ``curate.filters._native`` before anything imports curate, so every import of it (the facade's,
:mod:`curate.filters.native`) gets that build, not the one ``pip install -e .`` put beside its source
(the repository root comes first on pytest's path). The run prints the loaded module's file and fails
unless it is BUILD.so and the facade holds it.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys

NAME = "curate.filters._native"


def load(path: str) -> object:
    """Load the extension at ``path`` as :data:`NAME` (into ``sys.modules``)."""
    if NAME in sys.modules:
        raise SystemExit(f"{NAME} was imported before the build at {path} could be loaded")
    loader = importlib.machinery.ExtensionFileLoader(NAME, path)
    spec = importlib.util.spec_from_file_location(NAME, path, loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[NAME] = module
    loader.exec_module(module)
    return module


def main(argv: list[str]) -> int:
    if not argv:
        raise SystemExit(__doc__)
    path = os.path.abspath(argv[0])
    module = load(path)
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    from curate.filters import native

    loaded = getattr(native.module(), "__file__", None)
    with open("/proc/self/maps") as fh:
        asan = sorted({line.split()[-1] for line in fh if "libasan" in line})
    print(f"{NAME} loaded from {loaded}; ASan runtime: {', '.join(asan) or 'none'}", flush=True)
    if native.module() is not module or loaded != path:
        print(f"the facade holds {loaded}, not the build at {path}", file=sys.stderr)
        return 2
    import pytest

    code = int(pytest.main(argv[1:]))
    if sys.modules.get(NAME) is not module or native.module() is not module:
        print(f"{NAME} was replaced during the run", file=sys.stderr)
        return 2
    print(f"{NAME} after the run: {native.module().__file__}", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
