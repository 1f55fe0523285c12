"""Metric names: heapjudge's (``"ndcg@10"``, ``"compat@p=0.9"``), trec_eval's ``P_10`` and
``ndcg_cut.10``, aliases, and ir-measures' measure names (``nDCG@10``, ``AP``, ``P(rel=2)@10``,
``R@100``, ``ERR@20``, ``Compat(p=0.95)``; docs/metrics.md#names).

A heapjudge name is computed under the conventions the caller chooses (a preset). An
ir-measures name carries the conventions of the tool ir-measures computes it with, whatever
the caller's preset: trec_eval's (ir-measures' ``pytrec_eval`` provider) for nDCG, AP, P, RR
and R; gdeval's for ERR; the ``compat`` provider's for Compat (:data:`IR_MEASURES`; the
conventions are :data:`ranking.metrics.by_name.TOOL_CONVENTIONS`).

trec_eval's other measures (bpref, infAP, Rprec, success, RBP, the set measures, the
interpolated precisions, ...) are the family ``trec_eval``: computed by
:mod:`ranking.trec_eval` itself (its kernels, its conventions), named the ir-measures way
(``Bpref``, ``infAP``, ``Rprec``, ``Success@5``, ``RBP(p=0.8)``, ``IPrec@0.5``, ``SetF``,
:data:`IR_MEASURES_TREC_EVAL`), by heapjudge names (``bpref``, ``infap``, ``rprec``,
``success@5``, ``rbp@p=0.8``), or as trec_eval prints them (``success_5``,
``iprec_at_recall_0.50``, ``Rprec_mult_0.20``, ``11pt_avg``, ``num_rel_ret``) or asks for them
with ``-m`` (``success.5``, ``rbp.p=0.8``): :func:`trec_eval_spec`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Metric families accepted by :func:`parse_metric` / :func:`compute`.
METRIC_NAMES: tuple[str, ...] = (
    "ndcg",
    "dcg",
    "err",
    "kappa-ndcg",
    "kappa-err",
    "p",
    "map",
    "mrr",
    "recall",
    "compat",
)

_ALIASES = {
    "ndcg": "ndcg",
    "ndcg_cut": "ndcg",
    "dcg": "dcg",
    "err": "err",
    "kappa-ndcg": "kappa-ndcg",
    "kappa_ndcg": "kappa-ndcg",
    "κ-ndcg": "kappa-ndcg",
    "kappa-err": "kappa-err",
    "kappa_err": "kappa-err",
    "κ-err": "kappa-err",
    "p": "p",
    "precision": "p",
    "map": "map",
    "ap": "map",
    "mrr": "mrr",
    "rr": "mrr",
    "recip_rank": "mrr",
    "recall": "recall",
    "compat": "compat",
}

#: ir-measures measure name -> (heapjudge family, the tool ir-measures computes it with,
#: parameters it accepts beside the cutoff).
IR_MEASURES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "nDCG": ("ndcg", "trec_eval", ()),
    "AP": ("map", "trec_eval", ("rel",)),
    "P": ("p", "trec_eval", ("rel",)),
    "RR": ("mrr", "trec_eval", ("rel",)),
    "R": ("recall", "trec_eval", ("rel",)),
    "ERR": ("err", "gdeval", ()),
    "Compat": ("compat", "compat", ("p", "normalize")),
}

#: ir-measures names of measures :mod:`ranking.trec_eval` computes: name -> (trec_eval
#: measure, what the name takes: ``single`` (nothing), ``cut`` (``@k``, required), ``point``
#: (``@r``, a recall level), ``rbp`` (``p=``), ``setf`` (``beta=``); and ``rel`` always).
IR_MEASURES_TREC_EVAL: dict[str, tuple[str, str]] = {
    "Bpref": ("bpref", "single"),
    "BPref": ("bpref", "single"),
    "infAP": ("infAP", "single"),
    "Rprec": ("Rprec", "single"),
    "RPrec": ("Rprec", "single"),
    "Success": ("success", "cut"),
    "IPrec": ("iprec_at_recall", "point"),
    "RBP": ("rbp", "rbp"),
    "SetP": ("set_P", "single"),
    "SetR": ("set_recall", "single"),
    "SetRelP": ("set_relative_P", "single"),
    "SetAP": ("set_map", "single"),
    "SetF": ("set_F", "setf"),
    "NumRet": ("num_ret", "single"),
    "NumRel": ("num_rel", "single"),
    "NumRelRet": ("num_rel_ret", "single"),
}
#: ir-measures' default persistence of RBP (its ``RBP`` measure; trec_eval's is 0.9).
RBP_P = 0.8
#: heapjudge's own (case-insensitive) names of trec_eval measures.
_TREC_EVAL_ALIASES = {"bpref": "bpref", "infap": "infAP", "rprec": "Rprec", "r-prec": "Rprec"}
#: trec_eval measures that cannot be a per-query metric: summaries only (``gm_*`` are
#: geometric means, ``num_q`` a count, ``runid``/``relstring`` text), or read other
#: judgments than qrels (the preference and judgment-group measures).
_NOT_PER_QUERY = ("runid", "num_q", "gm_map", "gm_bpref", "relstring")

#: Default persistence of compatibility (Clarke, Vtyurina, Smucker, TOIS 2021).
COMPAT_P = 0.95

_IR_NAME = re.compile(
    r"^(?P<name>[A-Za-z]+)(?:\((?P<params>[^)]*)\))?(?:@(?P<cut>\d+(?:\.\d*)?|\.\d+))?$"
)


@dataclass(frozen=True)
class MetricSpec:
    """A parsed metric name: its family, cutoff and parameters.

    ``preset``: the tool whose conventions the name itself fixes (ir-measures names), else
    None (the caller's). ``rel``: the relevance threshold the name fixes (``P(rel=2)``), else None.
    ``p``/``normalize``: compatibility's persistence and normalisation.
    """

    family: str
    at: int | None = None
    preset: str | None = None
    rel: float | None = None
    p: float = COMPAT_P
    normalize: bool = True
    trec_eval: str | None = None
    """Family ``trec_eval``: the measure as trec_eval's ``-m`` names it (``success.5``)."""
    value: str | None = None
    """Family ``trec_eval``: the name trec_eval prints its value under (``success_5``)."""


def _positive_int(text: str, name: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"bad cutoff in metric {name!r}: expected a positive integer")
    return int(text)


def _persistence(text: str, name: str) -> float:
    try:
        p = float(text)
    except ValueError:
        p = float("nan")
    if not 0.0 < p < 1.0:
        raise ValueError(f"bad persistence in metric {name!r}: expected p in (0, 1)")
    return p


def _ir_params(name: str, text: str | None, accepted: tuple[str, ...]) -> dict[str, str]:
    values: dict[str, str] = {}
    for item in filter(None, (x.strip() for x in (text or "").split(","))):
        key, eq, value = item.partition("=")
        key, value = key.strip(), value.strip().strip("'\"")
        if not eq or key not in accepted:
            raise ValueError(
                f"metric {name!r}: parameter {key!r} is not supported here "
                f"(accepted: {', '.join(accepted) or 'none'}; docs/metrics.md#names)"
            )
        values[key] = value
    return values


def _trec_eval_measure(measure: str, value: str, rel: float | None = None) -> MetricSpec:
    return MetricSpec("trec_eval", preset="trec_eval", rel=rel, trec_eval=measure, value=value)


def _ir_trec_eval(name: str, match: re.Match[str]) -> MetricSpec:
    """An ir-measures name of a measure :mod:`ranking.trec_eval` computes."""
    measure, takes = IR_MEASURES_TREC_EVAL[match["name"]]
    extra = {"rbp": ("p",), "setf": ("beta",)}.get(takes, ())
    values = _ir_params(name, match["params"], ("rel", *extra))
    rel = None
    if "rel" in values:
        if not values["rel"].lstrip("-").isdigit():
            raise ValueError(f"metric {name!r}: rel must be an integer grade")
        rel = float(values["rel"])
    cut = match["cut"]
    if takes in ("cut", "point") and cut is None:
        example = "@0.5" if takes == "point" else "@10"
        raise ValueError(f"metric {name!r} needs a cutoff, e.g. {match['name']}{example}")
    if takes not in ("cut", "point") and cut is not None:
        raise ValueError(f"metric {name!r}: {match['name']} takes no cutoff")
    if takes == "cut":
        k = _positive_int(cut, name)
        return _trec_eval_measure(f"{measure}.{k}", f"{measure}_{k}", rel)
    if takes == "point":
        point = float(cut)
        if not 0.0 <= point <= 1.0:
            raise ValueError(f"metric {name!r}: a recall level in [0, 1], e.g. IPrec@0.5")
        return _trec_eval_measure(f"{measure}.{point!r}", f"{measure}_{point:3.2f}", rel)
    if takes == "rbp":
        p = _persistence(values["p"], name) if "p" in values else RBP_P
        return _trec_eval_measure(f"rbp.p={p!r}", f"rbp_p={p!r}", rel)
    if takes == "setf":
        try:
            beta = float(values.get("beta", "1"))
        except ValueError:
            raise ValueError(f"metric {name!r}: beta must be a number") from None
        if "beta" not in values:
            return _trec_eval_measure("set_F", "set_F", rel)
        return _trec_eval_measure(f"set_F.{beta!r}", f"set_F_{beta!r}", rel)
    return _trec_eval_measure(measure, measure, rel)


def _ir_measures(name: str) -> MetricSpec | None:
    """The spec of an ir-measures name (case-sensitive, as ir-measures spells it), or None."""
    match = _IR_NAME.match(name.strip())
    if match is not None and match["name"] in IR_MEASURES_TREC_EVAL:
        return _ir_trec_eval(name, match)
    if match is None or match["name"] not in IR_MEASURES:
        return None
    family, tool, accepted = IR_MEASURES[match["name"]]
    if match["cut"] and not match["cut"].isdigit():
        raise ValueError(f"bad cutoff in metric {name!r}: expected a positive integer")
    values: dict[str, str] = {}
    for item in filter(None, (x.strip() for x in (match["params"] or "").split(","))):
        key, eq, value = item.partition("=")
        key, value = key.strip(), value.strip().strip("'\"")
        if not eq or key not in accepted:
            raise ValueError(
                f"metric {name!r}: parameter {key!r} is not supported here "
                f"(accepted: {', '.join(accepted) or 'none'}; docs/metrics.md#names)"
            )
        values[key] = value
    at = _positive_int(match["cut"], name) if match["cut"] else None
    if family == "compat" and at is not None:
        raise ValueError(f"metric {name!r}: Compat takes no cutoff")
    if family == "p" and at is None:
        raise ValueError(f"metric {name!r} needs a cutoff, e.g. P@10")
    rel = None
    if "rel" in values:
        try:
            rel = float(values["rel"])
        except ValueError:
            raise ValueError(f"metric {name!r}: rel must be a number") from None
    normalize = values.get("normalize", "True").lower()
    if normalize not in ("true", "false", "1", "0"):
        raise ValueError(f"metric {name!r}: normalize must be True or False")
    return MetricSpec(
        family=family,
        at=at,
        preset=tool,
        rel=rel,
        p=_persistence(values["p"], name) if "p" in values else COMPAT_P,
        normalize=normalize in ("true", "1"),
    )


def parse_metric_spec(name: str) -> MetricSpec:
    """The :class:`MetricSpec` of ``name``: an ir-measures name (module docstring) or a
    heapjudge name, case-insensitive: ``family[@k]``, trec_eval's ``_k`` / ``.k`` spellings
    (``P_10``, ``ndcg_cut.10``), and ``compat[@p=P]`` (persistence P, default 0.95)."""
    spec = _ir_measures(name)
    if spec is not None:
        return spec
    low = name.strip().lower()
    at: int | None = None
    base, cut = low, ""
    if "@" in low:
        base, _, cut = low.partition("@")
    elif low.startswith("ndcg_cut") and low[len("ndcg_cut") :][:1] in ("_", "."):
        base, cut = "ndcg", low[len("ndcg_cut") + 1 :]
    elif low[:2] in ("p_", "p.") and low[2:].isdigit():
        base, cut = "p", low[2:]
    if base not in _ALIASES:
        spec = trec_eval_spec(name)
        if spec is not None:
            return spec
        raise ValueError(
            f"unknown metric {name!r}; known: {', '.join(METRIC_NAMES)} (with @k), an "
            f"ir-measures name ({', '.join([*IR_MEASURES, *IR_MEASURES_TREC_EVAL])}), or a "
            "trec_eval measure (bpref, success_5, ...; docs/metrics.md#names)"
        )
    family = _ALIASES[base]
    if family == "compat":
        if cut and not cut.startswith("p="):
            raise ValueError(f"metric {name!r}: compat takes a persistence, e.g. compat@p=0.9")
        return MetricSpec("compat", p=_persistence(cut[2:], name) if cut else COMPAT_P)
    if cut:
        at = _positive_int(cut, name)
    if family == "p" and at is None:
        raise ValueError(f"metric {name!r} needs a cutoff, e.g. p@10")
    return MetricSpec(family, at)


def parse_metric(name: str) -> tuple[str, int | None]:
    """``"ndcg@10"`` -> ``("ndcg", 10)``; ``"kappa-err"`` -> ``("kappa-err", None)``.

    Accepts ``@k`` and trec_eval's ``_k`` / ``.k`` spellings (``P_10``, ``ndcg_cut.10``) and
    ir-measures names (:func:`parse_metric_spec` gives their conventions too).
    """
    spec = parse_metric_spec(name)
    return spec.family, spec.at


def _trec_eval_value_name(measure: str, param: str) -> str | None:
    """The name trec_eval prints for ``-m measure.param`` when it prints one value, else
    None (several cutoffs)."""
    from ranking.trec_eval.errors import TrecEvalError
    from ranking.trec_eval.select import select

    try:
        (requested,) = select([f"{measure}.{param}" if param else measure])
    except (TrecEvalError, ValueError):
        return None
    return requested.names[0] if len(requested.names) == 1 else None


def trec_eval_spec(name: str) -> MetricSpec | None:
    """The ``trec_eval`` family spec of a trec_eval measure name (case-sensitive, as
    trec_eval prints it: ``bpref``, ``success_5``, ``iprec_at_recall_0.50``, ``11pt_avg``; or
    as ``-m`` asks for it: ``success.5``, ``rbp.p=0.8``), of heapjudge's names for them
    (case-insensitive: ``bpref``, ``infap``, ``rprec``, ``success@5``, ``rbp@p=0.8``), or
    None. Raises ValueError for a trec_eval measure that has no per-query value of its own
    (``gm_map``, ``num_q``, ``runid``, ``relstring``), needs other judgments (preferences,
    judgment groups) or names several values (``success``: which cutoff?)."""
    from ranking.trec_eval.registry import by_name

    text = name.strip()
    low = text.lower()
    if low in _TREC_EVAL_ALIASES:
        measure = _TREC_EVAL_ALIASES[low]
        return _trec_eval_measure(measure, measure)
    if low.startswith("success@"):
        k = _positive_int(low[len("success@") :], name)
        return _trec_eval_measure(f"success.{k}", f"success_{k}")
    if low.startswith("rbp@p="):
        p = _persistence(low[len("rbp@p=") :], name)
        return _trec_eval_measure(f"rbp.p={p!r}", f"rbp_p={p!r}")
    # trec_eval's printed names first (the measure, "_", the parameter; a name may hold "_"
    # itself, P_avgjg, and a parameter "." itself, iprec_at_recall_0.50), then -m's "m.param".
    parts = text.split("_")
    candidates = [(text, "", True)]
    candidates += [("_".join(parts[:i]), "_".join(parts[i:]), True) for i in range(1, len(parts))]
    measure, dot, param = text.partition(".")
    if dot:
        candidates.append((measure, param, False))
    for base, param, printed in candidates:
        found = by_name(base)
        if found is None:
            continue
        if base in _NOT_PER_QUERY or found.source != "qrels":
            why = (
                "it reads preference or judgment-group files (heapjudge trec-eval -R ...)"
                if found.source != "qrels"
                else "it has no per-query value of its own (heapjudge trec-eval prints it)"
            )
            raise ValueError(f"trec_eval measure {name!r} cannot be a metric here: {why}")
        value = _trec_eval_value_name(base, param)
        if value is None or (printed and value != text):
            continue  # "P_avgjg_5" is not P with cutoff "avgjg_5"
        return _trec_eval_measure(f"{base}.{param}" if param else base, value)
    if any(by_name(base) is not None for base, _, _ in candidates):
        raise ValueError(
            f"trec_eval measure {name!r} names several values or a bad parameter; name one, "
            "e.g. success_5 or success.5"
        )
    return None
