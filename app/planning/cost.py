"""What a plan is expected to cost: judgments and minutes per task, per query and in total,
for the chosen strategy and side by side for every strategy
(``docs/strategies-in-practice.md#planning``, ``docs/admin-guide.md#plan-preview``).

A top-k task's expected judgments depend on the order its documents come in:

* **no prior**: the mean of simulated runs of the strategy on documents in random order
  (:func:`labeling.study.estimates.simulated_judgments`, a consistent assessor), times
  ``1 + reask_fraction``;
* **a prior** (``initial_order`` set: bm25, a run, a feature): the same on documents in the
  order of a prior of assumed correlation
  :data:`labeling.study.estimates.ASSUMED_PRIOR_CORRELATION` with the truth.

The 95th percentile of a task's judgments is the nearest-rank p95 of the same runs, so it is
never below their mean for these counts (a test checks every strategy). The strategy's own
start-of-task model (``progress().expected_remaining``, the judging page's first "about N
left") is not used: it can exceed the runs' p95 (``prior`` at n = 30, k = 10: 80.0 against a
simulated mean of 67.7 and p95 of 75).

**With a machine judge** (option ``machine``, a ``+assist`` strategy), the chosen row also
shows the strategy with the machine (:func:`machine_cost`): people's judgments and the
machine's answers per task by simulation
(:func:`labeling.study.estimates.assisted_judgments`: a machine of pairwise accuracy
``machine_accuracy`` on random pairs, measured on the collection or given, else
:data:`ASSUMED_MACHINE_ACCURACY` as the near end of a cold start range whose far end is the
figures without the machine; the documents in its order, the calibration learned from
people's answers as the study proceeds, the machine answering within the stated
``max_loss``), the expected κ-NDCG@k loss of its result against the person-only one, and
people's minutes only (a machine's answer costs no one's time). The figures
without the machine are the row's own: a ``+assist`` strategy without a machine asks what
its inner strategy asks. Minutes = judgments × the time model's mean seconds per judgment
(:class:`labeling.study.simulation.TimeModel`: ``PAIR_SECONDS`` = 13.87/2.5 = 5.55 s per pair,
``GRADE_SECONDS`` = 13.87 s per grade, after Niu et al., SIGIR 2012, Table 1).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from labeling.errors import ConfigError
from labeling.protocol.session import open_session
from labeling.protocol.spec import validate_options
from labeling.strategies.assist import DEFAULT_MAX_LOSS
from labeling.strategies.registry import ASSIST, STRATEGIES, parse_strategy
from labeling.study.estimates import (
    ASSUMED_PRIOR_CORRELATION,
    assisted_judgments,
    simulated_judgments,
)
from labeling.study.simulation import GRADE_SECONDS, PAIR_SECONDS

#: The machine's pairwise accuracy on random pairs the preview assumes (parameter
#: ``machine_accuracy``): 0.8, the accuracy of the ``machine0.8`` scenario
#: (docs/machine-judges.md#measured); BM25 on Cranfield's pools is of that order. A plan names
#: another with ``machine_accuracy``.
ASSUMED_MACHINE_ACCURACY = 0.8

#: What the preview's expected judgments and minutes mean (shown with them).
COST_MODEL: dict[str, str | float] = {
    "topk_judgments": "the mean of simulated runs (a consistent assessor): without a prior on "
    "documents in random order; with a prior on documents in the order of a prior whose "
    "correlation with the truth is "
    f"{ASSUMED_PRIOR_CORRELATION} (assumed; it reproduces the counts measured with BM25 on "
    "Cranfield's BM25 pools)",
    "topk_p95": "95th percentile of a task's judgments over simulated runs (the same order)",
    "graded_judgments": "one grade per document of the pool",
    "prior_correlation": ASSUMED_PRIOR_CORRELATION,
    "seconds_per_pair": PAIR_SECONDS,
    "seconds_per_grade": GRADE_SECONDS,
    "minutes": "judgments times the time model's mean seconds per judgment "
    "(labeling.study.simulation.TimeModel: 13.87 s per grade, 13.87/2.5 = 5.55 s per pair)",
    "with_machine": "the chosen +assist strategy with the plan's machine judge: people's "
    "judgments and the machine's answers per task, the mean of simulated queries of one study "
    "(a machine of pairwise accuracy machine_accuracy on random pairs, a Thurstone model; "
    "documents in the same order as without it; its calibration learned from people's answers "
    "as the study proceeds; answering within max_loss); expected_loss_per_task is the mean "
    "κ-NDCG@k loss of those queries against the person-only result; minutes are people's time "
    "only; without a measured or given accuracy, cold_start_range spans a machine that earns "
    "nothing (the figures without it) to one of the assumed accuracy",
    "machine_accuracy": ASSUMED_MACHINE_ACCURACY,
}

#: A query's resolved prior: (initial_order, recorded prior spec).
Resolved = tuple[list[str] | None, str]


#: Options set per task that do not change its expected count (the prior's order counts only
#: as "a prior or none"; who gets the repeats does not change how many there are; the machine
#: is counted apart, by :func:`machine_cost`: without it a +assist strategy asks what its
#: inner strategy asks).
_PER_TASK = ("initial_order", "prior", "second_assessor", "machine")


@dataclass(frozen=True, slots=True)
class TaskCost:
    """One task's expected ``judgments``, their ``p95`` (None: not estimated) and ``minutes``."""

    judgments: float
    p95: float | None
    minutes: float


