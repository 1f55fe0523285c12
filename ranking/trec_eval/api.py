"""Python entry: trec_eval's values from dicts, without files (``-q`` values and the summary)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ranking.trec_eval.errors import TrecEvalError
from ranking.trec_eval.evaluate import evaluate_merged, summary_values
from ranking.trec_eval.merge import merge
from ranking.trec_eval.readers import QrelsColumns, RunColumns
from ranking.trec_eval.registry import Context
from ranking.trec_eval.select import select

__all__ = ["evaluate", "evaluate_columns"]


def _columns(
    table: Mapping[str, Mapping[str, float]], dtype: type
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    qids = [q.encode() for q, docs in table.items() for _ in docs]
    docs = [d.encode() for docs in table.values() for d in docs]
    values = [v for docs in table.values() for v in docs.values()]
    return (
        np.array(qids, dtype=np.bytes_),
        np.array(docs, dtype=np.bytes_),
        np.array(values, dtype=dtype),
    )


def evaluate(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Mapping[str, float]],
    measures: Sequence[str] = ("official",),
    *,
    level: int = 1,
    complete: bool = False,
    judged_only: bool = False,
    max_ret: int = 2147483647,
    num_docs: int = 0,
    runid: str = "run",
) -> dict[str, dict[str, float]]:
    """``{qid: {value name: value}}`` for every evaluated query and ``"all"`` (the summary),
    what ``trec_eval -q`` prints (runid and relstring aside). Raises :class:`TrecEvalError`
    where trec_eval stops."""
    q_qid, q_doc, q_rel = _columns(qrels, np.int64)
    r_qid, r_doc, r_sim = _columns(run, np.float64)
    return evaluate_columns(
        QrelsColumns(q_qid, q_doc, q_rel, np.zeros(len(q_qid), dtype=np.int64)),
        RunColumns(r_qid, r_doc, r_sim, np.zeros(len(r_qid), dtype=np.int64), runid),
        measures,
        level=level,
        complete=complete,
        judged_only=judged_only,
        max_ret=max_ret,
        num_docs=num_docs,
    )


def evaluate_columns(
    qrels: QrelsColumns,
    run: RunColumns,
    measures: Sequence[str] = ("official",),
    *,
    level: int = 1,
    complete: bool = False,
    judged_only: bool = False,
    max_ret: int = 2147483647,
    num_docs: int = 0,
) -> dict[str, dict[str, float]]:
    """:func:`evaluate` of judgments and a run given as columns (what the readers return;
    ``heapjudge evaluate`` builds them from its own columns)."""
    q_qid, q_rel, r_qid, runid = qrels.qid, qrels.rel, run.qid, run.runid
    if not len(q_qid) or not len(r_qid):
        raise TrecEvalError("trec_eval: empty qrels or run", 2)
    requested = select(list(measures))
    merged = merge(
        qrels,
        run,
        level=level,
        max_ret=max_ret,
        judged_only=judged_only,
        complete=complete,
    )
    ev = evaluate_merged(
        merged,
        requested,
        context=Context(num_docs),
        runid=runid,
        qrels_rel_count=int((q_rel > 0).sum()),
        query=False,
    )
    if ev.error is not None:
        raise TrecEvalError(ev.error, 4)
    out: dict[str, dict[str, float]] = {}
    for q, qid in enumerate(ev.qids):
        row: dict[str, float] = {}
        for item, vals in zip(ev.table.requested, ev.table.values, strict=True):
            if item.measure.per_query and item.measure.kind != "relstring":
                row.update({name: float(vals[q, j]) for j, name in enumerate(item.names)})
        out[qid] = row
    out["all"] = summary_values(ev, complete)
    return out
