"""Metrics by name (``"ndcg@10"``) under named conventions: :func:`compute`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ranking.metrics.binary import average_precision, precision, recall, reciprocal_rank
from ranking.metrics.cascade import err
from ranking.metrics.compat import compatibility
from ranking.metrics.conventions import Conventions, preset
from ranking.metrics.discounted import dcg, ndcg
from ranking.metrics.kappa import kappa_err, kappa_ndcg
from ranking.metrics.kernel import F64
from ranking.metrics.names import MetricSpec, parse_metric_spec

#: Conventions each metric family reads, beyond ``at`` (``gain`` is ``kappa_gain`` for
#: κ-NDCG). ``ideal`` stands for ``ideal_labels``/``ideal_mask``. ERR and κ-ERR always receive
#: the ideal labels when given: their r_max and "no relevant document" are properties of the
#: query's judgments, not of what a run retrieved (docs/metrics.md#err).
_NDCG_OPTIONS = ("gain", "discount", "ties", "empty", "k_beyond", "ideal", "docids")
_FAMILIES: dict[str, tuple[Callable[..., F64], tuple[str, ...]]] = {
    "ndcg": (ndcg, _NDCG_OPTIONS),
    "kappa-ndcg": (kappa_ndcg, _NDCG_OPTIONS),
    "dcg": (dcg, ("gain", "discount", "ties", "docids")),
    "err": (err, ("r_max", "ties", "empty", "ideal", "docids")),
    "kappa-err": (kappa_err, ("k", "ties", "empty", "ideal", "docids")),
    "p": (precision, ("rel_threshold", "ties", "denominator", "docids")),
    "map": (average_precision, ("rel_threshold", "ties", "empty", "ideal", "docids")),
    "mrr": (reciprocal_rank, ("rel_threshold", "ties", "empty", "ideal", "docids")),
    "recall": (recall, ("rel_threshold", "ties", "empty", "ideal", "docids")),
    "compat": (compatibility, ("p", "normalize", "ties", "empty", "ideal", "docids")),
}
#: Families whose ideal is always the whole truth, whatever ``Conventions.ideal`` says: the
#: κ-measures (N^κ is the truth's DCG), ERR (r_max is the query's) and compatibility (the
#: ideal ranking is the labels').
ALWAYS_QRELS_IDEAL = ("kappa-ndcg", "err", "kappa-err", "compat")

#: The conventions of the tools ir-measures computes its measures with (ir-measures 0.4):
#: trec_eval (its ``pytrec_eval`` provider); gdeval, whose topics without a relevant
#: document ir-measures reports as 0; its ``compat`` provider, which sorts a run by score
#: descending, then docno ascending, and scores a query without a relevant document 0.
TOOL_CONVENTIONS: dict[str, Conventions] = {
    "trec_eval": preset("trec_eval"),
    "gdeval": preset("gdeval").replace(empty=0),
    "compat": Conventions(ties="docid_asc", empty=0),
}


_OPTION_FIELDS = {"denominator": "precision_denominator", "ideal": "ideal"}


#: The family of trec_eval's own measures (:func:`ranking.metrics.names.trec_eval_spec`):
#: computed by :mod:`ranking.trec_eval` from the judgments, under trec_eval's conventions.
TREC_EVAL_FAMILY = "trec_eval"


def conventions_read(family: str) -> tuple[str, ...]:
    """The :class:`Conventions` fields a metric family reads (``score_precision`` always;
    none for the ``trec_eval`` family, which has trec_eval's fixed conventions)."""
    if family == TREC_EVAL_FAMILY:
        return ()
    _, wanted = _FAMILIES[family]
    fields = [_OPTION_FIELDS.get(key, key) for key in wanted]
    if family == "kappa-ndcg":
        fields = ["kappa_gain" if f == "gain" else f for f in fields]
    known = set(Conventions().as_dict())
    return (*(f for f in fields if f in known), "score_precision")


def metric_conventions(spec: MetricSpec, conventions: Conventions) -> Conventions:
    """The conventions ``spec`` is computed under: ``conventions``, unless the name fixes its
    own (ir-measures names: their tool's preset, with the name's relevance threshold)."""
    c = conventions
    if spec.preset is not None:
        c = TOOL_CONVENTIONS[spec.preset]
    if spec.rel is not None:
        c = c.replace(rel_threshold=spec.rel)
    return c


def compute(
    name: str,
    labels: ArrayLike,
    scores: ArrayLike,
    mask: ArrayLike | None = None,
    *,
    conventions: Conventions | str | None = None,
    ideal_labels: ArrayLike | None = None,
    ideal_mask: ArrayLike | None = None,
    docids: ArrayLike | None = None,
    kappa_k: int | ArrayLike | None = None,
) -> F64:
    """Per-query values (Q,) of the metric ``name`` (``"ndcg@10"``, ``"kappa-err"``, ...)
    under ``conventions`` (a :class:`Conventions`, a preset name, or None for the paper's;
    an ir-measures name uses its tool's instead, :func:`metric_conventions`).

    ``labels``/``scores``/``mask``: (Q, L) or (L,); ``ideal_labels``/``ideal_mask``: (Q, M),
    all judged labels of each query, used as the ideal of NDCG and R of AP/RR only when
    ``conventions.ideal == "qrels"``; always for the κ-measures (their ideal is the truth
    itself) and for ERR's r_max and empty test (properties of the query). ``docids`` (Q, L)
    for ``ties="docid"``; ``kappa_k`` the k of each query's top-k truth (κ-ERR's r_max).
    """
    given = preset(conventions) if isinstance(conventions, str) else conventions
    spec = parse_metric_spec(name)
    c = metric_conventions(spec, given or Conventions())
    family, at = spec.family, spec.at
    if family == TREC_EVAL_FAMILY:
        # bpref, infAP, unj... tell judged non-relevant from unjudged documents, which the
        # padded labels do not: ranking.evaluate computes them from the judgments themselves.
        raise ValueError(
            f"{name!r} is a trec_eval measure: it is computed from the judgments by "
            "ranking.evaluate.evaluate (heapjudge evaluate), not on padded label arrays"
        )
    fn, wanted = _FAMILIES[family]
    use_ideal = c.ideal == "qrels" or family in ALWAYS_QRELS_IDEAL
    available: dict[str, Any] = {
        "gain": c.kappa_gain if family == "kappa-ndcg" else c.gain,
        "discount": c.discount,
        "ties": c.ties,
        "empty": c.empty,
        "k_beyond": c.k_beyond,
        "r_max": c.r_max,
        "k": kappa_k,
        "rel_threshold": c.rel_threshold,
        "denominator": c.precision_denominator,
        "docids": docids,
        "p": spec.p,
        "normalize": spec.normalize,
    }
    options = {key: available[key] for key in wanted if key != "ideal"}
    if "ideal" in wanted and use_ideal:
        options.update(ideal_labels=ideal_labels, ideal_mask=ideal_mask)
    if c.score_precision == "single":
        # trec_eval stores each score in a C float: scores equal in single precision tie.
        scores = np.asarray(scores, dtype=np.float32)
    # ties="average" reaches ERR/AP/RR unchanged so that they raise rather than silently
    # switch to another tie rule.
    if family == "compat":
        return fn(labels, scores, mask, **options)
    return fn(labels, scores, mask, at=at, **options)


def metric_notes(metrics: Sequence[str]) -> dict[str, str]:
    """Metrics whose name fixes its own conventions (ir-measures names, trec_eval's
    measures), with a line saying which (the report's ``metric_conventions``)."""
    out: dict[str, str] = {}
    for name in metrics:
        spec = parse_metric_spec(name)
        if spec.family == TREC_EVAL_FAMILY:
            rel = f" -l {spec.rel:g}" if spec.rel is not None else ""
            out[name] = (
                f"trec_eval measure {spec.value}{rel}: computed by ranking.trec_eval with "
                "trec_eval's conventions, whatever the preset"
            )
        elif spec.preset is not None:
            rel = f", relevant from {spec.rel:g}" if spec.rel is not None else ""
            tool = {
                "compat": "ir-measures' compat provider",
                "gdeval": "gdeval (as ir-measures reads it: no relevant document scores 0)",
            }.get(spec.preset, spec.preset)
            out[name] = f"ir-measures name: {tool}'s conventions{rel}, whatever the preset"
    return out