def expected_cost(
    method: str, doc_ids: list[str], *, k: int, options: dict[str, Any]
) -> tuple[float, float]:
    """``(judgments, minutes)`` expected for one task of ``method`` on ``doc_ids`` with
    ``options`` (``initial_order`` set: a prior; see the module docstring)."""
    one = task_cost(method, doc_ids, k=k, options=options)
    return one.judgments, one.minutes


def task_cost(method: str, doc_ids: list[str], *, k: int, options: dict[str, Any]) -> TaskCost:
    """:class:`TaskCost` of one task of ``method`` on ``doc_ids`` (module docstring). It
    depends on the pool's size, not its documents, and on whether the task has a prior, not
    which: the top-k figures are cached per (size, k, options)."""
    n = len(doc_ids)
    if n == 0:
        return TaskCost(0.0, 0.0, 0.0)
    if method == "graded":
        return TaskCost(float(n), float(n), n * GRADE_SECONDS / 60.0)
    prior = options.get("initial_order") is not None
    rest = {key: v for key, v in options.items() if key not in _PER_TASK}
    opts = validate_options("topk", rest)
    # Without a machine a +assist strategy asks exactly what its inner strategy asks; its own
    # progress model at the start (the inner expectation times the Laplace share of people's
    # answers, 1/2) would halve the count. Not so over +robust: there the confirmations follow
    # the assist rule (with no machine, even odds), so X+assist+robust is simulated as itself.
    # The machine's part is machine_cost's.
    strategy = parse_strategy(opts["strategy"])
    if "robust" not in strategy.modifiers:
        opts["strategy"] = without_assist(strategy.name)
    return _topk_cost(n, k, tuple(sorted(opts.items())), prior)


def without_assist(strategy: str) -> str:
    """``strategy`` without the ``assist`` modifier (``insertion+assist+robust`` ->
    ``insertion+robust``): what it asks people without a machine."""
    return parse_strategy(strategy).without(ASSIST).name


