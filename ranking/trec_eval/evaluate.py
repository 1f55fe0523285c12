"""trec_eval's evaluation loop and its output lines (``trec_eval.c``, ``meas_*.c``).

For each qrels query in order the requested measures are computed (all queries at once, per
measure, over a :class:`~ranking.trec_eval.merge.Batch`), optionally turned into Z scores,
printed with ``-q``, and summed; the summary divides by the number of queries (all qrels
queries with ``-c``), except the counts, which are sums, and gm_map/gm_bpref, geometric
means. A query trec_eval cannot evaluate stops the run after the lines of the queries
before it, as trec_eval does (exit status 4).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ranking.trec_eval.errors import TrecEvalError
from ranking.trec_eval.fast_merge import compiled_query_lines
from ranking.trec_eval.merge import Batch, FloatArray, Merged
from ranking.trec_eval.numeric import MIN_GEO_MEAN, c_exp, c_log, fmt_double
from ranking.trec_eval.registry import Context
from ranking.trec_eval.select import Requested

__all__ = [
    "Evaluation",
    "Table",
    "compute",
    "evaluate_merged",
    "format_lines",
    "relstrings",
    "summary_values",
    "to_zscores",
]

MISSING_ZSCORE = -1000000.0
#: Values trec_eval zeroes for a query evaluated on the stand-in document (``-c``).
_BOGUS_ZERO = ("num_ret", "utility", "rbp_resid")


@dataclass
class Table:
    """Per-query values of every requested measure: ``values[j]`` is ``(queries, len(names))``
    for ``requested[j]``."""

    requested: list[Requested]
    values: list[FloatArray]


@dataclass
class Evaluation:
    """What is printed: the table over the evaluated queries and what the summary needs."""

    qids: list[str]
    table: Table
    relstring: list[str]
    runid: str
    total_queries: int
    qrels_rel_count: int
    error: str | None


def relstrings(batch: Batch, length: int) -> list[str]:
    """The first ``length`` grades of each ranking as characters (``m_relstring.c``)."""
    out: list[str] = []
    width = max(min(length, batch.depth), 0)
    chars = np.full(batch.rel[:, :width].shape, "<", dtype="<U1")
    grades = batch.rel[:, :width]
    chars[(grades >= 0) & (grades <= 9)] = np.char.mod("%d", np.clip(grades, 0, 9))[
        (grades >= 0) & (grades <= 9)
    ]
    chars[grades > 9] = ">"
    chars[grades == -1] = "-"
    chars[grades == -2] = "."
    for q in range(batch.n):
        n = max(min(length, int(batch.num_ret[q])), 0)
        out.append("".join(chars[q, :n].tolist()))
    return out


#: Queries computed together: each measure's temporaries are a few ``(CHUNK, depth)``
#: arrays instead of matrices of all queries, so the process's memory stays near its
#: inputs' size; 4,096 rather than 1,024 since each block costs every measure's Python and
#: numpy calls once more, which outweighed the smaller arrays' cache use (the same peak
#: memory, docs/trec-eval.md#speed).
CHUNK = 4096


def compute(batch: Batch, requested: list[Requested], context: Context) -> Table:
    """Every requested measure of every query, :data:`CHUNK` queries at a time (a query's
    values depend on its own row only)."""
    if batch.n <= CHUNK:
        return _compute(batch, requested, context)
    parts = [
        _compute(_rows(batch, start, min(start + CHUNK, batch.n)), requested, context)
        for start in range(0, batch.n, CHUNK)
    ]
    values = [np.concatenate([p.values[j] for p in parts]) for j in range(len(requested))]
    return Table(requested, values)


def _rows(batch: Batch, start: int, stop: int) -> Batch:
    stale = None if batch.stale is None else batch.stale[start:stop]
    return Batch(
        batch.rel[start:stop],
        batch.num_ret[start:stop],
        batch.rel_levels[start:stop],
        batch.level,
        stale,
    )


def _compute(batch: Batch, requested: list[Requested], context: Context) -> Table:
    values: list[FloatArray] = []
    for item in requested:
        fn = item.measure.compute
        if item.measure.kind in {"runid", "relstring"} or fn is None:
            values.append(np.zeros((batch.n, len(item.names))))
        else:
            values.append(
                # a copy: a measure's array may be shared with others (merge.per_batch)
                np.array(fn(batch, item.params, context), dtype=np.float64).reshape(
                    batch.n, len(item.names)
                )
            )
    return Table(requested, values)


def zero_bogus(table: Table, bogus: np.ndarray) -> None:
    if not bogus.any():
        return
    for item, vals in zip(table.requested, table.values, strict=True):
        for j, name in enumerate(item.names):
            if name in _BOGUS_ZERO or name.startswith("unj"):
                vals[bogus, j] = 0.0


def to_zscores(
    table: Table, qids: list[str], zscores: dict[tuple[str, str], tuple[float, float]]
) -> None:
    """Replace each value by ``(value − mean)/stddev`` from the ``-Z`` file
    (``convert_zscores.c``)."""
    known = {qid for qid, _ in zscores}
    for item, vals in zip(table.requested, table.values, strict=True):
        for j, name in enumerate(item.names):
            for q, qid in enumerate(qids):
                entry = zscores.get((qid, name)) if qid in known else None
                v = float(vals[q, j])
                if entry is None:
                    vals[q, j] = MISSING_ZSCORE
                elif entry[1]:
                    vals[q, j] = (v - entry[0]) / entry[1]
                else:
                    vals[q, j] = 0.0 if v == entry[0] else MISSING_ZSCORE


def _long(value: float) -> str:
    return str(int(value)) if np.isfinite(value) else "-9223372036854775808"


def _line(name: str, qid: str, value: float, kind: str, zmode: bool) -> str:
    if zmode:
        return f"Z{name:<22}\t{qid}\t{fmt_double(value)}"
    if kind == "count":
        return f"{name:<22}\t{qid}\t{_long(value)}"
    return f"{name:<22}\t{qid}\t{fmt_double(value)}"


def query_lines(ev: Evaluation, q: int, zmode: bool) -> list[str]:
    lines: list[str] = []
    qid = ev.qids[q]
    for item, vals in zip(ev.table.requested, ev.table.values, strict=True):
        m = item.measure
        if not m.per_query:
            continue
        if m.kind == "relstring":
            lines.append(f"{item.names[0]:<22}\t{qid}\t'{ev.relstring[q]}'")
            continue
        for j, name in enumerate(item.names):
            lines.append(_line(name, qid, float(vals[q, j]), m.kind, zmode))
    return lines


def _summary_value(ev: Evaluation, item: Requested, total: float, complete: bool) -> float:
    n_eval = len(ev.qids)
    n = ev.total_queries if complete else n_eval
    rule = item.measure.summary
    if rule == "num_q":
        return float(n)
    if rule == "sum":
        return total
    if rule == "num_rel":
        return float(ev.qrels_rel_count) if complete else total
    if rule == "gm":
        if n <= 0:
            return total
        if complete:
            total += (n - n_eval) * c_log(MIN_GEO_MEAN)
        return c_exp(total / n)
    return total / n if n else total


def summary_values(ev: Evaluation, complete: bool) -> dict[str, float]:
    """The summary's values by name (runid and relstring aside)."""
    out: dict[str, float] = {}
    for item, vals in zip(ev.table.requested, ev.table.values, strict=True):
        if item.measure.kind == "runid" or item.measure.summary == "none":
            continue
        sums = np.cumsum(vals, axis=0)[-1] if len(vals) else np.zeros(len(item.names))
        for j, name in enumerate(item.names):
            out[name] = _summary_value(ev, item, float(sums[j]), complete)
    return out


