"""The C extension; everything else about the package is in pyproject.toml.

curate.filters._native is the native word split (curate/filters/words.py says what it does). It is
optional: where it cannot be compiled (no C compiler) the package installs without it and the polars path
gives the same words, slower. An editable install (make's) builds it in place, beside its source.
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
