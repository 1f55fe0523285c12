"""Measure parameters as trec_eval 10.0 reads them (``meas_init.c``) and the value names they
give (``P_5``, ``iprec_at_recall_0.10``, ``ndcg_1=3,2=9``...).

- cutoffs (``P.5,10``): comma-separated, read with ``atol``, sorted; a cutoff ≤ 0 or a
  repeated one is an error. Names: ``P_5``.
- fractional cutoffs (``iprec_at_recall.0,.5``): ``atof``, sorted, no repeats. Names
  ``%s_%3.2f``: ``iprec_at_recall_0.50``.
- numbers (``utility.1,-1,0,0``, ``11pt_avg``, ``set_F``): ``atof``, in the given order; the
  single value is named with the parameter text appended (``utility_1,-1,0,0``).
- pairs (``ndcg.1=3,2=9``, ``rbp.p=0.8``): ``name=value`` items; named likewise.
"""

from __future__ import annotations

from collections.abc import Sequence

from ranking.trec_eval.c_numbers import c_atof, c_atol
from ranking.trec_eval.errors import TrecEvalError

__all__ = ["double_cutoffs", "double_params", "long_cutoffs", "pair_params"]


def _items(text: str) -> list[bytes]:
    return [item.encode() for item in text.split(",")]


def long_cutoffs(text: str) -> list[int]:
    cutoffs = sorted(c_atol(item) for item in _items(text))
    if cutoffs[0] <= 0:
        raise TrecEvalError("trec_eval: Negative cutoff detected")
    if len(set(cutoffs)) != len(cutoffs):
        raise TrecEvalError("trec_eval: duplicate cutoffs detected")
    return cutoffs


def double_cutoffs(text: str) -> list[float]:
    cutoffs = sorted(c_atof(item) for item in _items(text))
    if len(set(cutoffs)) != len(cutoffs):
        raise TrecEvalError("trec_eval: duplicate cutoffs detected")
    return cutoffs


def double_params(text: str) -> list[float]:
    return [c_atof(item) for item in _items(text)]


def pair_params(text: str) -> list[tuple[str, float]]:
    """``a=1,b=2`` → ``[("a", 1.0), ("b", 2.0)]``; trec_eval's check: every item has one ``=``
    (its scan stops at the first ``,,`` or ``==``)."""
    last = ","
    for char in text:
        if char == ",":
            if last == ",":
                break
            last = ","
        elif char == "=":
            if last == "=":
                last = ","
                break
            last = "="
    if last != "=":
        raise TrecEvalError(f"trec_eval: malformed pair parameters in '{text}'")
    pairs: list[tuple[str, float]] = []
    for item in text.split(","):
        name, _, value = item.partition("=")
        pairs.append((name, c_atof(value.encode())))
    return pairs


def cut_names(name: str, cutoffs: Sequence[int | float]) -> list[str]:
    return [f"{name}_{c}" if isinstance(c, int) else f"{name}_{c:3.2f}" for c in cutoffs]
