"""Pooling simulated before judging (docs/campaigns.md): found-relevant per pool method and
budget, the qrels as the assessor, per query or over the campaign, so an admin can choose a
method and a budget; :func:`simulate` is what ``heapjudge admin pool --simulate`` prints."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from app.campaign_pools.run_input import Runs
from app.campaign_pools.service import check_method
from app.kernel.errors import Invalid
from labeling.errors import ConfigError
from labeling.study.campaign_order import campaign_order
from labeling.study.campaign_pools import Method, Simulation, simulate_pooling

__all__ = ["SimulationRow", "pool_share", "simulate"]


@dataclass(frozen=True, slots=True)
class SimulationRow:
    """One method at one budget over every query the runs and the qrels share."""

    method: str
    budget: str
    judged: int
    relevant_found: int
    relevant_in_pool: int
    pool_size: int

    @property
    def share(self) -> float:
        return self.relevant_found / self.relevant_in_pool if self.relevant_in_pool else 0.0


def simulate(
    runs: Runs,
    qrels: Mapping[str, Mapping[str, float]],
    methods: Sequence[str],
    *,
    depth: int = 100,
    budgets: Sequence[int] = (),
    fractions: Sequence[float] = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0),
    relevant_from: float = 1.0,
    allocation: str = "query",
) -> list[SimulationRow]:
    """Found-relevant per method and budget, the qrels as the assessor (to choose a budget
    before judging): ``budgets`` judgments per query, else ``fractions`` of each query's depth
    pool (:func:`labeling.study.campaign_pools.simulate_pooling`). ``allocation="campaign"``:
    one budget for all queries (``budgets`` in judgments, ``fractions`` of all the pools),
    spent by :func:`labeling.study.campaign_order.campaign_order`."""
    if allocation not in ("query", "campaign"):
        raise Invalid(f"allocation is per 'query' or over the 'campaign', not {allocation!r}")
    rows = []
    for method in methods:
        checked = check_method(method, depth, None)
        if checked == "cal":
            raise Invalid(
                "cal is not simulated from runs and qrels: it needs the documents' feature "
                "vectors (benchmarks/campaign.py simulates it on Cranfield and MQ2008)"
            )
        if allocation == "campaign":
            rows += _campaign_rows(runs, qrels, checked, depth, budgets, fractions, relevant_from)
            continue
        settings: list[tuple[str, int | None, float | None]] = (
            [(str(b), b, None) for b in budgets]
            if budgets
            else [(f"{f:.0%}", None, f) for f in fractions]
        )
        for label, budget, fraction in settings:
            try:
                sim: Simulation = simulate_pooling(
                    runs,
                    qrels,
                    checked,
                    budget,
                    fraction=fraction,
                    depth=depth,
                    relevant_from=relevant_from,
                )
            except ConfigError as err:
                raise Invalid(str(err)) from None
            rows.append(
                SimulationRow(
                    method,
                    label,
                    sim.judged_total,
                    sim.relevant_found,
                    sim.relevant_in_pool,
                    sim.pool_size,
                )
            )
    return rows


def _campaign_rows(
    runs: Runs,
    qrels: Mapping[str, Mapping[str, float]],
    method: Method,
    depth: int,
    budgets: Sequence[int],
    fractions: Sequence[float],
    relevant_from: float,
) -> list[SimulationRow]:
    order = campaign_order(runs, qrels, method, depth=depth, relevant_from=relevant_from)
    pool = sum(order.pool_size.values())
    relevant = sum(order.relevant_in_pool.values())
    settings = (
        [(str(b), b) for b in budgets]
        if budgets
        else [(f"{f:.0%}", math.floor(f * pool + 0.5)) for f in fractions]
    )
    rows = []
    for label, budget in settings:
        if budget < 0:
            raise Invalid(f"budget must be ≥ 0, got {budget}")
        taken = order.order[:budget]
        found = sum(1 for _q, _d, rel in taken if rel)
        rows.append(SimulationRow(method, label, len(taken), found, relevant, pool))
    return rows


def pool_share(row: SimulationRow) -> float:
    """The row's judgments as a share of the depth pool."""
    return row.judged / row.pool_size if row.pool_size else math.nan
