"""Score a run against graded qrels or a top-k ground truth, with a self-describing report.

    from ranking.evaluate import evaluate
    report = evaluate(run, qrels=qrels, metrics=["ndcg@10", "err"], conventions="trec_eval")
    report.metrics          # {"ndcg@10": 0.41, "err": 0.23}   (names exactly as requested)
    report.per_query        # {"ndcg@10": {"q1": 0.5, ...}, ...}
    report.conventions      # every convention used
    report.unknown_queries  # run queries with no truth (ignored, but reported)

* ``run``: ``{qid: {docno: score}}`` (:func:`ranking.io.trec.read_run`, or
  :func:`run_from_letor` for a LETOR file plus one score per row). Mapping order is the
  "input order" used by ``ties="stable"``.
* Truth: ``qrels`` ``{qid: {docno: grade}}`` or ``topk`` (a list/dict of
  :class:`ranking.io.topk.TopKTruth`, turned into κ-labels). Documents of the run without a
  judgment have label 0. The ideal DCG, R (for AP) and r_max come from the whole truth when
  ``conventions.ideal == "qrels"`` (the κ-measures always use the whole truth: N^κ is the DCG
  of T in true order).
* Queries: those in both the truth and the run. Run queries without truth are listed in
  ``unknown_queries`` (trec_eval drops them silently; here they are reported). Truth queries
  without a run are listed in ``missing_queries`` and ignored (trec_eval's default) or, with
  ``missing="zero"``, evaluated as empty rankings (trec_eval ``-c``): 0 for a query with a
  relevant judgment whatever the conventions, the empty-query policy for one without.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ranking import metrics as M
from ranking import trec_measures as TM
from ranking.io.letor import LetorData
from ranking.io.topk import TopKTruth
from ranking.io.trec_fast import TrecColumns
from ranking.io.trec_join import docid_tie_codes, join_labels, single_precision_ties
from ranking.metrics.kernel import DOCID_TIES

__all__ = [
    "EvaluationReport",
    "evaluate",
    "evaluate_columns",
    "qrels_from_letor",
    "run_from_letor",
]

Missing = Literal["ignore", "zero"]


@dataclass
class EvaluationReport:
    """Means, per-query values and the conventions that produced them."""

    metrics: dict[str, float]
    per_query: dict[str, dict[str, float]]
    counted: dict[str, int]
    conventions: dict[str, Any]
    preset: str | None
    truth: str
    queries: list[str]
    unknown_queries: list[str] = field(default_factory=list)
    missing_queries: list[str] = field(default_factory=list)
    missing: str = "ignore"
    qrels_read: str | None = None
    """How the qrels file was read (layout detected or given, grade map), when from a file."""
    preset_reason: str | None = None
    """Why this preset: set when the caller chose it from the inputs (docs/metrics.md#presets)."""
    metric_conventions: dict[str, str] = field(default_factory=dict)
    """Metrics whose name fixes its own conventions (ir-measures names) -> which."""
    trec_eval_differs: dict[str, str] = field(default_factory=dict)
    """Metric -> one line saying what trec_eval would print instead, and why
    (``trec_eval_check=True`` only)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict; NaN (skipped queries) becomes None."""

        def clean(x: float) -> float | None:
            return None if math.isnan(x) else x

        # one list per metric, then one small dict per query (20,000 queries: a tenth of
        # the time of a lookup and a call per value)
        columns = [
            (m, [None if v != v else v for v in map(self.per_query[m].__getitem__, self.queries)])
            for m in self.metrics
        ]
        return {
            "metrics": {k: clean(v) for k, v in self.metrics.items()},
            "per_query": {q: {m: v[i] for m, v in columns} for i, q in enumerate(self.queries)},
            "queries_counted": dict(self.counted),
            "conventions": dict(self.conventions),
            "preset": self.preset,
            "truth": self.truth,
            "n_queries": len(self.queries),
            "unknown_queries": list(self.unknown_queries),
            "missing_queries": list(self.missing_queries),
            "missing_policy": self.missing,
            "qrels_read": self.qrels_read,
            "preset_reason": self.preset_reason,
            "metric_conventions": dict(self.metric_conventions),
            "trec_eval_differs": dict(self.trec_eval_differs),
        }

    def format_text(self, *, per_query: bool = False) -> str:
        """Human-readable report; always states the conventions."""
        lines = []
        width = max([len(m) for m in self.metrics] + [6])
        if per_query:
            header = "query".ljust(12) + "  ".join(m.rjust(width) for m in self.metrics)
            lines.append(header)
            for q in self.queries:
                vals = "  ".join(_fmt(self.per_query[m][q]).rjust(width) for m in self.metrics)
                lines.append(q.ljust(12) + vals)
            lines.append("")
        for m, v in self.metrics.items():
            lines.append(f"{m.ljust(width)}  {_fmt(v)}  (over {self.counted[m]} queries)")
        conv = ", ".join(f"{k}={v}" for k, v in self.conventions.items())
        name = f"preset {self.preset}: " if self.preset else ""
        lines.append(f"conventions: {name}{conv}")
        if self.preset_reason:
            lines.append(f"preset chosen because: {self.preset_reason} (--preset to change)")
        lines.extend(f"{m}: {how}" for m, how in self.metric_conventions.items())
        lines.extend(f"note: {line}" for line in self.trec_eval_differs.values())
        lines.append(
            f"truth: {self.truth}; {len(self.queries)} queries evaluated; "
            f"missing queries: {self.missing}"
        )
        if self.qrels_read:
            lines.append(f"qrels: {self.qrels_read}")
        if self.unknown_queries:
            lines.append(
                f"WARNING: {len(self.unknown_queries)} run queries have no truth and were "
                f"ignored: {_head(self.unknown_queries)}"
            )
        if self.missing_queries:
            verb = "ignored" if self.missing == "ignore" else "scored as empty rankings"
            lines.append(
                f"note: {len(self.missing_queries)} truth queries have no run ({verb}): "
                f"{_head(self.missing_queries)}"
            )
        return "\n".join(lines)


def _fmt(x: float) -> str:
    return "skipped" if math.isnan(x) else f"{x:.4f}"


def _head(items: Sequence[str], n: int = 10) -> str:
    shown = ", ".join(items[:n])
    return shown + (f", ... ({len(items) - n} more)" if len(items) > n else "")


def run_from_letor(data: LetorData, scores: ArrayLike) -> dict[str, dict[str, float]]:
    """``{qid: {docid: score}}`` from a LETOR data set and one score per row (file order)."""
    s = np.asarray(scores, dtype=np.float64)
    if s.shape != (data.n_rows,):
        raise ValueError(f"expected {data.n_rows} scores (one per row), got shape {s.shape}")
    return _grouped(data, s.tolist())


def qrels_from_letor(data: LetorData) -> dict[str, dict[str, float]]:
    """``{qid: {docid: label}}`` from a LETOR data set."""
    return _grouped(data, data.labels.tolist())


def _grouped(data: LetorData, values: list[float]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    docids = data.docids.tolist()
    qids = data.query_ids.tolist()
    for q, (a, b) in enumerate(zip(data.offsets[:-1], data.offsets[1:], strict=True)):
        docs = dict(zip(docids[a:b], values[a:b], strict=True))
        if len(docs) != b - a:
            raise ValueError(f"query {qids[q]} has duplicate document ids")
        out[qids[q]] = docs
    return out


def _setup(
    metrics: Sequence[str], conventions: M.Conventions | str | None, missing: str
) -> tuple[M.Conventions, str | None, dict[str, tuple[str, int | None]]]:
    """Validated conventions, preset name and parsed metric names."""
    if missing not in ("ignore", "zero"):
        raise ValueError(f"missing must be 'ignore' or 'zero', got {missing!r}")
    if not metrics:
        raise ValueError("no metrics requested")
    if isinstance(conventions, str):
        preset_name: str | None = conventions
        conv = M.preset(conventions)
    else:
        preset_name = None
        conv = conventions or M.Conventions()
    parsed = {name: M.parse_metric(name) for name in metrics}
    if len(parsed) != len(metrics):
        raise ValueError("a metric is requested twice")
    return conv, preset_name, parsed


def _refuse_kappa_with_qrels(parsed: Mapping[str, tuple[str, int | None]]) -> None:
    kappa = [n for n, (fam, _) in parsed.items() if fam.startswith("kappa")]
    if kappa:
        raise ValueError(f"{', '.join(kappa)} need a top-k ground truth (--topk), not graded qrels")


@dataclass
class _Padded:
    """The evaluated queries as padded (Q, L) arrays for the metric kernels, row q = query
    ``queries[q]`` (docs/metrics.md#arrays)."""

    queries: list[str]
    unknown: list[str]
    missing: list[str]
    labels: NDArray[np.float64]
    scores: NDArray[np.float64]
    mask: NDArray[np.bool_]
    ideal: NDArray[np.float64]
    """(Q, M): all judged labels of each query, for ideal DCG, R and r_max."""
    ideal_mask: NDArray[np.bool_]
    answered: NDArray[np.bool_]
    """Whether the run has the query at all (``missing="zero"`` adds queries it has not)."""
    docids: NDArray[Any] | None = None
    """(Q, L) doc ids (str) or integers whose order within each row is the ids' byte order;
    for ``ties="docid"`` only."""
    kappa_k: NDArray[np.int64] | None = None
    untied: bool = False
    """No two real cells of a row have equal scores in single precision: every tie rule and
    both score precisions rank alike (then trec_eval's figure need not be computed apart
    when its conventions differ from the caller's in these two only)."""


def _kappa_truth(
    topk: Sequence[TopKTruth] | Mapping[str, TopKTruth],
) -> tuple[dict[str, Mapping[str, float]], dict[str, int]]:
    """Each query's κ-labels and k."""
    items = list(topk.values()) if isinstance(topk, Mapping) else list(topk)
    truth: dict[str, Mapping[str, float]] = {}
    kappa_k: dict[str, int] = {}
    for t in items:
        if t.query_id in truth:
            raise ValueError(f"query {t.query_id} has two top-k truths")
        truth[t.query_id] = t.kappa_labels()
        kappa_k[t.query_id] = t.k
    return truth, kappa_k


def evaluate(
    run: Mapping[str, Mapping[str, float]],
    *,
    qrels: Mapping[str, Mapping[str, float]] | None = None,
    topk: Sequence[TopKTruth] | Mapping[str, TopKTruth] | None = None,
    metrics: Sequence[str] = ("ndcg@10",),
    conventions: M.Conventions | str | None = None,
    missing: Missing = "ignore",
    trec_eval_check: bool = False,
) -> EvaluationReport:
    """Evaluate ``run`` against exactly one of ``qrels`` / ``topk``.

    ``metrics``: names such as ``ndcg@10``, ``err``, ``err@20``, ``kappa-ndcg@5``,
    ``kappa-err``, ``p@10``, ``map``, ``mrr`` (see :func:`ranking.metrics.parse_metric`).
    ``conventions``: a :class:`~ranking.metrics.Conventions`, a preset name or None (the
    paper's). κ-measures need ``topk``; with ``topk`` the graded metrics use the κ-labels.
    ``trec_eval_check``: with qrels, also compute every metric trec_eval has under its
    conventions and report the ones that differ (:attr:`EvaluationReport.trec_eval_differs`).
    """
    if (qrels is None) == (topk is None):
        raise ValueError("give exactly one truth: qrels or topk")
    conv, preset_name, parsed = _setup(metrics, conventions, missing)
    check = trec_eval_check and qrels is not None

    if topk is not None:
        truth, kappa_k = _kappa_truth(topk)
        kind = "topk"
    else:
        assert qrels is not None
        truth, kappa_k = {str(q): d for q, d in qrels.items()}, {}
        kind = "qrels"
        _refuse_kappa_with_qrels(parsed)

    unknown = [q for q in run if q not in truth]
    missing_q = [q for q in truth if q not in run]
    queries = [q for q in truth if q in run]
    if missing == "zero":
        queries = list(truth)
    if not queries:
        raise ValueError("no query is in both the run and the truth")

    labels: list[float] = []
    scores: list[float] = []
    docids: list[str] = []
    sizes: list[int] = []
    ideal: list[float] = []
    ideal_sizes: list[int] = []
    for q in queries:
        docs = run.get(q, {})
        judged = truth[q]
        for d, s in docs.items():
            labels.append(float(judged.get(d, 0.0)))
            scores.append(float(s))
            docids.append(d)
        sizes.append(len(docs))
        ideal.extend(float(v) for v in judged.values())
        ideal_sizes.append(len(judged))
    mask = _group_mask(np.asarray(sizes, dtype=np.int64))
    ideal_mask = _group_mask(np.asarray(ideal_sizes, dtype=np.int64))
    docs_arr = np.asarray(docids, dtype=str) if docids else np.zeros(0, dtype="<U1")
    padded = _Padded(
        queries=queries,
        unknown=unknown,
        missing=missing_q,
        labels=_pad(np.asarray(labels, dtype=np.float64), mask, 0.0),
        scores=_pad(np.asarray(scores, dtype=np.float64), mask, 0.0),
        mask=mask,
        ideal=_pad(np.asarray(ideal, dtype=np.float64), ideal_mask, 0.0),
        ideal_mask=ideal_mask,
        answered=np.array([q in run for q in queries], dtype=bool),
        docids=_pad(docs_arr, mask, "") if _needs_docids(metrics, conv, check) else None,
        kappa_k=np.array([kappa_k[q] for q in queries]) if kappa_k else None,
    )
    own = TM.trec_eval_values(TM.trec_eval_metrics(metrics), run, truth, queries, missing == "zero")
    return _report(padded, metrics, conv, preset_name, kind, missing, check, own)


def evaluate_columns(
    run: TrecColumns,
    qrels: TrecColumns,
    *,
    metrics: Sequence[str] = ("ndcg@10",),
    conventions: M.Conventions | str | None = None,
    missing: Missing = "ignore",
    trec_eval_check: bool = False,
    release_truth_index: bool = True,
) -> EvaluationReport:
    """:func:`evaluate` of a run against qrels given as columns (the readers of
    :mod:`ranking.io.trec_fast`): the same report, numbers and query lists, with grouping and
    joining done in numpy (docs/metrics.md#large-files).

    Run rows are matched with judgments on 64-bit (query, document) keys
    (:mod:`ranking.io.trec_join`), and every match is checked on the strings; if two pairs
    ever share a key the join is redone on the strings. ``ties="docid"`` ranks the ids of the
    tied documents only (in byte order, as strcmp), since the order of untied documents does
    not depend on their ids; with no tie at all in single precision, trec_eval's figure of a
    metric whose conventions differ from the caller's in the tie rule and score precision
    only is the caller's. The join indexes and hashes are released after the join (memory;
    another call rebuilds them), the qrels' unless ``release_truth_index=False`` (many runs
    against one qrels).
    """
    conv, preset_name, parsed = _setup(metrics, conventions, missing)
    _refuse_kappa_with_qrels(parsed)
    run_index = {q: i for i, q in enumerate(run.qids)}
    truth_index = {q: i for i, q in enumerate(qrels.qids)}
    unknown = [q for q in run.qids if q not in truth_index]
    missing_q = [q for q in qrels.qids if q not in run_index]
    queries = list(qrels.qids) if missing == "zero" else [q for q in qrels.qids if q in run_index]
    if not queries:
        raise ValueError("no query is in both the run and the truth")
    position = {q: k for k, q in enumerate(queries)}
    run_pos = np.array([position.get(q, -1) for q in run.qids], dtype=np.int32)[run.query]

    # Each flat array is padded as soon as it exists, so flat and padded copies of one
    # column never coexist with the others (peak memory, docs/metrics.md#large-files).
    judged = join_labels(run, qrels, truth_index)
    # The join index and the hashes (24 + 8 bytes a row) are not needed any more.
    run.release_join_index()
    if release_truth_index:
        qrels.release_join_index()
    rows, sizes = _group_rows(run_pos, len(queries))
    del run_pos
    mask = _group_mask(sizes)
    labels = _pad(_in_groups(judged, rows, copy=False), mask, 0.0)  # judged: this call's own
    del judged
    scores = _pad(_in_groups(run.values, rows), mask, 0.0)
    docids, untied = None, False
    if _needs_docids(metrics, conv, trec_eval_check):
        tied = single_precision_ties(scores, mask)
        untied = not tied.any()
        every_row = np.arange(run.n_rows) if rows is None else rows
        docids = docid_tie_codes(run, every_row, mask, tied)
        del tied, every_row
    del rows
    ideal, ideal_mask = _ideal_labels(qrels, queries, position, keep=not release_truth_index)
    padded = _Padded(
        queries=queries,
        unknown=unknown,
        missing=missing_q,
        labels=labels,
        scores=scores,
        mask=mask,
        ideal=ideal,
        ideal_mask=ideal_mask,
        answered=np.array([q in run_index for q in queries], dtype=bool),
        docids=docids,
        untied=untied,
    )
    del labels, scores, ideal, docids
    own = TM.trec_eval_values_of_columns(
        TM.trec_eval_metrics(metrics), run, qrels, queries, missing
    )
    return _report(padded, metrics, conv, preset_name, "qrels", missing, trec_eval_check, own)


def _ideal_labels(
    qrels: TrecColumns, queries: list[str], position: Mapping[str, int], *, keep: bool
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """(Q, M) judged labels of each of ``queries`` and their mask; with ``keep``, kept on
    the qrels for the next run evaluated on the same queries (many runs, one qrels: the
    same arrays every time)."""
    key = tuple(queries)
    for kept_key, ideal, ideal_mask in qrels.kept_ideal:
        if kept_key == key:
            return ideal, ideal_mask
    truth_pos = np.array([position.get(q, -1) for q in qrels.qids], dtype=np.int32)[qrels.query]
    ideal_rows, ideal_sizes = _group_rows(truth_pos, len(queries))
    del truth_pos
    ideal_mask = _group_mask(ideal_sizes)
    ideal = _pad(_in_groups(qrels.values, ideal_rows), ideal_mask, 0.0)
    qrels.kept_ideal.clear()
    if keep:
        qrels.kept_ideal.append((key, ideal, ideal_mask))
    return ideal, ideal_mask


def _group_rows(
    position: NDArray[np.int32], n_groups: int
) -> tuple[NDArray[np.intp] | None, NDArray[np.int64]]:
    """Indices of the rows with ``position >= 0``, grouped by position (file order kept within
    a group: a stable sort), and the size of each group. None for the indices when they are
    every row in file order (a file grouped in query order, the common case)."""
    sizes = np.bincount(position[position >= 0], minlength=n_groups).astype(np.int64)
    if int(sizes.sum()) == position.shape[0]:  # every row is selected (the common case)
        if not (position[1:] < position[:-1]).any():  # already grouped, in query order
            return None, sizes
        return np.argsort(position, kind="stable"), sizes
    selected = np.flatnonzero(position >= 0)
    return selected[np.argsort(position[selected], kind="stable")], sizes


def _in_groups(
    values: NDArray[Any], rows: NDArray[np.intp] | None, *, copy: bool = True
) -> NDArray[Any]:
    """``values[rows]`` (:func:`_group_rows`); with every row in order, ``values`` itself, or
    a copy of it unless ``copy=False`` (a gather of 2M rows and their indices saved)."""
    if rows is not None:
        return values[rows]
    return values.copy() if copy else values


def _group_mask(sizes: NDArray[np.int64]) -> NDArray[np.bool_]:
    """(Q, L) mask of padded groups: row q has ``sizes[q]`` real cells, then padding
    (docs/metrics.md#arrays; L = the largest group)."""
    width = int(sizes.max()) if sizes.shape[0] else 0
    return np.arange(width) < sizes[:, None]


def _pad(values: NDArray[Any], mask: NDArray[np.bool_], fill: Any) -> NDArray[Any]:
    """Grouped flat ``values`` scattered into the True cells of ``mask``: boolean assignment
    walks the cells row by row, which is the grouped order (as
    :func:`ranking.padding.pad_groups`, without its index arrays); when every cell is real,
    ``values`` itself, shaped (no fill, no scatter)."""
    dtype = np.result_type(values, np.asarray(fill))
    if values.shape[0] == mask.size:  # every cell is real (as many rows in every group)
        return np.asarray(values, dtype=dtype).reshape(mask.shape)
    padded = np.full(mask.shape, fill, dtype=dtype)
    padded[mask] = values
    return padded


def _report(
    g: _Padded,
    metrics: Sequence[str],
    conv: M.Conventions,
    preset_name: str | None,
    kind: str,
    missing: str,
    trec_eval_check: bool = False,
    computed: Mapping[str, NDArray[np.float64]] | None = None,
) -> EvaluationReport:
    """Every metric on ``g``, one vectorised call each (``computed``: the trec_eval family's)."""
    queries = g.queries
    lab, sco, mask, dids = g.labels, g.scores, g.mask, g.docids
    if lab.shape[1] == 0:  # every ranking empty: keep one padding column
        lab, sco, mask = (
            np.zeros((len(queries), 1)),
            np.zeros((len(queries), 1)),
            np.zeros((len(queries), 1), bool),
        )
        if dids is not None:
            dids = np.zeros((len(queries), 1), dtype=dids.dtype)
    ilab, imask = g.ideal, g.ideal_mask
    # missing="zero": a truth query the run does not answer scores 0 whenever it has a relevant
    # judgment, under every convention (with an ideal taken from the empty list the empty-query
    # policy would give it 1 or skip it); without one, the empty-query policy decides.
    unanswered = ~g.answered & (np.where(imask, ilab, 0.0).max(axis=1, initial=0.0) > 0)

    means: dict[str, float] = {}
    per_query: dict[str, dict[str, float]] = {}
    counted: dict[str, int] = {}
    differs: dict[str, str] = {}

    def values_of(name: str, conventions: M.Conventions) -> NDArray[np.float64]:
        values = M.compute(
            name,
            lab,
            sco,
            mask,
            conventions=conventions,
            ideal_labels=ilab,
            ideal_mask=imask,
            docids=dids,
            kappa_k=g.kappa_k,
        )
        return np.where(unanswered, 0.0, values)

    for name in metrics:
        values = computed[name] if computed and name in computed else values_of(name, conv)
        per_query[name] = dict(zip(queries, values.tolist(), strict=True))
        means[name] = M.mean(values)
        counted[name] = int((~np.isnan(values)).sum())
        if trec_eval_check and _trec_eval_has(name, conv):
            same = g.untied and _differs_in_ties_only(name, conv)
            theirs = means[name] if same else M.mean(values_of(name, TREC_EVAL))
            if not _same_figure(means[name], theirs):
                differs[name] = _difference_line(name, means[name], theirs, conv)
    return EvaluationReport(
        metrics=means,
        per_query=per_query,
        counted=counted,
        conventions=conv.as_dict(),
        preset=preset_name,
        truth=kind,
        queries=queries,
        unknown_queries=g.unknown,
        missing_queries=g.missing,
        missing=missing,
        metric_conventions=M.metric_notes(metrics),
        trec_eval_differs=differs,
    )


TREC_EVAL = M.preset("trec_eval")
#: Metric families trec_eval prints (ndcg / ndcg_cut, map, P, recip_rank, recall).
TREC_EVAL_FAMILIES = ("ndcg", "map", "p", "mrr", "recall")


def _trec_eval_has(name: str, conv: M.Conventions) -> bool:
    """Whether trec_eval prints ``name`` and ``conv`` (the caller's) is not trec_eval's."""
    spec = M.parse_metric_spec(name)
    return spec.family in TREC_EVAL_FAMILIES and M.metric_conventions(spec, conv) != TREC_EVAL


def _differs_in_ties_only(name: str, conv: M.Conventions) -> bool:
    """Whether ``name`` under ``conv`` has trec_eval's conventions but for the tie rule and
    the score precision."""
    used = M.metric_conventions(M.parse_metric_spec(name), conv)
    return used.replace(ties=TREC_EVAL.ties, score_precision=TREC_EVAL.score_precision) == (
        TREC_EVAL
    )


def _needs_docids(metrics: Sequence[str], conv: M.Conventions, trec_eval_check: bool) -> bool:
    """Whether some metric breaks score ties by document id (so the ids must be kept)."""
    specs = {name: M.parse_metric_spec(name) for name in metrics}
    return any(
        (trec_eval_check and _trec_eval_has(name, conv))
        or (spec.family != "trec_eval" and M.metric_conventions(spec, conv).ties in DOCID_TIES)
        for name, spec in specs.items()
    )


def _same_figure(a: float, b: float) -> bool:
    """Equal as printed with 4 decimals (trec_eval prints 4)."""
    return (math.isnan(a) and math.isnan(b)) or f"{a:.4f}" == f"{b:.4f}"


def _difference_line(name: str, ours: float, theirs: float, conv: M.Conventions) -> str:
    """One line: the figure, trec_eval's, and the conventions that make the difference."""
    spec = M.parse_metric_spec(name)
    used = M.metric_conventions(spec, conv).as_dict()
    wanted = TREC_EVAL.as_dict()
    read = M.conventions_read(spec.family)
    why = ", ".join(
        f"{key}={used[key]} vs {wanted[key]}"
        for key in used
        if key in read and used[key] != wanted[key]
    )
    return f"{name} {_fmt(ours)}; trec_eval would print {_fmt(theirs)} ({why})"
