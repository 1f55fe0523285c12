"""trec_eval's own measures as ``heapjudge evaluate`` metrics (the ``trec_eval`` family of
:func:`ranking.metrics.names.trec_eval_spec`: bpref, infAP, Rprec, success, rbp, the set
measures, the interpolated precisions...; docs/metrics.md#trec_eval-measures).

They are computed by :mod:`ranking.trec_eval` itself, from the judgments and the run as
trec_eval reads them, not from the padded label arrays of the other metrics: bpref, infAP,
unj and num_nonrel_judged_ret tell a judged non-relevant document from an unjudged one, which
a padded label 0 does not. So each value is the one ``heapjudge trec-eval -q`` (and
trec_eval 10.0) prints for the query, under trec_eval's conventions whatever the preset:
ties by document id descending, ``-l`` from the name's ``rel`` (ir-measures' ``rel=``), and
``missing="zero"`` read as ``-c``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from ranking import metrics as M

if TYPE_CHECKING:
    from ranking.io.trec_fast import TrecColumns
    from ranking.trec_eval.readers import QrelsColumns, RunColumns

# ranking.trec_eval and pyarrow.compute are imported where a trec_eval metric is computed:
# every `heapjudge evaluate` imports this module, few ask for these metrics.

__all__ = [
    "trec_eval_metrics",
    "trec_eval_values",
    "trec_eval_values_of_columns",
]


def trec_eval_metrics(metrics: Sequence[str]) -> dict[str, M.MetricSpec]:
    """The requested metrics of the ``trec_eval`` family, by name as requested."""
    specs = {name: M.parse_metric_spec(name) for name in metrics}
    return {name: spec for name, spec in specs.items() if spec.family == "trec_eval"}


def _grade(qid: str, doc: str, value: float) -> int:
    if not float(value).is_integer():
        raise ValueError(
            f"trec_eval measures read integer grades; query {qid!r}, document {doc!r} has {value!r}"
        )
    return int(value)


def _calls(specs: Mapping[str, M.MetricSpec]) -> list[tuple[int, list[str]]]:
    """``(level, [-m arguments])`` per trec_eval pass: the first ``-m`` of a measure sets
    its parameters, so two parameterisations of one measure (``success.5``, ``success.10``)
    go to different passes, as do different relevance levels."""
    passes: list[tuple[int, list[str]]] = []
    for spec in specs.values():
        assert spec.trec_eval is not None
        level = 1 if spec.rel is None else int(spec.rel)
        arg = spec.trec_eval
        base = arg.partition(".")[0]
        for lvl, args in passes:
            if lvl != level:
                continue
            if arg in args:
                break
            if all(a.partition(".")[0] != base for a in args):
                args.append(arg)
                break
        else:
            passes.append((level, [arg]))
    return passes


def _values(
    specs: Mapping[str, M.MetricSpec],
    qrels: QrelsColumns,
    run: RunColumns,
    queries: Sequence[str],
    complete: bool,
) -> dict[str, NDArray[np.float64]]:
    from ranking.trec_eval.api import evaluate_columns
    from ranking.trec_eval.errors import TrecEvalError

    out: dict[str, NDArray[np.float64]] = {}
    for level, args in _calls(specs):
        try:
            table = evaluate_columns(qrels, run, args, level=level, complete=complete)
        except TrecEvalError as error:
            raise ValueError(error.message) from None
        for name, spec in specs.items():
            if spec.trec_eval not in args or (1 if spec.rel is None else int(spec.rel)) != level:
                continue
            assert spec.value is not None
            out[name] = np.array(
                [table.get(q, {}).get(spec.value, np.nan) for q in queries], dtype=np.float64
            )
    return out


def trec_eval_values(
    specs: Mapping[str, M.MetricSpec],
    run: Mapping[str, Mapping[str, float]],
    truth: Mapping[str, Mapping[str, float]],
    queries: Sequence[str],
    complete: bool,
) -> dict[str, NDArray[np.float64]]:
    """Per metric, the values of ``queries`` in their order (NaN where trec_eval has none),
    from dicts; ``complete`` is ``-c`` (queries the run lacks are evaluated)."""
    if not specs:
        return {}
    from ranking.trec_eval.readers import QrelsColumns, RunColumns

    wanted = set(queries)
    q_rows = [(q, d, _grade(q, d, v)) for q in queries for d, v in truth[q].items()]
    r_rows = [(q, d, float(s)) for q in run if q in wanted for d, s in run[q].items()]
    if not q_rows or not r_rows:
        return {name: np.full(len(queries), np.nan) for name in specs}
    qrels = QrelsColumns(
        np.array([q.encode() for q, _, _ in q_rows], dtype=np.bytes_),
        np.array([d.encode() for _, d, _ in q_rows], dtype=np.bytes_),
        np.array([g for _, _, g in q_rows], dtype=np.int64),
        np.zeros(len(q_rows), dtype=np.int64),
    )
    run_cols = RunColumns(
        np.array([q.encode() for q, _, _ in r_rows], dtype=np.bytes_),
        np.array([d.encode() for _, d, _ in r_rows], dtype=np.bytes_),
        np.array([s for _, _, s in r_rows], dtype=np.float64),
        np.zeros(len(r_rows), dtype=np.int64),
        "run",
    )
    return _values(specs, qrels, run_cols, queries, complete)


def _column_bytes(columns: TrecColumns, keep: NDArray[np.bool_]) -> tuple[NDArray[np.bytes_], ...]:
    import pyarrow as pa
    import pyarrow.compute as pc

    qids = np.array([q.encode() for q in columns.qids], dtype=np.bytes_)[columns.query[keep]]
    docs = pc.cast(columns.docids, pa.binary()).to_numpy(zero_copy_only=False)[keep]
    return qids, np.array(docs, dtype=np.bytes_)


def trec_eval_values_of_columns(
    specs: Mapping[str, M.MetricSpec],
    run: TrecColumns,
    qrels: TrecColumns,
    queries: Sequence[str],
    missing: str,
) -> dict[str, NDArray[np.float64]]:
    """:func:`trec_eval_values` of the column readers' tables (``heapjudge evaluate`` on
    files); ``missing="zero"`` is ``-c``."""
    if not specs:
        return {}
    from ranking.trec_eval.readers import QrelsColumns, RunColumns

    wanted = set(queries)
    q_keep = np.isin(qrels.query, [i for i, q in enumerate(qrels.qids) if q in wanted])
    r_keep = np.isin(run.query, [i for i, q in enumerate(run.qids) if q in wanted])
    grades = qrels.values[q_keep]
    q_qid, q_doc = _column_bytes(qrels, q_keep)
    bad = ~np.equal(np.floor(grades), grades)
    if bad.any():
        i = int(np.argmax(bad))
        _grade(q_qid[i].decode(), q_doc[i].decode(), float(grades[i]))
    r_qid, r_doc = _column_bytes(run, r_keep)
    if not len(q_qid) or not len(r_qid):
        return {name: np.full(len(queries), np.nan) for name in specs}
    qrels_cols = QrelsColumns(q_qid, q_doc, grades.astype(np.int64), np.zeros(len(q_qid), np.int64))
    run_cols = RunColumns(
        r_qid, r_doc, run.values[r_keep], np.zeros(len(r_qid), dtype=np.int64), "run"
    )
    return _values(specs, qrels_cols, run_cols, queries, missing == "zero")
