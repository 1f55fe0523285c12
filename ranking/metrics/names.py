"""Metric names: ``"ndcg@10"``, trec_eval's ``P_10`` and ``ndcg_cut.10``, aliases."""

from __future__ import annotations

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
}


def parse_metric(name: str) -> tuple[str, int | None]:
    """``"ndcg@10"`` -> ``("ndcg", 10)``; ``"kappa-err"`` -> ``("kappa-err", None)``.

    Accepts ``@k`` and trec_eval's ``_k`` / ``.k`` spellings (``P_10``, ``ndcg_cut.10``).
    """
    raw = name.strip()
    low = raw.lower()
    at: int | None = None
    base = low
    if "@" in low:
        base, _, cut = low.partition("@")
    elif low.startswith("ndcg_cut") and low[len("ndcg_cut") :][:1] in ("_", "."):
        base, cut = "ndcg", low[len("ndcg_cut") + 1 :]
    elif low[:2] in ("p_", "p.") and low[2:].isdigit():
        base, cut = "p", low[2:]
    else:
        cut = ""
    if cut:
        if not cut.isdigit() or int(cut) < 1:
            raise ValueError(f"bad cutoff in metric {name!r}: expected a positive integer")
        at = int(cut)
    if base not in _ALIASES:
        raise ValueError(f"unknown metric {name!r}; known: {', '.join(METRIC_NAMES)} (with @k)")
    family = _ALIASES[base]
    if family == "p" and at is None:
        raise ValueError(f"metric {name!r} needs a cutoff, e.g. p@10")
    return family, at

