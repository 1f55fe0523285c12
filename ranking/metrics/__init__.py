"""Ranking metrics with every number-changing convention as a named parameter: the public API.

Layout (as ranx's ``metrics`` package): :mod:`~ranking.metrics.kernel` (validated padded
arrays, ranking with tie rules, gains, discounts, ideal DCG, the mean over queries), one module
per family (:mod:`~ranking.metrics.discounted` DCG/NDCG, :mod:`~ranking.metrics.cascade` ERR,
:mod:`~ranking.metrics.binary` P/R/AP/RR, :mod:`~ranking.metrics.kappa` κ-NDCG/κ-ERR,
:mod:`~ranking.metrics.compat` compatibility, computed by :mod:`ranking.metrics.rbo`),
:mod:`~ranking.metrics.conventions` (conventions and presets), :mod:`~ranking.metrics.names`
(``"ndcg@10"`` parsing), :mod:`~ranking.metrics.by_name` (:func:`compute` by name) and
:mod:`~ranking.metrics.chunking` (blocks of queries on threads). κ-labels come from
:func:`ranking.io.topk.kappa_labels`.

All metrics take padded arrays (docs/metrics.md#arrays)::

    labels (Q, L), scores (Q, L), mask (Q, L) bool  -> per-query values (Q,)

or 1-D arrays for a single query (then Q = 1). ``mask[q, j]`` is True for a real document;
padding cells are ignored wherever they are (see :func:`ranking.padding.pad_groups`). The work
is vectorised over queries and documents, with no Python loop per query or document: one sort
per call (for a cutoff ``at`` with stable ties, an O(L) ``argpartition`` selection of the top
``at``, exact even with boundary ties), then row-wise sums. Large batches run in blocks of
about 2^18 cells on up to 4 threads (``HEAPJUDGE_THREADS``); blocks change no value.

Ranking ``π``: documents sorted by descending score. Score ties (the ``ties`` parameter):

* ``"stable"``   input order (the paper's choice; LightGBM, XGBoost, LETOR);
* ``"docid"``    doc id *descending*, as trec_eval's ``comp_sim_docno`` and gdeval (needs
  ``docids``, a (Q, L) array of str compared bytewise like strcmp, or of integers compared
  numerically); ``"docid_asc"`` doc id ascending (ir-measures' compat provider);
* ``"pessimistic"`` / ``"optimistic"``  the worst / best label first (bounds on any tie order);
* ``"average"``  the expectation over all orders of each tied group (McSherry & Najork 2008,
  ECIR, as scikit-learn's ``ndcg_score``): every position of a tied group gets the group's
  mean gain. Exact for the linear metrics (DCG, NDCG, P@k, R@k); ERR, AP, RR and
  compatibility are not linear in the order, so they refuse it.

Other conventions (paper defaults first; docs/metrics.md):

* ``gain``: ``"exp"`` G(r) = 2^r − 1, or ``"linear"`` G(r) = r.
* ``discount``: ``"log2"`` D(j) = 1/log2(1 + j), or ``"letor"`` D(j) = 1/max(1, log2 j)
  (LETOR's Eval-Score scripts: positions 1 and 2 undiscounted).
* ideal DCG: from the ranked list itself (default), or from ``ideal_labels`` / ``ideal_mask``,
  an independent padded array of *all* judged labels of each query (trec_eval, gdeval, ranx
  take the ideal from the qrels, so unretrieved relevant documents lower the score).
* ``empty``: a query whose ideal gain is 0 (no relevant item) scores ``0``, ``1`` or
  ``"skip"`` (returned as NaN; :func:`mean` ignores NaN).
* ``k_beyond``: when ``at`` exceeds the list length, ``"clip"`` to the list (default) or score
  ``"zero"`` (LETOR 4.0's script leaves NDCG@k undefined, averaged as 0).
* ERR's ``r_max``: ``"query"`` (the highest label of the query, Niu et al. 2012: of all its
  judged documents when ``ideal_labels`` are given, which :func:`compute` always passes to
  ERR) or a number (the scale maximum, e.g. 4 as in Chapelle et al. 2009, gdeval, RankLib).
* ``score_precision`` (:class:`Conventions` only): ``"double"``, or ``"single"`` to round
  the scores to C ``float`` first as trec_eval does, so that scores equal in single
  precision tie (and are then ordered by the tie rule).

Negative labels (TREC's −1 = "judged unusable") have zero gain and are not relevant.

Presets (:data:`PRESETS`, :func:`preset`; docs/metrics.md#presets), as (gain, discount, ideal,
empty, ties, k_beyond, ERR r_max):

=========== ======= ======= ======= ====== ======= ====== =====================================
preset      gain    disc.   ideal   empty  ties    k>n    notes
=========== ======= ======= ======= ====== ======= ====== =====================================
paper       exp     log2    list    0      stable  clip   Niu et al. 2012; r_max
                                                          per query (the default;
                                                          :func:`default_preset`)
trec_eval   linear  log2    qrels   0      docid   clip   ndcg, ndcg_cut, map, P, recip_rank;
                                                          also pytrec_eval (same C code);
                                                          scores in single precision
gdeval      exp     log2    qrels   skip   docid   clip   TREC Web track; ERR R=(2^g−1)/16
lightgbm    exp     log2    list    1      stable  clip   LightGBM ndcg@k (label_gain 2^r−1)
letor4      exp     letor   list    0      stable  zero   Eval-Score-4.0.pl; P@k over k
ranx        linear  log2    qrels   0      stable  clip   ranx ``ndcg``; use gain=exp for
                                                          ``ndcg_burges``; ranx's own tie order
                                                          is an unstable numba argsort
=========== ======= ======= ======= ====== ======= ====== =====================================

References: Järvelin & Kekäläinen 2002 (DCG); Burges et al. 2005 (2^r − 1 gain);
Chapelle et al. 2009 (ERR); Niu, Guo, Lan, Cheng 2012, SIGIR, "Top-k learning to rank:
labeling, ranking and evaluation" (κ-NDCG, κ-ERR; per-query r_max).
"""

from __future__ import annotations

from ranking.metrics.binary import average_precision, precision, recall, reciprocal_rank
from ranking.metrics.by_name import compute, conventions_read, metric_conventions, metric_notes
from ranking.metrics.cascade import err
from ranking.metrics.compat import compatibility
from ranking.metrics.conventions import PRESETS, Conventions, default_preset, preset
from ranking.metrics.discounted import dcg, ndcg
from ranking.metrics.kappa import kappa_err, kappa_ndcg
from ranking.metrics.kernel import mean
from ranking.metrics.names import METRIC_NAMES, MetricSpec, parse_metric, parse_metric_spec

__all__ = [
    "METRIC_NAMES",
    "PRESETS",
    "Conventions",
    "MetricSpec",
    "average_precision",
    "compatibility",
    "compute",
    "conventions_read",
    "dcg",
    "default_preset",
    "err",
    "kappa_err",
    "kappa_ndcg",
    "mean",
    "metric_conventions",
    "metric_notes",
    "ndcg",
    "parse_metric",
    "parse_metric_spec",
    "precision",
    "preset",
    "recall",
    "reciprocal_rank",
]