def summary_lines(ev: Evaluation, complete: bool, zmode: bool) -> list[str]:
    lines: list[str] = []
    for item, vals in zip(ev.table.requested, ev.table.values, strict=True):
        m = item.measure
        if m.kind == "runid":
            lines.append(f"{'runid':<22}\tall\t{ev.runid}")
            continue
        if m.summary == "none":
            continue
        sums = np.cumsum(vals, axis=0)[-1] if len(vals) else np.zeros(len(item.names))
        for j, name in enumerate(item.names):
            value = _summary_value(ev, item, float(sums[j]), complete)
            lines.append(_line(name, "all", value, m.kind, zmode))
    return lines


def _compiled_query_lines(ev: Evaluation, zmode: bool) -> list[str] | None:
    """The ``-q`` lines as strings of many lines (without their final newlines), written in
    C with printf's ``%6.4f``, trec_eval's own format; None where the C module is missing or
    turned off, or a value needs the Python formatter."""
    columns: list[tuple[str, int, object]] = []
    for item, vals in zip(ev.table.requested, ev.table.values, strict=True):
        m = item.measure
        if not m.per_query:
            continue
        if m.kind == "relstring":
            columns.append((f"{item.names[0]:<22}", 2, ev.relstring))
            continue
        for j, name in enumerate(item.names):
            prefix = f"Z{name:<22}" if zmode else f"{name:<22}"
            kind = 1 if m.kind == "count" and not zmode else 0
            columns.append((prefix, kind, np.ascontiguousarray(vals[:, j], dtype=np.float64)))
    return compiled_query_lines(ev.qids, columns)