@lru_cache(maxsize=4096)
def _topk_cost(n: int, k: int, options: tuple[tuple[str, Any], ...], prior: bool) -> TaskCost:
    """A top-k task's :class:`TaskCost` on ``n`` documents; ``options`` validated, as items."""
    opts = dict(options)
    docs = [f"d{i}" for i in range(n)]
    progress = open_session("topk", docs, k=k, seed=0, options=opts).progress()
    if progress.done:
        return TaskCost(0.0, 0.0, 0.0)
    reasks = 1.0 + float(opts["reask_fraction"] or 0.0)
    sim = simulated_judgments(
        str(opts["strategy"]),
        n,
        k,
        ASSUMED_PRIOR_CORRELATION if prior else None,
        cache=bool(opts["pair_cache"]),
    )
    # The mean and the p95 are of the same simulated runs: the strategy's own start-of-task
    # model is an approximation that can sit above the runs' 95th percentile (prior at
    # n = 30, k = 10: 80.0 modelled, mean 67.7 and p95 75 simulated), a mean above its p95.
    judgments = sim.mean * reasks
    return TaskCost(judgments, sim.p95 * reasks, judgments * PAIR_SECONDS / 60.0)


def plan_cost(
    k: int,
    options: dict[str, dict[str, Any]],
    pools: dict[str, list[str]],
    resolved: dict[str, Resolved],
    methods: dict[str, set[str]],
) -> dict[str, dict[str, float]]:
    """Per query, the expected judgments, p95 and minutes of ONE task of each method it has
    (``methods[query_id]``): ``<method>_judgments``, ``<method>_p95``, ``<method>_minutes``."""
    cost: dict[str, dict[str, float]] = {}
    for q, used in methods.items():
        ids = pools.get(q, [])
        row: dict[str, float] = {}
        for method in sorted(used):
            opts = dict(options[method])
            if method == "topk":
                if q not in resolved:
                    continue  # its prior failed: reported as a violation
                opts["initial_order"], opts["prior"] = resolved[q]
            try:
                one = task_cost(method, ids, k=k, options=opts)
            except ConfigError:
                continue  # create_plan reports the config error with the task's name
            row[f"{method}_judgments"] = round(one.judgments, 1)
            if one.p95 is not None:
                row[f"{method}_p95"] = round(one.p95, 1)
            row[f"{method}_minutes"] = round(one.minutes, 1)
        cost[q] = row
    return cost


def cost_totals(
    tasks: Iterable[tuple[str, str]], cost: dict[str, dict[str, float]]
) -> dict[str, float]:
    """Sums over the plan's ``(query_id, method)`` tasks of each query's one-task cost:
    ``<method>_judgments``, ``<method>_minutes``, ``judgments``, ``minutes`` (rounded), and
    ``<method>_tasks``, the number of tasks of each method."""
    totals: dict[str, float] = {}
    for query_id, method in tasks:
        one = cost.get(query_id, {})
        totals[f"{method}_tasks"] = totals.get(f"{method}_tasks", 0) + 1
        for what in ("judgments", "minutes"):
            value = one.get(f"{method}_{what}", 0.0)
            totals[f"{method}_{what}"] = totals.get(f"{method}_{what}", 0.0) + value
            totals[what] = totals.get(what, 0.0) + value
    return {key: round(value, 1) for key, value in totals.items()}


# --------------------------------------------------------------------------- side by side


def strategy_candidates(chosen: str) -> list[str]:
    """The strategies the preview compares: every base strategy, with the chosen strategy's
    modifiers when it has some (``tournament+robust`` chosen: ``heap+robust``,
    ``tournament+robust``, ...), in registry order. A new base strategy or modifier appears
    here without a change to the preview."""
    strategy = parse_strategy(chosen)
    out = [strategy.with_base(base).name for base in STRATEGIES]
    return out if chosen in out else [*out, chosen]


@dataclass(frozen=True, slots=True)
class MachineCost:
    """One ``+assist`` task with a machine: people's ``human_judgments`` (and their
    ``human_p95``), the machine's ``machine_answers``, people's ``minutes`` and the expected
    κ-NDCG@k ``loss`` of its result against the person-only one."""

    human_judgments: float
    human_p95: float
    machine_answers: float
    minutes: float
    loss: float = 0.0


