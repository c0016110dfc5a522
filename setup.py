"""The C extension; everything else about the package is in pyproject.toml.

curate.filters._native holds the filters' native kernels (curate/filters/native.py, the one module that
imports it, says which and when they are taken). It is optional: where it cannot be compiled (no C compiler)
the package installs without it and the polars and numpy paths give the same results, slower; the run
manifest's ``native`` field says which path a run took. An editable install (make's) builds it in place,
beside its source. ``make lint`` compiles the C with -Wall -Wextra -Werror.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "curate.filters._native",
            sources=["curate/filters/_native.c"],
            extra_compile_args=["-O2"],
            optional=True,
        )
    ]
)
