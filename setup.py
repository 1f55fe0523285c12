"""The optional C extension of the TREC reader (``ranking.io._trecscan``,
docs/metrics.md#large-files); everything else is configured in pyproject.toml.
``optional=True``: where it cannot be compiled (no C compiler), the install goes on and the
numpy/pyarrow reader of ``ranking.io.trec_fast`` is used."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("ranking.io._trecscan", sources=["ranking/io/_trecscan.c"], optional=True)
    ]
)
