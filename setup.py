"""The optional C extensions: the TREC reader (``ranking.io._trecscan``,
docs/metrics.md#large-files) and trec_eval's join (``ranking.trec_eval._rankjoin``,
docs/trec-eval.md#speed); everything else is configured in pyproject.toml.
``optional=True``: where they cannot be compiled (no C compiler), the install goes on and the
numpy/pyarrow reader of ``ranking.io.trec_fast`` and the numpy join of
``ranking.trec_eval.merge`` are used (the same output)."""

import sys

from setuptools import Extension, setup

# The trec_eval join computes some measures in C, operation for operation as their numpy code:
# no fused multiply-add may change a double (docs/trec-eval.md#speed).
NO_CONTRACTION = [] if sys.platform == "win32" else ["-ffp-contract=off"]
# Linked to libm itself: without it, log2 binds to glibc's oldest symbol version, whose error
# wrapper returns +nan for a negative argument where libm's current log2 (trec_eval's, numpy's)
# returns -nan, and G prints the sign of that nan.
LIBM = [] if sys.platform == "win32" else ["m"]

setup(
    ext_modules=[
        Extension("ranking.io._trecscan", sources=["ranking/io/_trecscan.c"], optional=True),
        Extension(
            "ranking.trec_eval._rankjoin",
            sources=["ranking/trec_eval/_rankjoin.c"],
            extra_compile_args=NO_CONTRACTION,
            libraries=LIBM,
            optional=True,
        ),
    ]
)
