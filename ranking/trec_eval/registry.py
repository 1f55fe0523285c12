"""trec_eval 10.0's measures, in its output order (``measures.c``), and its nicknames.

Each :class:`Measure` says how its parameters are read (``kind``), how a query's values are
computed (``compute``: a :class:`~ranking.trec_eval.merge.Batch` and the parameters to a
``(queries, values)`` array), how the summary is formed (``summary``) and whether per-query
lines are printed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ranking.trec_eval import m_cutoffs as mc
from ranking.trec_eval import m_gain as mg
from ranking.trec_eval import m_interp as mi
from ranking.trec_eval import m_judged as mj
from ranking.trec_eval.merge import Batch, FloatArray

__all__ = ["MEASURES", "NICKNAMES", "Context", "Measure", "by_name"]


@dataclass(frozen=True)
class Context:
    """Command-line values some measures read (``-N``)."""

    num_docs: int = 0


Compute = Callable[[Batch, Any, Context], FloatArray]


@dataclass(frozen=True)
class Measure:
    """One trec_eval measure.

    ``kind``: ``single`` (one double), ``count`` (printed as an integer), ``cut_long``,
    ``cut_double`` (one value per cutoff), ``p_double``/``p_pair`` (one value named with its
    parameters), ``gm`` (summary only, geometric mean), ``runid``, ``relstring``.
    ``summary``: ``mean``, ``sum``, ``gm``, ``num_q``, ``num_rel``, ``none``.
    ``source``: which judgments it reads: ``qrels``, ``prefs`` or ``qrels_jg``.
    """

    name: str
    kind: str
    compute: Compute | None
    default: Any = None
    summary: str = "mean"
    per_query: bool = True
    source: str = "qrels"


def _col(values: FloatArray) -> FloatArray:
    return values[:, None]


def _single(fn: Callable[[Batch], FloatArray]) -> Compute:
    return lambda b, p, c: _col(fn(b))


def _counts(attr: str) -> Compute:
    return lambda b, p, c: _col(np.asarray(getattr(b, attr), dtype=np.float64))


def _ndcg(b: Batch, p: Any, c: Context) -> FloatArray:
    dcg, ideal = mg.dcg_values(b, p)
    out = np.zeros(b.n)
    np.divide(dcg, ideal, out=out, where=ideal > 0)
    return _col(out)


CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
RECALL_POINTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
R_MULTS = (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)

_QRELS: list[Measure] = [
    Measure("runid", "runid", None, summary="none", per_query=False),
    Measure("num_q", "count", lambda b, p, c: np.ones((b.n, 1)), summary="num_q", per_query=False),
    Measure("num_ret", "count", _counts("num_ret"), summary="sum"),
    Measure("num_rel", "count", _counts("num_rel"), summary="num_rel"),
    Measure("num_rel_ret", "count", _counts("num_rel_ret"), summary="sum"),
    Measure("map", "single", _single(mc.mean_ap)),
    Measure("gm_map", "single", _single(mj.gm_map), summary="gm", per_query=False),
    Measure("Rprec", "single", _single(mc.r_precision)),
    Measure("bpref", "single", _single(mj.bpref)),
    Measure("recip_rank", "single", _single(mc.recip_rank)),
    Measure(
        "iprec_at_recall", "cut_double", lambda b, p, c: mi.iprec_at_recall(b, p), RECALL_POINTS
    ),
    Measure("P", "cut_long", lambda b, p, c: mc.precision(b, p), CUTS),
    Measure("relstring", "relstring", None, (10.0,), summary="none"),
    Measure("recall", "cut_long", lambda b, p, c: mc.recall(b, p), CUTS),
    Measure("infAP", "single", _single(mj.inf_ap)),
    Measure("gm_bpref", "single", _single(mj.gm_bpref), summary="gm", per_query=False),
    Measure("Rprec_mult", "cut_double", lambda b, p, c: mi.rprec_mult(b, p), R_MULTS),
    Measure(
        "utility",
        "p_double",
        lambda b, p, c: _col(mc.utility(b, p, c.num_docs)),
        (1.0, -1.0, 0.0, 0.0),
    ),
    Measure("11pt_avg", "p_double", lambda b, p, c: _col(mi.eleven_pt_avg(b, p)), RECALL_POINTS),
    Measure("binG", "single", _single(mj.bin_g)),
    Measure("G", "p_pair", lambda b, p, c: _col(mg.g_measure(b, p)), ()),
    Measure("dcg", "p_pair", lambda b, p, c: _col(mg.dcg_values(b, p)[0]), ()),
    Measure("ideal_dcg", "p_pair", lambda b, p, c: _col(mg.dcg_values(b, p)[1]), ()),
    Measure("ndcg", "p_pair", _ndcg, ()),
    Measure("ndcg_rel", "p_pair", lambda b, p, c: _col(mg.ndcg_rel(b, p)), ()),
    Measure("Rndcg", "p_pair", lambda b, p, c: _col(mg.rndcg(b, p)), ()),
    Measure("ndcg_cut", "cut_long", lambda b, p, c: mg.ndcg_cut(b, p), CUTS),
    Measure("map_cut", "cut_long", lambda b, p, c: mc.map_cut(b, p), CUTS),
    Measure("relative_P", "cut_long", lambda b, p, c: mc.relative_p(b, p), CUTS),
    Measure("success", "cut_long", lambda b, p, c: mc.success(b, p), (1, 5, 10)),
    Measure("set_P", "single", _single(mc.set_p)),
    Measure("set_relative_P", "single", _single(mc.set_relative_p)),
    Measure("set_recall", "single", _single(mc.set_recall)),
    Measure("set_map", "single", _single(mc.set_map)),
    Measure("set_F", "p_double", lambda b, p, c: _col(mc.set_f(b, p[0])), (1.0,)),
    Measure("num_nonrel_judged_ret", "count", _single(mc.num_nonrel_judged_ret), summary="sum"),
]

PREFS_NAMES = (
    "prefs_num_prefs_poss",
    "prefs_num_prefs_ful",
    "prefs_num_prefs_ful_ret",
    "prefs_simp",
    "prefs_pair",
    "prefs_avgjg",
    "prefs_avgjg_Rnonrel",
    "prefs_simp_ret",
    "prefs_pair_ret",
    "prefs_avgjg_ret",
    "prefs_avgjg_Rnonrel_ret",
    "prefs_simp_imp",
    "prefs_pair_imp",
    "prefs_avgjg_imp",
)
_PREFS_SUM = {"prefs_num_prefs_poss", "prefs_num_prefs_ful", "prefs_num_prefs_ful_ret"}

_TAIL: list[Measure] = [
    *(
        Measure(
            name,
            "count" if name in _PREFS_SUM else "single",
            None,
            summary="sum" if name in _PREFS_SUM else "mean",
            source="prefs",
        )
        for name in PREFS_NAMES
    ),
    Measure("map_avgjg", "single", None, source="qrels_jg"),
    Measure("P_avgjg", "cut_long", None, CUTS, source="qrels_jg"),
    Measure("Rprec_mult_avgjg", "cut_double", None, R_MULTS, source="qrels_jg"),
    Measure("yaap", "single", _single(mc.yaap)),
    Measure("rbp", "p_pair", lambda b, p, c: _col(mg.rbp(b, p)), ()),
    Measure("rbp_resid", "p_pair", lambda b, p, c: _col(mg.rbp_resid(b, p)), ()),
    Measure("unj", "cut_long", lambda b, p, c: mc.unjudged(b, p), (5, 10, 20)),
]

MEASURES: tuple[Measure, ...] = (*_QRELS, *_TAIL)

_OFFICIAL = (
    "runid",
    "num_q",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "map",
    "gm_map",
    "Rprec",
    "bpref",
    "recip_rank",
    "iprec_at_recall",
    "P",
)
NICKNAMES: dict[str, Sequence[str]] = {
    "official": _OFFICIAL,
    "set": (
        "runid",
        "num_q",
        "num_ret",
        "num_rel",
        "num_rel_ret",
        "utility",
        "set_P",
        "set_recall",
        "set_relative_P",
        "set_map",
        "set_F",
    ),
    "all_trec": (
        *_OFFICIAL,
        "relstring",
        "recall",
        "unj",
        "rbp",
        "rbp_resid",
        "infAP",
        "gm_bpref",
        "utility",
        "11pt_avg",
        "ndcg",
        "relative_P",
        "Rprec_mult",
        "success",
        "map_cut",
        "ndcg_cut",
        "ndcg_rel",
        "Rndcg",
        "binG",
        "G",
        "set_P",
        "set_recall",
        "set_relative_P",
        "set_map",
        "set_F",
        "num_nonrel_judged_ret",
    ),
    "all_prefs": ("runid", "num_q", *PREFS_NAMES),
    "prefs": ("runid", "num_q", *PREFS_NAMES[:6]),
    "qrels_jg": ("runid", "num_q", "map_avgjg", "P_avgjg", "Rprec_mult_avgjg"),
}

_BY_NAME = {m.name: m for m in MEASURES}


def by_name(name: str) -> Measure | None:
    return _BY_NAME.get(name)
