"""The one part of the build pyproject.toml cannot declare: the optional C extensions,
the line scanner, the transcript line picker and the JSON line encoder.

``optional=True``: where no compiler is available the install still succeeds and
cachediag falls back to its pure-Python twins (same results, slower on large trees).
"""

import sys

from setuptools import Extension, setup

# An undeclared function would be assumed to return int and truncate a pointer: fail the
# build instead (and fall back to Python) wherever the compiler understands the flag.
STRICT = [] if sys.platform == "win32" else ["-Werror=implicit-function-declaration"]

setup(
    ext_modules=[
        Extension(
            "cachediag.ingest._scan",
            sources=["cachediag/ingest/_scan.c"],
            extra_compile_args=STRICT,
            optional=True,
        ),
        Extension(
            "cachediag.ingest._fields",
            sources=["cachediag/ingest/_fields.c"],
            extra_compile_args=STRICT,
            optional=True,
        ),
        Extension(
            "cachediag.report._json",
            sources=["cachediag/report/_json.c"],
            extra_compile_args=STRICT,
            optional=True,
        ),
    ]
)
