"""Every number-changing convention as one value (:class:`Conventions`) and the presets that
reproduce other tools (:data:`PRESETS`; docs/metrics.md#presets)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

from ranking.metrics.kernel import (
    DISCOUNTS,
    EMPTIES,
    GAINS,
    IDEALS,
    K_BEYONDS,
    SCORE_PRECISIONS,
    TIES,
    check_choice,
)


@dataclass(frozen=True)
class Conventions:
    """Every convention that changes a metric value (docs/metrics.md).

    Defaults are the paper's choices (Niu et al. 2012).
    ``ideal="qrels"`` asks callers (:mod:`ranking.evaluate`) to pass all judged labels as
    ``ideal_labels``; the array functions themselves take the ideal from ``ideal_labels`` when
    given. ``kappa_gain`` is the gain of κ-NDCG, kept separate from graded NDCG's because the
    paper does not state it.
    """

    gain: str = "exp"
    kappa_gain: str = "exp"
    discount: str = "log2"
    ideal: str = "list"
    empty: Any = 0
    ties: str = "stable"
    k_beyond: str = "clip"
    r_max: Any = "query"
    rel_threshold: float = 1.0
    precision_denominator: str = "k"
    score_precision: str = "double"

    def __post_init__(self) -> None:
        check_choice("gain", self.gain, GAINS)
        check_choice("kappa_gain", self.kappa_gain, GAINS)
        check_choice("discount", self.discount, DISCOUNTS)
        check_choice("ideal", self.ideal, IDEALS)
        check_choice("empty", self.empty, EMPTIES)
        check_choice("ties", self.ties, TIES)
        check_choice("k_beyond", self.k_beyond, K_BEYONDS)
        if self.r_max != "query" and (
            isinstance(self.r_max, str | bool) or not math.isfinite(float(self.r_max))
        ):
            raise ValueError(f"r_max must be 'query' or a number, got {self.r_max!r}")
        if self.precision_denominator not in ("k", "list"):
            raise ValueError("precision_denominator must be 'k' or 'list'")
        check_choice("score_precision", self.score_precision, SCORE_PRECISIONS)

    def replace(self, **changes: Any) -> Conventions:
        """A copy with some conventions changed (validated)."""
        unknown = set(changes) - set(asdict(self))
        if unknown:
            raise ValueError(f"unknown convention(s): {sorted(unknown)}")
        return replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


#: Presets reproducing other tools (docs/metrics.md#presets; each checked in tests where an
#: oracle or golden vector exists). ``paper`` is the default of :class:`Conventions`; the CLI
#: picks the one that fits its input (:func:`default_preset`).
PRESETS: Mapping[str, Conventions] = {
    # Niu et al. 2012: 2^r−1, ideal from the list, empty -> 0, input-order ties,
    # ERR with the query's own r_max.
    "paper": Conventions(),
    # trec_eval (and pytrec_eval): ndcg / ndcg_cut use the rel value itself as gain, the ideal
    # from all judged documents, ties by docno descending (comp_sim_docno), queries with no
    # relevant judgment score 0; P@k divides by k; map divides by all relevant qrels; scores
    # are held as C floats (DOCNO_INFO.sim), so scores equal in single precision tie. trec_eval
    # has no ERR; r_max is left at the scale maximum used by gdeval for --metrics err.
    "trec_eval": Conventions(
        gain="linear",
        kappa_gain="linear",
        ideal="qrels",
        empty=0,
        ties="docid",
        r_max=4,
        score_precision="single",
    ),
    # gdeval.pl (TREC Web track): 2^r−1 gain, ideal from the positive qrels, topics without a
    # positive judgment are skipped, ties by docno descending, ERR with R = (2^g−1)/16.
    "gdeval": Conventions(
        gain="exp", kappa_gain="exp", ideal="qrels", empty="skip", ties="docid", r_max=4
    ),
    # LightGBM ndcg@k: label_gain 2^r−1, ideal from the list, queries with no relevant item
    # score 1, k clipped to the list, std::stable_sort (input order).
    "lightgbm": Conventions(gain="exp", ideal="list", empty=1, ties="stable", k_beyond="clip"),
    # LETOR 4.0 Eval-Score-4.0.pl: gain {0:0, 1:1, 2:3} = 2^r−1, discount 1 at positions 1-2
    # then 1/log2(j), ideal from the list, empty -> 0, NDCG@k = 0 when the list has fewer than
    # k documents, P@k divides by k, relevant = label >= 1, ties in file order.
    "letor4": Conventions(
        gain="exp", discount="letor", ideal="list", empty=0, ties="stable", k_beyond="zero"
    ),
    # ranx "ndcg" (Järvelin, linear gain; "ndcg_burges" would be exp), ideal from the qrels with
    # rel >= 1, empty -> 0, map/mrr from the qrels. ranx's own tie order is a numba argsort on
    # the scores, so tied scores have no documented order; input order is used here.
    "ranx": Conventions(gain="linear", kappa_gain="linear", ideal="qrels", empty=0, ties="stable"),
}


def preset(name: str) -> Conventions:
    """The :class:`Conventions` of a named preset (``paper``, ``trec_eval``, ``gdeval``,
    ``lightgbm``, ``letor4``, ``ranx``)."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown preset {name!r}; choose from {sorted(PRESETS)}") from None


#: Why :func:`default_preset` chose a preset, by (run format, truth format).
_DEFAULT_REASONS = {
    "trec_eval": "a TREC run scored against TREC qrels: trec_eval's conventions, so the figures "
    "are the ones trec_eval prints",
    "paper-letor": "a LETOR file: the paper's conventions (Niu et al. 2012), the list being "
    "the query's whole judged candidate set",
    "paper-topk": "a top-k ground truth: the paper's conventions (Niu et al. 2012)",
}


def default_preset(run: str, truth: str) -> tuple[str, str]:
    """The preset that fits the inputs when none is given, and why (docs/metrics.md#presets).

    ``run``: ``"trec"`` (a TREC run file) or ``"letor"`` (a LETOR file and its scores);
    ``truth``: ``"qrels"`` or ``"topk"``. A TREC run with TREC qrels gets trec_eval's
    conventions (a run of depth 100 with the ideal taken from its own list would inflate NDCG
    and MAP); LETOR files and top-k truths keep the paper's.
    """
    if truth == "topk":
        return "paper", _DEFAULT_REASONS["paper-topk"]
    if run == "trec":
        return "trec_eval", _DEFAULT_REASONS["trec_eval"]
    return "paper", _DEFAULT_REASONS["paper-letor"]
