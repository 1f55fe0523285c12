"""Metric names: heapjudge's (``"ndcg@10"``, ``"compat@p=0.9"``), trec_eval's ``P_10`` and
``ndcg_cut.10``, aliases, and ir-measures' measure names (``nDCG@10``, ``AP``, ``P(rel=2)@10``,
``R@100``, ``ERR@20``, ``Compat(p=0.95)``; docs/metrics.md#names).

A heapjudge name is computed under the conventions the caller chooses (a preset). An
ir-measures name carries the conventions of the tool ir-measures computes it with, whatever
the caller's preset: trec_eval's (ir-measures' ``pytrec_eval`` provider) for nDCG, AP, P, RR
and R; gdeval's for ERR; the ``compat`` provider's for Compat (:data:`IR_MEASURES`; the
conventions are :data:`ranking.metrics.by_name.TOOL_CONVENTIONS`).
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

#: Default persistence of compatibility (Clarke, Vtyurina, Smucker, TOIS 2021).
COMPAT_P = 0.95

_IR_NAME = re.compile(r"^(?P<name>[A-Za-z]+)(?:\((?P<params>[^)]*)\))?(?:@(?P<cut>\d+))?$")


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


def _ir_measures(name: str) -> MetricSpec | None:
    """The spec of an ir-measures name (case-sensitive, as ir-measures spells it), or None."""
    match = _IR_NAME.match(name.strip())
    if match is None or match["name"] not in IR_MEASURES:
        return None
    family, tool, accepted = IR_MEASURES[match["name"]]
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
        raise ValueError(
            f"unknown metric {name!r}; known: {', '.join(METRIC_NAMES)} (with @k), or an "
            f"ir-measures name ({', '.join(IR_MEASURES)})"
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
