"""The one part of the build pyproject.toml cannot declare: the optional C line scanner.

``optional=True``: where no compiler is available the install still succeeds and
cachediag falls back to its pure-Python scanner (same results, slower on large trees).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "cachediag.ingest._scan",
            sources=["cachediag/ingest/_scan.c"],
            optional=True,
        )
    ]
)
