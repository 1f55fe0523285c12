"""C's ``atol`` and ``atof`` as trec_eval reads its numbers (options, parameters, lenient
input), in a module that imports neither numpy nor the readers: the command line is parsed
with it before numpy is imported, while the compiled join already reads the files
(:mod:`ranking.trec_eval.prefetch`, docs/trec-eval.md#speed)."""

from __future__ import annotations

import re

__all__ = ["c_atof", "c_atol"]

_INT = re.compile(rb"[ \t\n\v\f\r]*[+-]?\d+")
_FLOAT = re.compile(
    rb"[ \t\n\v\f\r]*[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan)",
    re.IGNORECASE,
)


def c_atol(text: bytes) -> int:
    """C ``atol``: the longest integer prefix, 0 when there is none."""
    match = _INT.match(text)
    return int(match.group().strip()) if match else 0


def c_atof(text: bytes) -> float:
    """C ``atof`` for decimal text: the longest number prefix, 0.0 when there is none."""
    match = _FLOAT.match(text)
    return float(match.group().strip()) if match else 0.0