def machine_cost(
    strategy: str,
    n: int,
    *,
    k: int,
    accuracy: float,
    prior: bool = False,
    reask_fraction: float = 0.0,
    max_loss: float | None = None,
) -> MachineCost | None:
    """:class:`MachineCost` of a ``strategy`` task on ``n`` documents with a machine of
    pairwise accuracy ``accuracy`` (module docstring) answering within ``max_loss`` (the
    option ``machine.max_loss``; None: its default), on the order the task's figures without
    the machine assume (``prior``: a prior of correlation :data:`ASSUMED_PRIOR_CORRELATION`;
    else random); None for a strategy without ``assist`` (the machine never answers there).
    Re-asks multiply people's judgments by ``1 + reask_fraction``, as in :func:`task_cost`."""
    if not parse_strategy(strategy).assisted:
        return None
    if n == 0:
        return MachineCost(0.0, 0.0, 0.0, 0.0)
    est = assisted_judgments(
        strategy,
        n,
        k,
        accuracy,
        ASSUMED_PRIOR_CORRELATION if prior else None,
        max_loss=max_loss,
    )
    reasks = 1.0 + reask_fraction
    human = est.human_mean * reasks
    return MachineCost(
        human, est.human_p95 * reasks, est.machine_mean, human * PAIR_SECONDS / 60, est.loss_mean
    )


@dataclass(frozen=True, slots=True)
class MachinePlan:
    """What the preview simulates the plan's machine with: its pairwise ``accuracy``, the
    stated ``max_loss``, and whether that accuracy was measured or given (``known``) or not
    (a cold start: the figures are then a range, from a machine that earns nothing, the
    figures without it, to one of :data:`ASSUMED_MACHINE_ACCURACY`)."""

    accuracy: float
    max_loss: float
    known: bool


def _with_machine(
    name: str,
    k: int,
    pools: Mapping[str, list[str]],
    resolved: Mapping[str, Resolved],
    topk: Sequence[str],
    plan: MachinePlan,
    reask_fraction: float,
    graded_j: float,
    without: Mapping[str, float],
) -> dict[str, Any] | None:
    """The ``with_machine`` part of a strategy row (:func:`strategy_rows`), or None;
    ``without``: the row's own figures (without the machine), the cold start range's far end."""
    per_query: dict[str, MachineCost | None] = {}
    for q in dict.fromkeys(topk):
        try:
            per_query[q] = machine_cost(
                name,
                len(pools.get(q, [])),
                k=k,
                accuracy=plan.accuracy,
                prior=resolved[q][0] is not None,
                reask_fraction=reask_fraction,
                max_loss=plan.max_loss,
            )
        except ConfigError:
            per_query[q] = MachineCost(0.0, 0.0, 0.0, 0.0)
    costs = [c for q in topk if (c := per_query[q]) is not None]
    if not costs or len(costs) != len(topk):
        return None
    count = len(costs)
    human = sum(c.human_judgments for c in costs)
    minutes = sum(c.minutes for c in costs)
    machine = sum(c.machine_answers for c in costs)
    out: dict[str, Any] = {
        "machine_accuracy": plan.accuracy,
        "human_judgments_per_task": round(human / count, 1),
        "human_p95_per_task": round(sum(c.human_p95 for c in costs) / count, 1),
        "machine_answers_per_task": round(machine / count, 1),
        "minutes_per_task": round(minutes / count, 1),
        "topk_human_judgments": round(human, 1),
        "topk_machine_answers": round(machine, 1),
        "topk_minutes": round(minutes, 1),
        "judgments": round(human + graded_j, 1),
        "minutes": round(minutes + graded_j * GRADE_SECONDS / 60.0, 1),
        "expected_loss_per_task": round(sum(c.loss for c in costs) / count, 4),
        "max_loss": plan.max_loss,
        "cold_start_range": None,
    }
    if not plan.known:
        # No measured calibration: anything from a machine people never come to trust (it
        # answers nothing: the figures without it) to one of the assumed accuracy.
        out["cold_start_range"] = {
            "human_judgments_per_task": [out["human_judgments_per_task"], without["per_task"]],
            "minutes_per_task": [out["minutes_per_task"], without["minutes_per_task"]],
            "machine_answers_per_task": [0.0, out["machine_answers_per_task"]],
            "judgments": [out["judgments"], without["judgments"]],
            "minutes": [out["minutes"], without["minutes"]],
        }
    return out


