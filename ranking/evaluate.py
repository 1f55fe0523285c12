"""Score a run against graded qrels or a top-k ground truth, with a self-describing report.

    from ranking.evaluate import evaluate
    report = evaluate(run, qrels=qrels, metrics=["ndcg@10", "err"], conventions="trec_eval")
    report.metrics          # {"ndcg@10": 0.41, "err": 0.23}   (names exactly as requested)
    report.per_query        # {"ndcg@10": {"q1": 0.5, ...}, ...}
    report.conventions      # every convention used
    report.unknown_queries  # run queries with no truth (ignored, but reported)

* ``run``: ``{qid: {docno: score}}`` (:func:`ranking.trec.read_run`, or
  :func:`run_from_letor` for a LETOR file plus one score per row). Mapping order is the
  "input order" used by ``ties="stable"``.
* Truth: ``qrels`` ``{qid: {docno: grade}}`` or ``topk`` (a list/dict of
  :class:`ranking.topk_io.TopKTruth`, turned into κ-labels). Documents of the run without a
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
from numpy.typing import ArrayLike

from ranking import metrics as M
from ranking.letor import LetorData
from ranking.padding import offsets_from_sizes, pad_groups
from ranking.topk_io import TopKTruth

__all__ = ["EvaluationReport", "evaluate", "qrels_from_letor", "run_from_letor"]

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

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict; NaN (skipped queries) becomes None."""

        def clean(x: float) -> float | None:
            return None if math.isnan(x) else x

        return {
            "metrics": {k: clean(v) for k, v in self.metrics.items()},
            "per_query": {
                q: {m: clean(self.per_query[m][q]) for m in self.metrics} for q in self.queries
            },
            "queries_counted": dict(self.counted),
            "conventions": dict(self.conventions),
            "preset": self.preset,
            "truth": self.truth,
            "n_queries": len(self.queries),
            "unknown_queries": list(self.unknown_queries),
            "missing_queries": list(self.missing_queries),
            "missing_policy": self.missing,
            "qrels_read": self.qrels_read,
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


def evaluate(
    run: Mapping[str, Mapping[str, float]],
    *,
    qrels: Mapping[str, Mapping[str, float]] | None = None,
    topk: Sequence[TopKTruth] | Mapping[str, TopKTruth] | None = None,
    metrics: Sequence[str] = ("ndcg@10",),
    conventions: M.Conventions | str | None = None,
    missing: Missing = "ignore",
) -> EvaluationReport:
    """Evaluate ``run`` against exactly one of ``qrels`` / ``topk``.

    ``metrics``: names such as ``ndcg@10``, ``err``, ``err@20``, ``kappa-ndcg@5``,
    ``kappa-err``, ``p@10``, ``map``, ``mrr`` (see :func:`ranking.metrics.parse_metric`).
    ``conventions``: a :class:`~ranking.metrics.Conventions`, a preset name or None (the
    paper's). κ-measures need ``topk``; with ``topk`` the graded metrics use the κ-labels.
    """
    if (qrels is None) == (topk is None):
        raise ValueError("give exactly one truth: qrels or topk")
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

    truth: dict[str, Mapping[str, float]]
    kappa_k: dict[str, int] = {}
    if topk is not None:
        items = list(topk.values()) if isinstance(topk, Mapping) else list(topk)
        truth = {}
        for t in items:
            if t.query_id in truth:
                raise ValueError(f"query {t.query_id} has two top-k truths")
            truth[t.query_id] = t.kappa_labels()
            kappa_k[t.query_id] = t.k
        kind = "topk"
    else:
        assert qrels is not None
        truth = {str(q): d for q, d in qrels.items()}
        kind = "qrels"
        kappa = [n for n, (fam, _) in parsed.items() if fam.startswith("kappa")]
        if kappa:
            raise ValueError(
                f"{', '.join(kappa)} need a top-k ground truth (--topk), not graded qrels"
            )

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
    off = offsets_from_sizes(sizes)
    lab, mask = pad_groups(np.asarray(labels, dtype=np.float64), off)
    sco, _ = pad_groups(np.asarray(scores, dtype=np.float64), off)
    docs_arr = np.asarray(docids, dtype=str) if docids else np.zeros(0, dtype="<U1")
    dids, _ = pad_groups(docs_arr, off, fill="")
    if lab.shape[1] == 0:  # every ranking empty: keep one padding column
        lab, sco, mask = (
            np.zeros((len(queries), 1)),
            np.zeros((len(queries), 1)),
            np.zeros((len(queries), 1), bool),
        )
        dids = np.full((len(queries), 1), "")
    ilab, imask = pad_groups(np.asarray(ideal, dtype=np.float64), offsets_from_sizes(ideal_sizes))
    kk = np.array([kappa_k[q] for q in queries]) if kappa_k else None
    # missing="zero": a truth query the run does not answer scores 0 whenever it has a relevant
    # judgment, under every convention (with an ideal taken from the empty list the empty-query
    # policy would give it 1 or skip it); without one, the empty-query policy decides.
    unanswered = np.array([q not in run for q in queries]) & (
        np.where(imask, ilab, 0.0).max(axis=1, initial=0.0) > 0
    )

    means: dict[str, float] = {}
    per_query: dict[str, dict[str, float]] = {}
    counted: dict[str, int] = {}
    for name in metrics:
        values = M.compute(
            name,
            lab,
            sco,
            mask,
            conventions=conv,
            ideal_labels=ilab,
            ideal_mask=imask,
            docids=dids if conv.ties == "docid" else None,
            kappa_k=kk,
        )
        values = np.where(unanswered, 0.0, values)
        per_query[name] = dict(zip(queries, values.tolist(), strict=True))
        means[name] = M.mean(values)
        counted[name] = int((~np.isnan(values)).sum())
    return EvaluationReport(
        metrics=means,
        per_query=per_query,
        counted=counted,
        conventions=conv.as_dict(),
        preset=preset_name,
        truth=kind,
        queries=queries,
        unknown_queries=unknown,
        missing_queries=missing_q,
        missing=missing,
    )
