"""Joining a run's columns with qrels columns (docs/metrics.md#large-files): the judged label
of every run row, and the codes that break score ties by document id, in numpy and Arrow.

Run rows are matched with judgments on 64-bit (query, document) keys: the query's code in
the qrels in the high bits, the document id's hash below
(:func:`ranking.io.trec_keys.pair_keys`, sorted once per qrels in a
:class:`ranking.io.trec_fast.JoinIndex`). Every match is checked on the strings; if two pairs
ever share a key the join is redone on the strings.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ranking.io.trec_fast import TrecColumns, arrow_pool
from ranking.io.trec_keys import pair_keys, query_bits
from ranking.io.trec_scan import join_values

if TYPE_CHECKING:
    pass

__all__ = [
    "arrow_indices",
    "docid_tie_codes",
    "join_labels",
    "same_strings",
    "single_precision_ties",
]


def arrow_indices(indices: NDArray[np.int64]) -> Any:
    """An Arrow int64 array over ``indices`` (no copy)."""
    import pyarrow as pa  # on use: memory at start (arrow_pool)

    data = np.ascontiguousarray(indices, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), data.shape[0], [None, pa.py_buffer(data)])


def join_labels(
    run: TrecColumns, qrels: TrecColumns, truth_index: Mapping[str, int]
) -> NDArray[np.float64]:
    """The judged label of each run row (0 for an unjudged document). ``truth_index`` maps
    each query id of ``qrels`` to its code there."""
    labels = np.zeros(run.n_rows, dtype=np.float64)
    if qrels.n_rows == 0 or run.n_rows == 0:
        return labels
    judged = qrels.join_index()
    if judged.unique and run.distinct_pairs():
        # The run's rows get the qrels' query codes, so that their keys are comparable.
        truth_code = np.array([truth_index.get(q, -1) for q in run.qids], dtype=np.int32)
        hashes = run.doc_hashes()
        joined = join_values(
            run.query,
            hashes,
            truth_code,
            query_bits(len(qrels.qids)),
            judged.sorted_keys,
            judged.key_order,
            run.docids,
            qrels.docids,
            qrels.values,
        )
        if joined is not None:  # in C, every match checked on the ids (ranking.io.trec_scan)
            return joined
        judged_keys = judged.sorted_keys
        last = judged_keys.shape[0] - 1
        width = np.int32 if run.n_rows < 2**31 else np.int64
        r_parts: list[NDArray[np.signedinteger[Any]]] = []
        t_parts: list[NDArray[np.signedinteger[Any]]] = []
        step = 1 << 18  # slices of run rows: the temporaries stay small
        for start in range(0, run.n_rows, step):
            codes = truth_code[run.query[start : start + step]]
            rows = np.flatnonzero(codes >= 0)
            keys = pair_keys(codes[rows], hashes[start : start + step][rows], len(qrels.qids))
            # Sorted needles: a binary search then starts from the last one's place (numpy's
            # searchsorted), faster than in file order even with the sort (docs/performance.md)
            order = np.argsort(keys)
            keys = keys[order]
            at = np.minimum(np.searchsorted(judged_keys, keys), last)
            hit = judged_keys[at] == keys
            # back to file order (the string check then reads the run sequentially)
            matched = np.full(rows.shape[0], -1, dtype=judged.key_order.dtype)
            matched[order[hit]] = judged.key_order[at[hit]]
            found = np.flatnonzero(matched >= 0)
            r_parts.append((rows[found] + start).astype(width))
            t_parts.append(matched[found])
        r_rows, t_rows = np.concatenate(r_parts), np.concatenate(t_parts)
        del r_parts, t_parts
        # A key match is a candidate (same query, same high bits of the document hash):
        # check the document ids themselves.
        if same_strings(run.docids, r_rows, qrels.docids, t_rows):
            labels[r_rows] = qrels.values[t_rows]
            return labels
    # Two pairs share a key (a repeated pair, or a hash collision): match on the strings.
    judged_map = {
        (qrels.qids[q], d): v
        for q, d, v in zip(
            qrels.query.tolist(), qrels.docids.to_pylist(), qrels.values.tolist(), strict=True
        )
    }
    labels[:] = [
        judged_map.get((run.qids[q], d), 0.0)
        for q, d in zip(run.query.tolist(), run.docids.to_pylist(), strict=True)
    ]
    return labels


def same_strings(
    a: Any,
    a_rows: NDArray[np.signedinteger[Any]],
    b: Any,
    b_rows: NDArray[np.signedinteger[Any]],
    step: int = 1 << 18,
) -> bool:
    """Whether ``a[a_rows[i]] == b[b_rows[i]]`` for every i (Arrow string arrays), in slices
    so that the gathered strings stay small."""
    import pyarrow.compute as pc

    pool = arrow_pool(len(a))
    for start in range(0, a_rows.shape[0], step):
        left = pc.take(a, arrow_indices(a_rows[start : start + step]), memory_pool=pool)
        right = pc.take(b, arrow_indices(b_rows[start : start + step]), memory_pool=pool)
        if not pc.all(pc.equal(left, right, memory_pool=pool), memory_pool=pool).as_py():
            return False
    return True


def single_precision_ties(
    scores: NDArray[np.float64], mask: NDArray[np.bool_]
) -> NDArray[np.bool_]:
    """(Q, L): True for a real cell whose score, rounded to single precision, equals another
    real cell's of its row. Single precision ties every pair that ties in double precision
    and more, so no True cell means that every tie rule and both score precisions rank each
    row alike."""
    tied = np.zeros(mask.shape, dtype=bool)
    step = max(1, (1 << 18) // max(mask.shape[1], 1))  # rows per block: small temporaries
    for start in range(0, mask.shape[0], step):
        block = slice(start, start + step)
        single = np.where(mask[block], scores[block].astype(np.float32), np.float32(np.nan))
        ordered = np.sort(single, axis=1)  # a sort first: most blocks have no tie at all
        if not (ordered[:, 1:] == ordered[:, :-1]).any():
            continue
        order = np.argsort(single, axis=1)
        single = np.take_along_axis(single, order, axis=1)
        equal = single[:, 1:] == single[:, :-1]  # NaN padding never ties
        tied_sorted = np.zeros(single.shape, dtype=bool)
        tied_sorted[:, 1:] |= equal
        tied_sorted[:, :-1] |= equal
        np.put_along_axis(tied[block], order, tied_sorted, axis=1)
    return tied


def docid_tie_codes(
    run: TrecColumns,
    rows: NDArray[np.intp],
    mask: NDArray[np.bool_],
    tied: NDArray[np.bool_],
) -> NDArray[np.int32]:
    """(Q, L) codes for ``ties="docid"``: 0, or for a document whose score ties another in its
    query (``tied``, :func:`single_precision_ties`), the dense rank of its id in byte order
    (Arrow compares strings as bytes, as strcmp does). ``rows``: the run row of each real
    cell of ``mask``, in row-major order.

    Ties are found in single precision, which ties every pair that ties in double precision
    and more, so the codes serve ``score_precision`` "single" and "double" alike.
    """
    codes = np.zeros(mask.shape, dtype=np.int32)
    if rows.shape[0] == 0:
        return codes
    at = np.flatnonzero(tied[mask])  # positions among the real cells, row-major
    if at.shape[0]:
        import pyarrow.compute as pc  # on use (0.05 s to import): only when scores tie

        pool = arrow_pool(run.n_rows)
        ids = pc.take(run.docids, arrow_indices(rows[at]), memory_pool=pool)
        ranks = pc.rank(
            ids.combine_chunks(memory_pool=pool),
            sort_keys="ascending",
            tiebreaker="dense",
            memory_pool=pool,
        )
        codes[tied & mask] = np.asarray(ranks, dtype=np.int32)
    return codes