def strategy_rows(
    k: int,
    options: dict[str, dict[str, Any]],
    pools: Mapping[str, list[str]],
    resolved: Mapping[str, Resolved],
    tasks: Sequence[tuple[str, str]],
    candidates: Sequence[str],
    machine_accuracy: float | None = None,
    *,
    machine_known: bool = True,
) -> list[dict[str, Any]]:
    """One row per strategy in ``candidates`` for the plan as chosen (its pools, priors,
    options and ``(query_id, method)`` tasks): per top-k task (the mean over the plan's top-k
    tasks) ``judgments_per_task``, ``p95_per_task`` and ``minutes_per_task``; over all top-k
    tasks ``topk_judgments`` and ``topk_minutes``; for the whole plan (top-k and graded tasks)
    ``judgments`` and ``minutes``. ``chosen`` marks the plan's strategy. When the plan's
    top-k tasks have a machine judge (option ``machine``), the chosen row's ``with_machine``
    holds its figures with it (people's judgments and minutes, the machine's answers, the
    expected loss against the stated ``max_loss``: :func:`_with_machine`, a machine of
    pairwise accuracy ``machine_accuracy``, :mod:`app.planning.machine` says which;
    ``machine_known`` False: no measured or given accuracy, the figures a cold start range)
    beside the row's own, which are without it; None on the other rows (simulating each
    strategy with a machine would triple the preview's time: *Choose* shows another's), without
    a machine or without an accuracy (plan creation). The one place the preview's comparison
    table comes from."""
    chosen = str(options["topk"]["strategy"])
    option = options["topk"].get("machine")
    machine = option is not None and machine_accuracy is not None
    plan = MachinePlan(
        float(machine_accuracy or ASSUMED_MACHINE_ACCURACY),
        float((option or {}).get("max_loss") or DEFAULT_MAX_LOSS),
        machine_known,
    )
    reasks = float(options["topk"].get("reask_fraction") or 0.0)
    graded = [q for q, method in tasks if method == "graded"]
    graded_j = float(sum(len(pools.get(q, [])) for q in graded))
    topk = [q for q, method in tasks if method == "topk" and q in resolved]
    rows = []
    for name in candidates:
        per_query: dict[str, TaskCost] = {}
        for q in dict.fromkeys(topk):
            opts = {**options["topk"], "strategy": name}
            opts["initial_order"], opts["prior"] = resolved[q]
            try:
                per_query[q] = task_cost("topk", pools.get(q, []), k=k, options=opts)
            except ConfigError:
                per_query[q] = TaskCost(0.0, None, 0.0)
        costs = [per_query[q] for q in topk]
        count = max(len(costs), 1)
        judgments = sum(c.judgments for c in costs)
        minutes = sum(c.minutes for c in costs)
        p95s = [c.p95 for c in costs if c.p95 is not None]
        row: dict[str, Any] = {
            "strategy": name,
            "chosen": name == chosen,
            "topk_tasks": len(costs),
            "judgments_per_task": round(judgments / count, 1),
            "p95_per_task": round(sum(p95s) / len(p95s), 1) if p95s else None,
            "minutes_per_task": round(minutes / count, 1),
            "topk_judgments": round(judgments, 1),
            "topk_minutes": round(minutes, 1),
            "judgments": round(judgments + graded_j, 1),
            "minutes": round(minutes + graded_j * GRADE_SECONDS / 60.0, 1),
            "with_machine": None,
        }
        if machine and name == chosen:
            without = {
                "per_task": row["judgments_per_task"],
                "minutes_per_task": row["minutes_per_task"],
                "judgments": row["judgments"],
                "minutes": row["minutes"],
            }
            row["with_machine"] = _with_machine(
                name, k, pools, resolved, topk, plan, reasks, graded_j, without
            )
        rows.append(row)
    return rows
