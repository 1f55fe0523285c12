"""The compiled join (``ranking/trec_eval/_rankjoin.c``) as the fast path of
:func:`ranking.trec_eval.merge.merge`: both files are read and the run ranked against the
qrels in one pass in C, document ids never becoming Python objects, and a run whose lines
come grouped by query is ranked a query at a time (docs/trec-eval.md#speed).

The C code takes only files it reads exactly as :mod:`ranking.trec_eval.readers` does (a
strict subset: fields cut by spaces or tabs, no comment or blank lines, integer grades of
at most 8 characters ending their line, so only files that
:func:`~ranking.trec_eval.strict_text.last_fields_are_integers` passes, plain decimal
scores); for any other file, standard input, or without the compiled module
(or with the compiled scan turned off, :func:`ranking.io.trec_scan.compiled_scanner`),
:func:`fast_merge` answers None and the Python readers and the numpy merge run, giving the
same :class:`~ranking.trec_eval.merge.Merged` or their ``file:line`` error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType

import numpy as np
from numpy.typing import NDArray

from ranking.io.trec_scan import compiled_scanner
from ranking.trec_eval.merge import NEGATIVE_FIRST_QUERY, Merged, make_batch
from ranking.trec_eval.prefetch import rank_arguments, take

try:
    import ranking.trec_eval._rankjoin as compiled
except ImportError:  # not built: the Python readers and the numpy merge
    rankjoin: ModuleType | None = None
else:
    rankjoin = compiled

__all__ = [
    "FastMerged",
    "compiled_ap_sums",
    "compiled_gain_rows",
    "compiled_graded_measures",
    "compiled_ideal_rows",
    "compiled_integer_grades",
    "compiled_iprec_at_recall",
    "compiled_judged_measures",
    "compiled_kernels",
    "compiled_log_floor",
    "compiled_ndcg_cuts",
    "compiled_query_lines",
    "compiled_rbp",
    "compiled_rbp_resid",
    "fast_merge",
]


@dataclass(frozen=True)
class FastMerged:
    """What the command line needs from the two files: the merge, the run's tag and the
    number of qrels lines with a positive grade (num_rel's summary under ``-c``)."""

    merged: Merged
    runid: str
    qrels_rel_count: int


def _name(qid: str) -> str:
    return qid.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def fast_merge(
    rel_file: str,
    run_file: str,
    *,
    level: int,
    max_ret: int,
    judged_only: bool,
    complete: bool,
) -> FastMerged | None:
    """:func:`~ranking.trec_eval.merge.merge` of the two files (module docstring), or None
    when the Python path must read them."""
    if rankjoin is None or compiled_scanner() is None or "-" in (rel_file, run_file):
        return None
    arguments = rank_arguments(
        rel_file, run_file, max_ret=max_ret, judged_only=judged_only, complete=complete
    )
    # the join an entry point started before numpy was imported, else this call's own
    out = take(arguments)
    if out is None:
        out = rankjoin.rank(*arguments)
    if isinstance(out, str):
        return None
    qids, rel_b, depth, num_ret_b, levels_b, top, present_b, qdup, rdup, rel_count, runid = out
    nq = len(qids)
    rel = np.frombuffer(rel_b, dtype=np.int64).reshape(nq, depth)
    num_ret = np.frombuffer(num_ret_b, dtype=np.int64)
    rel_levels = np.frombuffer(levels_b, dtype=np.int64).reshape(nq, top)
    present = np.frombuffer(present_b, dtype=np.uint8).astype(bool)
    # the first message of a query wins, in the order of merge(): missing, qrels, run
    errors: dict[int, str] = {}
    if not complete:
        for q in np.flatnonzero(~present).tolist():
            errors[q] = f"trec_eval: result qid '{_name(qids[q])}' not found in qrels"
    for q, doc in sorted(qdup.items()):
        name = doc.decode("utf-8", "replace")
        errors.setdefault(q, f"trec_eval.form_res_rels: duplicate docs {name}")
    for q, doc in sorted(rdup.items()):
        name = doc.decode("utf-8", "replace")
        errors.setdefault(q, f"trec_eval.form_res_qrels: duplicate docs {name}")
    if nq and int(rel_levels[0].sum()) == 0:  # no grade >= 0: all of them negative
        errors[0] = NEGATIVE_FIRST_QUERY
    bogus = ~present if complete else np.zeros(nq, dtype=bool)
    batch = make_batch(rel, num_ret, rel_levels, level)
    return FastMerged(Merged(list(qids), batch, errors, bogus), runid, int(rel_count))


def compiled_query_lines(
    qids: list[str], columns: list[tuple[str, int, object]], block: int = 2048
) -> list[str] | None:
    """The ``-q`` lines written by the C module (``_rankjoin.query_lines``: each column a
    padded name, a kind and its values), one string of lines per ``block`` queries; None for
    the Python formatter: no compiled module, the compiled code turned off, an id that is
    not UTF-8, or a count beyond 64 bits."""
    if rankjoin is None or compiled_scanner() is None:
        return None
    blocks: list[str] = []
    for start in range(0, len(qids), block):
        try:
            text = rankjoin.query_lines(qids, columns, start, min(start + block, len(qids)))
        except UnicodeEncodeError:  # an id read with surrogateescape: Python writes it
            return None
        if text is None:
            return None
        if text:
            blocks.append(text)
    return blocks


def compiled_judged_measures(
    rel: NDArray[np.int64],
    num_ret: NDArray[np.int64],
    num_rel: NDArray[np.int64],
    num_nonrel: NDArray[np.int64],
    level: int,
) -> NDArray[np.float64] | None:
    """bpref, infAP and binG as ``(queries, 3)`` from the C module
    (:func:`ranking.trec_eval.m_judged.compiled_judged`), or None: no compiled module, or
    the compiled code turned off."""
    if rankjoin is None or compiled_scanner() is None or not -(2**62) < level < 2**62:
        return None
    out = rankjoin.judged_measures(
        np.ascontiguousarray(rel, dtype=np.int64),
        np.ascontiguousarray(num_ret, dtype=np.int64),
        np.ascontiguousarray(num_rel, dtype=np.int64),
        np.ascontiguousarray(num_nonrel, dtype=np.int64),
        level,
    )
    return np.frombuffer(out, dtype=np.float64).reshape(len(num_ret), 3)


def compiled_kernels() -> bool:
    """Whether the C module's measure kernels are there and turned on."""
    return rankjoin is not None and compiled_scanner() is not None


def _float64(values: NDArray[np.generic]) -> NDArray[np.float64]:
    return np.ascontiguousarray(values, dtype=np.float64)


def _int64(values: NDArray[np.generic]) -> NDArray[np.int64]:
    return np.ascontiguousarray(values, dtype=np.int64)


def compiled_graded_measures(
    gains: NDArray[np.float64],
    ideal: NDArray[np.float64],
    n_ideal: NDArray[np.int64],
    num_ret: NDArray[np.int64],
    num_rel: NDArray[np.int64],
    disc: NDArray[np.float64],
) -> NDArray[np.float64] | None:
    """dcg, ideal_dcg, G, ndcg_rel and Rndcg as ``(queries, 5)`` from the C module
    (:func:`ranking.trec_eval.m_gain.compiled_graded`), or None: no compiled module, or the
    compiled code turned off."""
    if rankjoin is None or compiled_scanner() is None:
        return None
    out = rankjoin.graded_measures(
        _float64(gains),
        _float64(ideal),
        _int64(n_ideal),
        _int64(num_ret),
        _int64(num_rel),
        _float64(disc),
    )
    return np.frombuffer(out, dtype=np.float64).reshape(len(num_ret), 5)


def compiled_ndcg_cuts(
    gains: NDArray[np.float64],
    ideal: NDArray[np.float64],
    n_ideal: NDArray[np.int64],
    num_ret: NDArray[np.int64],
    disc: NDArray[np.float64],
    cutoffs: list[int],
) -> NDArray[np.float64] | None:
    """ndcg_cut at each cutoff as ``(queries, cutoffs)`` from the C module
    (:func:`ranking.trec_eval.m_gain.ndcg_cut`), or None: no compiled module, the compiled
    code turned off, or a cutoff beyond 64 bits."""
    if rankjoin is None or compiled_scanner() is None:
        return None
    if any(not -(2**63) <= k < 2**63 for k in cutoffs):
        return None
    out = rankjoin.ndcg_cuts(
        _float64(gains),
        _float64(ideal),
        _int64(n_ideal),
        _int64(num_ret),
        _float64(disc),
        np.asarray(cutoffs, dtype=np.int64),
    )
    return np.frombuffer(out, dtype=np.float64).reshape(len(num_ret), len(cutoffs))


def compiled_integer_grades(path: str) -> bool | None:
    """:func:`ranking.trec_eval.strict_text.last_fields_are_integers` by the C module (one
    pass over the bytes), or None: no compiled module, or the compiled code turned off."""
    if not compiled_kernels():
        return None
    return rankjoin.integer_grades(path) if rankjoin is not None else None


def compiled_iprec_at_recall(
    rel: NDArray[np.int64], num_ret: NDArray[np.int64], level: int, targets: NDArray[np.int64]
) -> NDArray[np.float64] | None:
    """iprec_at_recall as ``(queries, points)`` from the C module
    (:func:`ranking.trec_eval.m_interp.iprec_at_recall`; ``targets`` the ``m`` of each query
    and point), or None: no compiled module, the compiled code turned off, or a level
    beyond 64 bits."""
    if not compiled_kernels() or rankjoin is None or not -(2**62) < level < 2**62:
        return None
    out = rankjoin.iprec_at_recall(_int64(rel), _int64(num_ret), level, _int64(targets))
    return np.frombuffer(out, dtype=np.float64).reshape(targets.shape)


def compiled_rbp(
    rel: NDArray[np.int64],
    num_ret: NDArray[np.int64],
    num_rel_levels: NDArray[np.int64],
    table: NDArray[np.float64],
    low: int,
    param_listed: NDArray[np.bool_],
    rescale: NDArray[np.bool_],
    bounds: tuple[NDArray[np.float64], NDArray[np.float64]],
    powers: NDArray[np.float64],
    p: float,
) -> NDArray[np.float64] | None:
    """rbp of every query from the C module (:func:`ranking.trec_eval.m_gain.rbp`: ``table``
    the gain of grades ``low ..``, ``bounds`` each query's gain range), or None: no compiled
    module, or the compiled code turned off."""
    if not compiled_kernels() or rankjoin is None or not -(2**62) < low < 2**62:
        return None
    out = rankjoin.rbp(
        _int64(rel),
        _int64(num_ret),
        _int64(num_rel_levels),
        _float64(table),
        low,
        np.ascontiguousarray(param_listed, dtype=np.uint8),
        np.ascontiguousarray(rescale, dtype=np.uint8),
        _float64(bounds[0]),
        _float64(bounds[1]),
        _float64(powers),
        p,
    )
    return np.frombuffer(out, dtype=np.float64)


def compiled_rbp_resid(
    rel: NDArray[np.int64], num_ret: NDArray[np.int64], powers: NDArray[np.float64], p: float
) -> NDArray[np.float64] | None:
    """rbp_resid of every query from the C module
    (:func:`ranking.trec_eval.m_gain.rbp_resid`), or None: no compiled module, or the
    compiled code turned off."""
    if not compiled_kernels() or rankjoin is None:
        return None
    out = rankjoin.rbp_resid(_int64(rel), _int64(num_ret), _float64(powers), p)
    return np.frombuffer(out, dtype=np.float64)


def compiled_gain_rows(
    rel: NDArray[np.int64], num_ret: NDArray[np.int64], table: NDArray[np.float64], low: int
) -> NDArray[np.float64] | None:
    """:func:`ranking.trec_eval.gains.result_gains` from the C module (``table`` the gain of
    grades ``low ..``), or None: no compiled module, or the compiled code turned off."""
    if not compiled_kernels() or rankjoin is None or not -(2**62) < low < 2**62:
        return None
    out = rankjoin.gain_rows(_int64(rel), _int64(num_ret), _float64(table), low)
    return np.frombuffer(out, dtype=np.float64).reshape(rel.shape)


def compiled_ideal_rows(
    rel_levels: NDArray[np.int64], levels: Sequence[int], values: Sequence[float], width: int
) -> tuple[NDArray[np.float64], NDArray[np.int64]] | None:
    """:func:`ranking.trec_eval.gains.ideal_matrix` from the C module (the gain list's
    ``levels`` and ``values``), or None: no compiled module, the compiled code turned off,
    no grade column, or a level beyond 64 bits."""
    if not compiled_kernels() or rankjoin is None or rel_levels.shape[1] == 0:
        return None
    if any(not -(2**63) <= level < 2**63 for level in levels):
        return None
    ideal, n_ideal, size = rankjoin.ideal_rows(
        _int64(rel_levels),
        rel_levels.shape[1],
        np.asarray(levels, dtype=np.int64),
        np.asarray(values, dtype=np.float64),
        width,
    )
    rows = np.frombuffer(ideal, dtype=np.float64).reshape(len(rel_levels), size)
    return rows, np.frombuffer(n_ideal, dtype=np.int64)


def compiled_ap_sums(
    rel: NDArray[np.int64], num_ret: NDArray[np.int64], level: int
) -> NDArray[np.float64] | None:
    """:func:`ranking.trec_eval.m_cutoffs.ap_sums` from the C module, or None: no compiled
    module, the compiled code turned off, or a level beyond 64 bits."""
    if not compiled_kernels() or rankjoin is None or not -(2**62) < level < 2**62:
        return None
    out = rankjoin.ap_sums(_int64(rel), _int64(num_ret), level)
    return np.frombuffer(out, dtype=np.float64).reshape(rel.shape)


def compiled_log_floor(values: NDArray[np.float64], floor: float) -> NDArray[np.float64] | None:
    """:func:`ranking.trec_eval.m_judged.log_floor` from the C module (libm's ``log``, which
    :func:`math.log` calls too), or None: no compiled module, or the compiled code turned
    off."""
    if not compiled_kernels() or rankjoin is None:
        return None
    return np.frombuffer(rankjoin.log_floor(_float64(values), floor), dtype=np.float64)
