"""``-R prefs``, ``-R qrels_prefs`` and ``-R qrels_jg``: the evaluation loop over preference
judgments or judgment groups, printed like every other trec_eval output."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from ranking.trec_eval import m_cutoffs as mc
from ranking.trec_eval import m_interp as mi
from ranking.trec_eval.errors import TrecEvalError
from ranking.trec_eval.evaluate import Evaluation, Table, format_lines, to_zscores
from ranking.trec_eval.merge import BOGUS_DOC, Merged, merge
from ranking.trec_eval.options import Options
from ranking.trec_eval.prefs_counts import query_prefs
from ranking.trec_eval.prefs_measures import prefs_values
from ranking.trec_eval.prefs_read import PrefRow, read_prefs
from ranking.trec_eval.readers import (
    QrelsColumns,
    RunColumns,
    read_bytes,
    read_qrels,
    read_run,
    read_zscores,
    split_lines,
)
from ranking.trec_eval.select import Requested

__all__ = ["evaluate_prefs", "ranked_docs"]

#: The evaluated query ids, their values, and the message that stopped the loop.
Result = tuple[list[str], Table, str | None]

_FORMATS = {"prefs": "prefs", "qrels_prefs": "prefs", "qrels_jg": "qrels_jg"}


def ranked_docs(run: RunColumns, max_ret: int) -> dict[bytes, list[bytes] | str]:
    """Each run query's documents by score descending, ties by document id ascending (the
    preference files' rule), cut at ``-M``; a duplicate in the kept ones is the query's
    error message."""
    by_query: dict[bytes, list[tuple[float, bytes]]] = defaultdict(list)
    for qid, doc, sim in zip(run.qid.tolist(), run.doc.tolist(), run.sim.tolist(), strict=True):
        by_query[qid].append((sim, doc))
    out: dict[bytes, list[bytes] | str] = {}
    for qid, items in by_query.items():
        items.sort(key=lambda t: (-t[0], t[1]))
        docs = [doc for _, doc in items[:max_ret]]
        dup = next((d for d, n in _counts(docs).items() if n > 1), None)
        out[qid] = (
            docs
            if dup is None
            else f"trec_eval.form_prefs_counts: duplicate docs {dup.decode('utf-8', 'replace')}"
        )
    return out


def _counts(docs: list[bytes]) -> dict[bytes, int]:
    seen: dict[bytes, int] = defaultdict(int)
    for d in docs:
        seen[d] += 1
    return seen


def _check(requested: list[Requested], source: str) -> None:
    for item in requested:
        if item.measure.source not in {source, "qrels"} or (
            item.measure.source == "qrels" and item.measure.kind not in {"runid", "count"}
        ):
            if item.measure.name in {"runid", "num_q"}:
                continue
            raise TrecEvalError(
                f"trec_eval: Can't calculate measure '{item.measure.name}' with -R {source}", 4
            )
        if (
            item.measure.kind == "count"
            and item.measure.source == "qrels"
            and item.measure.name != "num_q"
        ):
            raise TrecEvalError(
                f"trec_eval: Can't calculate measure '{item.measure.name}' with -R {source}", 4
            )


def _prefs_table(options: Options, requested: list[Requested], run: RunColumns) -> Result:
    rows = read_prefs(
        options.files[0], qrels_style=options.rel_format == "qrels_prefs", lenient=options.lenient
    )
    by_query: dict[bytes, list[PrefRow]] = defaultdict(list)
    for row in rows:
        by_query[row.qid].append(row)
    ranked = ranked_docs(run, options.max_ret)
    qids: list[str] = []
    per_query: list[dict[str, float]] = []
    error = None
    for qid in sorted(by_query):
        docs = ranked.get(qid)
        if docs is None and not options.complete:
            error = f"trec_eval: result qid '{qid.decode('utf-8', 'replace')}' not found in qrels"
            break
        if isinstance(docs, str):
            error = docs
            break
        qp = query_prefs(by_query[qid], docs if docs is not None else [BOGUS_DOC])
        qids.append(qid.decode("utf-8", "surrogateescape"))
        per_query.append(prefs_values(qp))
    values = []
    for item in requested:
        column = [
            pq.get(item.measure.name, 1.0 if item.measure.name == "num_q" else 0.0)
            for pq in per_query
        ]
        values.append(
            np.array(column, dtype=np.float64).reshape(len(per_query), 1)[:, : len(item.names)]
        )
    return qids, Table(requested, values), error


def _jg_table(options: Options, requested: list[Requested], run: RunColumns) -> Result:
    """``-R qrels_jg``: each (query, group) is evaluated as a query of its own against the
    query's ranking, then the groups' values are averaged (summed when only one)."""
    qrels = read_qrels(options.files[0], lenient=options.lenient)
    groups = [
        fields[1]
        for _, fields in split_lines(read_bytes(options.files[0], "qrels"), skip_blank=False)
    ]
    keys = [q + b"\x01" + g for q, g in zip(qrels.qid.tolist(), groups, strict=True)]
    pseudo = np.array(keys, dtype=np.bytes_)
    merged = merge(
        QrelsColumns(pseudo, qrels.doc, qrels.rel, qrels.line),
        _expand_run(run, pseudo),
        level=options.level,
        max_ret=options.max_ret,
        judged_only=options.judged_only,
        complete=options.complete,
    )
    return _jg_values(merged, requested)


def _expand_run(run: RunColumns, pseudo: np.ndarray) -> RunColumns:
    """The run's lines once per judgment group of their query, under the group's key."""
    groups: dict[bytes, list[bytes]] = defaultdict(list)
    for key in np.unique(pseudo).tolist():
        groups[key.split(b"\x01")[0]].append(key)
    take: list[int] = []
    keys: list[bytes] = []
    for i, qid in enumerate(run.qid.tolist()):
        for key in groups.get(qid, [qid]):
            take.append(i)
            keys.append(key)
    idx = np.array(take, dtype=np.int64)
    return RunColumns(
        np.array(keys, dtype=np.bytes_), run.doc[idx], run.sim[idx], run.line[idx], run.runid
    )


def _group_values(merged: Merged, item: Requested) -> np.ndarray:
    name, batch = item.measure.name, merged.batch
    if name == "map_avgjg":
        return mc.mean_ap(batch)[:, None]
    if name == "P_avgjg":
        return mc.precision(batch, item.params)
    if name == "Rprec_mult_avgjg":
        return mi.rprec_mult(batch, item.params)
    return (
        np.ones((batch.n, len(item.names)))
        if name == "num_q"
        else np.zeros((batch.n, len(item.names)))
    )


def _jg_values(merged: Merged, requested: list[Requested]) -> Result:
    stop = min(merged.errors, default=len(merged.qids))
    real = [q.split("\x01")[0] for q in merged.qids]
    values = [_group_values(merged, item) for item in requested]
    rows_of: dict[str, list[int]] = defaultdict(list)
    for i, q in enumerate(real):
        rows_of[q].append(i)
    qids: list[str] = []
    out: list[list[np.ndarray]] = [[] for _ in requested]
    error = None
    for q, rows in rows_of.items():
        if rows[-1] >= stop:
            error = merged.errors[min(i for i in rows if i in merged.errors)]
            break
        qids.append(q)
        for j, item in enumerate(requested):
            if item.measure.name == "num_q":
                out[j].append(np.ones(len(item.names)))
                continue
            total = np.cumsum(values[j][rows], axis=0)[-1]
            out[j].append(total / len(rows) if len(rows) > 1 else total)
    arrays = [
        np.array(v).reshape(len(qids), len(r.names)) for v, r in zip(out, requested, strict=True)
    ]
    return qids, Table(requested, arrays), error


def evaluate_prefs(options: Options, requested: list[Requested]) -> list[str]:
    source = _FORMATS.get(options.rel_format)
    if source is None:
        raise TrecEvalError(f"trec_eval: Illegal rel_format '{options.rel_format}'", 2)
    _check(requested, source)
    run = read_run(options.files[1], lenient=options.lenient)
    zscores = read_zscores(options.zscores, lenient=options.lenient) if options.zscores else None
    if source == "prefs":
        qids, table, error = _prefs_table(options, requested, run)
    else:
        qids, table, error = _jg_table(options, requested, run)
    if zscores is not None:
        to_zscores(table, qids, zscores)
    if error is None and not qids:
        error = "trec_eval: No queries with both results and relevance info"
    total = len(qids)
    ev = Evaluation(qids, table, [""] * len(qids), run.runid, total, 0, error)
    lines = format_lines(
        ev,
        query=options.query,
        summary=options.summary,
        complete=options.complete,
        zmode=zscores is not None,
    )
    if error is not None:
        raise TrecEvalError(error, 4, lines)
    return lines
