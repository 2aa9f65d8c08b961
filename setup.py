"""The one part of the build pyproject.toml cannot declare: the optional C extensions,
the line scanner, the transcript line picker and (POSIX only: it uses dirent.h) the
folder walk.

``optional=True``: where no compiler is available the install still succeeds and
cachediag falls back to its pure-Python twins (same results, slower on large trees).
"""

import sys

from setuptools import Extension, setup

# An undeclared function would be assumed to return int and truncate a pointer: fail the
# build instead (and fall back to Python) wherever the compiler understands the flag.
STRICT = [] if sys.platform == "win32" else ["-Werror=implicit-function-declaration"]

WALK = [
    Extension(
        "cachediag.ingest._walk",
        sources=["cachediag/ingest/_walk.c"],
        extra_compile_args=STRICT,
        optional=True,
    )
]

setup(
    ext_modules=[
        *([] if sys.platform == "win32" else WALK),
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
    ]
)
