"""Joining a run's columns with qrels columns (docs/metrics.md#large-files): the judged label
of every run row, and the codes that break score ties by document id, in numpy and Arrow.

Run rows are matched with judgments on their 64-bit (query, document) keys
(:class:`ranking.io.trec_fast.JoinIndex`), and every match is checked on the strings; if two
pairs ever share a key the join is redone on the strings.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ranking.io.trec_fast import TrecColumns, arrow_pool

__all__ = ["arrow_indices", "docid_tie_codes", "join_labels", "same_strings"]


def arrow_indices(indices: NDArray[np.int64]) -> Any:
    """An Arrow int64 array over ``indices`` (no copy)."""
    # pyarrow is imported on use here and below: about 35 MB of resident memory that a
    # server only needs once it evaluates runs (ranking.io.trec_fast.arrow_pool)
    import pyarrow as pa

    data = np.ascontiguousarray(indices, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), data.shape[0], [None, pa.py_buffer(data)])


def join_labels(
    run: TrecColumns, qrels: TrecColumns, run_index: Mapping[str, int]
) -> NDArray[np.float64]:
    """The judged label of each run row (0 for an unjudged document)."""
    labels = np.zeros(run.n_rows, dtype=np.float64)
    if qrels.n_rows == 0 or run.n_rows == 0:
        return labels
    run_keys, qrels_keys = run.join_index(), qrels.join_index()
    if run_keys.unique and qrels_keys.unique:
        judged_keys = qrels_keys.sorted_keys
        last = judged_keys.shape[0] - 1
        r_parts: list[NDArray[np.intp]] = []
        t_parts: list[NDArray[np.intp]] = []
        step = 1 << 18  # slices of run keys: the search temporaries stay small
        for start in range(0, run_keys.sorted_keys.shape[0], step):
            keys = run_keys.sorted_keys[start : start + step]
            at = np.minimum(np.searchsorted(judged_keys, keys), last)
            hit = judged_keys[at] == keys
            r_parts.append(run_keys.key_order[start : start + step][hit])
            t_parts.append(qrels_keys.key_order[at[hit]])
        r_rows, t_rows = np.concatenate(r_parts), np.concatenate(t_parts)
        del r_parts, t_parts
        # A key match is a candidate: check both ids.
        truth_to_run = np.array([run_index.get(q, -1) for q in qrels.qids], dtype=np.int64)
        same_query = bool((truth_to_run[qrels.query[t_rows]] == run.query[r_rows]).all())
        # in run-file order, the gathers below read both files nearly sequentially (the
        # matched run rows are distinct: a scatter into a row-long table orders them in O(n))
        width = np.int32 if qrels.n_rows < 2**31 else np.int64
        matched: NDArray[np.signedinteger[Any]] = np.full(run.n_rows, -1, dtype=width)
        matched[r_rows] = t_rows
        r_rows = np.flatnonzero(matched >= 0)
        t_rows = matched[r_rows].astype(np.intp)
        del matched
        same_doc = same_query and same_strings(run.docids, r_rows, qrels.docids, t_rows)
        if same_doc:
            labels[r_rows] = qrels.values[t_rows]
            return labels
    # Two pairs share a key (odds about n^2 / 2^65): match on the strings.
    judged = {
        (qrels.qids[q], d): v
        for q, d, v in zip(
            qrels.query.tolist(), qrels.docids.to_pylist(), qrels.values.tolist(), strict=True
        )
    }
    labels[:] = [
        judged.get((run.qids[q], d), 0.0)
        for q, d in zip(run.query.tolist(), run.docids.to_pylist(), strict=True)
    ]
    return labels


def same_strings(
    a: Any, a_rows: NDArray[np.intp], b: Any, b_rows: NDArray[np.intp], step: int = 1 << 18
) -> bool:
    """Whether ``a[a_rows[i]] == b[b_rows[i]]`` for every i (Arrow string arrays), in slices
    so that the gathered strings stay small."""
    import pyarrow.compute as pc  # on use: memory at start (arrow_indices)

    pool = arrow_pool()
    for start in range(0, a_rows.shape[0], step):
        left = pc.take(a, arrow_indices(a_rows[start : start + step]), memory_pool=pool)
        right = pc.take(b, arrow_indices(b_rows[start : start + step]), memory_pool=pool)
        if not pc.all(pc.equal(left, right, memory_pool=pool), memory_pool=pool).as_py():
            return False
    return True


def docid_tie_codes(
    run: TrecColumns,
    rows: NDArray[np.intp],
    scores: NDArray[np.float64],
    mask: NDArray[np.bool_],
) -> NDArray[np.int32]:
    """(Q, L) codes for ``ties="docid"``: 0, or for a document whose score ties another in its
    query, the dense rank of its id in byte order (Arrow compares strings as bytes, as strcmp
    does). ``rows``: the run row of each real cell of ``mask``, in row-major order.

    Ties are found in single precision, which ties every pair that ties in double precision
    and more, so the codes serve ``score_precision`` "single" and "double" alike.
    """
    codes = np.zeros(mask.shape, dtype=np.int32)
    if rows.shape[0] == 0:
        return codes
    tied = np.zeros(mask.shape, dtype=bool)
    step = max(1, (1 << 18) // max(mask.shape[1], 1))  # rows per block: small temporaries
    for start in range(0, mask.shape[0], step):
        block = slice(start, start + step)
        single = np.where(mask[block], scores[block].astype(np.float32), np.float32(np.nan))
        order = np.argsort(single, axis=1)
        single = np.take_along_axis(single, order, axis=1)
        equal = single[:, 1:] == single[:, :-1]  # NaN padding never ties
        tied_sorted = np.zeros(single.shape, dtype=bool)
        tied_sorted[:, 1:] |= equal
        tied_sorted[:, :-1] |= equal
        np.put_along_axis(tied[block], order, tied_sorted, axis=1)
    at = np.flatnonzero(tied[mask])  # positions among the real cells, row-major
    if at.shape[0]:
        import pyarrow.compute as pc  # on use: memory at start (arrow_indices)

        ids = pc.take(run.docids, arrow_indices(rows[at]), memory_pool=arrow_pool())
        ranks = pc.rank(
            ids.combine_chunks(memory_pool=arrow_pool()),
            sort_keys="ascending",
            tiebreaker="dense",
            memory_pool=arrow_pool(),
        )
        codes[tied & mask] = np.asarray(ranks, dtype=np.int32)
    return codes