def format_lines(
    ev: Evaluation, *, query: bool, summary: bool, complete: bool, zmode: bool
) -> list[str]:
    """The lines trec_eval prints (without their newlines); the ``-q`` lines may come as
    one string of many lines (joined with newlines as the others are)."""
    lines: list[str] = []
    if query and ev.qids:
        blocks = _compiled_query_lines(ev, zmode)
        if blocks is not None:
            lines.extend(blocks)
        else:
            for q in range(len(ev.qids)):
                lines.extend(query_lines(ev, q, zmode))
    if ev.error is None and summary:
        lines.extend(summary_lines(ev, complete, zmode))
    return lines


def evaluate_merged(
    merged: Merged,
    requested: list[Requested],
    *,
    context: Context,
    runid: str,
    qrels_rel_count: int,
    zscores: dict[tuple[str, str], tuple[float, float]] | None = None,
    query: bool = True,
) -> Evaluation:
    """Compute every requested measure for the queries trec_eval would reach."""
    stop = min(merged.errors, default=len(merged.qids))
    batch = merged.batch if stop == merged.batch.n else _head(merged.batch, stop)
    table = compute(batch, requested, context)
    zero_bogus(table, merged.bogus[:stop])
    qids = merged.qids[:stop]
    relstring_item = next((r for r in requested if r.measure.kind == "relstring"), None)
    # relstring is printed per query only: built only for -q
    wanted = relstring_item is not None and query
    rs = (
        relstrings(batch, int(relstring_item.params[0]))
        if wanted and relstring_item
        else [""] * stop
    )
    if wanted:
        rs = ["" if b else s for s, b in zip(rs, merged.bogus[:stop].tolist(), strict=True)]
    if zscores is not None:
        to_zscores(table, qids, zscores)
    error = merged.errors.get(stop)
    if error is None and stop == 0:
        error = "trec_eval: No queries with both results and relevance info"
    return Evaluation(qids, table, rs, runid, len(merged.qids), qrels_rel_count, error)


def _head(batch: Batch, stop: int) -> Batch:
    stale = None if batch.stale is None else batch.stale[:stop]
    return Batch(
        batch.rel[:stop], batch.num_ret[:stop], batch.rel_levels[:stop], batch.level, stale
    )


def raise_if_failed(ev: Evaluation) -> None:
    if ev.error is not None:
        raise TrecEvalError(ev.error, 4)
