"""Coverage of the uncertainty heapjudge reports for machine-assisted labels, on simulated
queries with a known truth (docs/machine-judges.md#coverage).

1. **The loss interval.** One study of ``--queries`` queries (n, k) = (50, 10) per strategy,
   as in :mod:`labeling.study.assisted` (a Thurstone machine of pairwise accuracy
   ``--accuracy``, its calibration learned over the study's earlier queries, a consistent
   person). Per query: the 90% interval of the estimated κ-NDCG@k loss of the machine's
   answers (:func:`labeling.study.uncertainty.estimate_loss`, ``--replays`` draws) and the
   realised loss, 1 − κ-NDCG@k of the result against the true top k (for the consistent
   person also the people-only result). Target: the interval covers the realised loss on
   ≥ 85% of queries.
2. **The metric interval of evaluate.** Four simulated runs (scores = latent + Gaussian noise)
   are scored by κ-NDCG@10 on the study's labels (the assisted results, or the machine's own
   top k: labels a machine alone made) and on the true labels. ``--audits`` times a uniform
   random sample of ``--audited`` queries gets people's labels (the truth), and the 95%
   prediction-powered interval (:func:`ranking.compare.ppi.ppi_of_queries`, λ = 1 and PPI++)
   is checked against the run's mean on the true labels over all queries; beside it, the
   plain t-interval on the machine's labels alone. Target: PPI covers ≥ 93% of the time.

    python benchmarks/machine_coverage.py                      # 1,000 queries, one strategy
    python benchmarks/machine_coverage.py --queries 200        # a quick look
    python benchmarks/machine_coverage.py --strategies tournament+assist,insertion+assist
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any

import numpy as np
from scipy import stats

from labeling.machine.calibration import Calibrator
from labeling.machine.opinion import JudgeOpinion
from labeling.machine.trust import AuditMonitor, StratumEvidence
from labeling.strategies.assist import AssistStrategy
from labeling.strategies.base import Compare
from labeling.strategies.registry import resolve_strategy
from labeling.study.assisted import STUDY_ROUNDING, machine_trial
from labeling.study.simulation import scenario_assessor
from labeling.study.uncertainty import MachineLog, base_strategy, estimate_loss
from ranking.compare.ppi import ppi_of_queries
from ranking.metrics import kappa_ndcg

N, K = 50, 10
LOSS_TARGET, METRIC_TARGET = 0.85, 0.93
#: The simulated runs: noise σ of their scores (latent values are U(0, 1)).
RUN_NOISE = (0.05, 0.1, 0.2, 0.4)


def record(strategy: str, order: list[str], person: Any, opinion: JudgeOpinion, seed: int) -> Any:
    """Drive ``strategy`` as :func:`labeling.study.simulation.drive` does, recording who
    answered what: the :class:`MachineLog` and the final state."""
    state = resolve_strategy(strategy)(order, K)
    assert isinstance(state, AssistStrategy)
    state.bind(opinion, seed)
    gen = state.run()
    answered: dict[tuple[str, str], str] = {}
    human: dict[tuple[str, str], str | None] = {}
    machine: list[tuple[str, str, str, float]] = []
    audits: list[tuple[float, bool]] = []
    try:
        question = next(gen)
        while True:
            a, b = question.a, question.b
            key = (a, b) if a < b else (b, a)
            winner = answered.get(key) if not question.repeat else None
            if winner is None:
                verdict = state.machine_verdict(question)
                if verdict is not None:
                    winner, p_right = verdict
                    state.accept_machine(question, winner, p_right)
                    machine.append((*key, winner, p_right))
                else:
                    audit = _audit_verdict(state, opinion, question)
                    winner = a if person.prefers(a, b) else b
                    human.setdefault(key, winner)
                    if audit is not None:
                        audits.append((audit[1], audit[0] == winner))
                if not question.repeat:
                    answered.setdefault(key, winner)
            question = gen.send(winner)
    except StopIteration as stop:
        top, rest = stop.value
    log = MachineLog(
        base_strategy(strategy), tuple(order), K, human, tuple(machine), tuple(top), tuple(rest)
    )
    return log, state, audits


def _audit_verdict(
    state: AssistStrategy, opinion: JudgeOpinion, question: Compare
) -> tuple[str, float] | None:
    """The machine's (winner, claimed P(right) = 1 − U) on a question the audit gives to the
    person, else None: the claim the rule would have logged (docs/machine-judges.md#the-rule)."""
    if not state.would_audit(question):
        return None
    return state.machine_verdict_unaudited(question)


def study(strategy: str, queries: int, accuracy: float, replays: int, seed: int) -> dict[str, Any]:
    """One study: per query the loss estimate, the realised loss, and the label sets."""
    docs = [f"d{i:04d}" for i in range(N)]
    calibration = Calibrator("isotonic")
    rows: list[dict[str, Any]] = []
    audited: list[tuple[float, bool]] = []  # the study's audits so far
    monitor, strata = AuditMonitor(), StratumEvidence()
    for t in range(queries):
        rng = random.Random(f"{seed}:{t}")
        latent, judge, query, shown = machine_trial(rng, docs, accuracy, f"q{t}")
        truth = sorted(docs, key=lambda d: -latent[d])
        rank = {d: r for r, d in enumerate(truth)}
        person = scenario_assessor("random", rank, rng.getrandbits(32))
        opinion = JudgeOpinion(
            judge, query, calibration, prior_audits=monitor, stratum_evidence=strata
        )
        log, state, audits = record(strategy, shown, person, opinion, rng.getrandbits(32))
        monitor, strata = state.monitor, state.trust  # the study's test and evidence go on
        audited.extend(audits)
        if state.evidence:
            raw = [round(opinion.raw[(a, b)], STUDY_ROUNDING) for a, b, _, _ in state.evidence]
            calibration.update(raw, [won for _, _, _, won in state.evidence])
        est = estimate_loss(log, replays=replays, seed=t, audits=audited)
        stated = estimate_loss(log, replays=replays, seed=t)
        true_labels = np.array([K - rank[d] if rank[d] < K else 0 for d in docs], dtype=float)
        position = {d: i for i, d in enumerate([*log.top, *log.rest])}
        produced = np.array([N - position[d] for d in docs], dtype=float)
        realised = 1.0 - float(kappa_ndcg(true_labels, produced, at=K)[0])
        top = {d: i for i, d in enumerate(log.top)}
        assisted_labels = np.array([K - top[d] if d in top else 0 for d in docs], dtype=float)
        machine_top = {d: i for i, d in enumerate(shown[:K])}  # the judge's own order
        machine_labels = np.array(
            [K - machine_top[d] if d in machine_top else 0 for d in docs], dtype=float
        )
        rows.append(
            {
                "machine_answers": len(log.machine),
                "est": est,
                "stated": stated,
                "realised": realised,
                "latent": np.array([latent[d] for d in docs]),
                "truth": true_labels,
                "assisted": assisted_labels,
                "machine_only": machine_labels,
            }
        )
    return {"strategy": strategy, "rows": rows}


def loss_coverage(result: dict[str, Any], which: str) -> dict[str, Any]:
    """How often the 90% loss interval (``which``: ``est`` from the audits, ``stated`` from
    the machine's stated probabilities) covers the realised loss."""
    rows = result["rows"]
    covered = [r[which].low - 1e-12 <= r["realised"] <= r[which].high + 1e-12 for r in rows]
    with_machine = [c for c, r in zip(covered, rows, strict=True) if r["machine_answers"]]
    lost = [c for c, r in zip(covered, rows, strict=True) if r["realised"] > 0]
    return {
        "strategy": result["strategy"],
        "errors": "audited" if which == "est" else "stated",
        "coverage": float(np.mean(covered)),
        "coverage_machine": float(np.mean(with_machine)) if with_machine else float("nan"),
        "coverage_lost": float(np.mean(lost)) if lost else float("nan"),
        "lost": len(lost),
        "mean_est": float(np.mean([r[which].mean for r in rows])),
        "mean_realised": float(np.mean([r["realised"] for r in rows])),
        "mean_high": float(np.mean([r[which].high for r in rows])),
        "first100": float(np.mean(covered[:100])),
        "machine": float(np.mean([r["machine_answers"] for r in rows])),
    }


def metric_coverage(
    result: dict[str, Any], labels: str, audits: int, audited: int, seed: int
) -> dict[str, Any]:
    """Coverage of the 95% intervals of each run's κ-NDCG@10 mean on the true labels."""
    rows = result["rows"]
    rng = np.random.default_rng(seed)
    latent = np.array([r["latent"] for r in rows])
    machine = np.array([r[labels] for r in rows])
    truth = np.array([r["truth"] for r in rows])
    hits = {"ppi": 0, "ppi++": 0, "machine t": 0}
    widths: dict[str, list[float]] = {name: [] for name in hits}
    checks = 0
    qids = [f"q{i}" for i in range(len(rows))]
    for r, noise in enumerate(RUN_NOISE):
        scores = latent + np.random.default_rng(1000 + r).normal(0.0, noise, latent.shape)
        f = kappa_ndcg(machine, scores, at=K)
        y = kappa_ndcg(truth, scores, at=K)
        target = float(y.mean())
        # The machine labels alone, with a t-interval over queries: what evaluate gave before.
        half = stats.t.ppf(0.975, len(f) - 1) * f.std(ddof=1) / np.sqrt(len(f))
        naive = (float(f.mean()) - half, float(f.mean()) + half)
        fq = dict(zip(qids, f.tolist(), strict=True))
        for _ in range(audits):
            sample = rng.choice(len(rows), size=audited, replace=False)
            yq = {qids[i]: float(y[i]) for i in sample}
            for name, lam in (("ppi", 1.0), ("ppi++", "tuned")):
                iv = ppi_of_queries(fq, yq, level=0.95, lam=lam)  # type: ignore[arg-type]
                hits[name] += iv.holds(target)
                widths[name].append(iv.high - iv.low)
            hits["machine t"] += naive[0] <= target <= naive[1]
            widths["machine t"].append(naive[1] - naive[0])
            checks += 1
    return {
        "strategy": result["strategy"],
        "labels": labels,
        "checks": checks,
        **{f"cov {k}": v / checks for k, v in hits.items()},
        **{f"width {k}": float(np.mean(v)) for k, v in widths.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--replays", type=int, default=60, help="Monte Carlo draws per query")
    parser.add_argument("--accuracy", type=float, default=0.8, help="the machine's accuracy")
    parser.add_argument("--audits", type=int, default=250, help="random audit samples")
    parser.add_argument("--audited", type=int, default=50, help="queries per audit sample")
    parser.add_argument("--strategies", default="tournament+assist")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    loss_rows, metric_rows = [], []
    start = time.perf_counter()
    for strategy in [s for s in args.strategies.split(",") if s]:
        result = study(strategy, args.queries, args.accuracy, args.replays, args.seed)
        loss_rows.append(loss_coverage(result, "est"))
        loss_rows.append(loss_coverage(result, "stated"))
        for labels in ("assisted", "machine_only"):
            metric_rows.append(metric_coverage(result, labels, args.audits, args.audited, 7))
    print(
        f"top-{K} of {N}, machine accuracy {args.accuracy}, {args.queries} queries per study, "
        f"{args.replays} replays per query, seed {args.seed}"
    )
    print("\nThe 90% loss interval against the realised κ-NDCG@10 loss (target ≥ 0.85):")
    print(
        "| strategy | error rates | machine answers | coverage | first 100 | queries with a "
        "loss | covered among them | mean estimate | mean realised | mean upper end |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in loss_rows:
        verdict = "met" if r["coverage"] >= LOSS_TARGET else "NOT met"
        print(
            f"| {r['strategy']} | {r['errors']} | {r['machine']:.1f} | {r['coverage']:.3f} "
            f"({verdict}) | {r['first100']:.3f} | {r['lost']} | {r['coverage_lost']:.3f} | "
            f"{r['mean_est']:.4f} | {r['mean_realised']:.4f} | {r['mean_high']:.4f} |"
        )
    print(
        f"\nThe 95% interval of a run's κ-NDCG@10 against its mean on the true labels "
        f"({args.audits} audits of {args.audited} queries × {len(RUN_NOISE)} runs; target "
        f"PPI ≥ {METRIC_TARGET}):"
    )
    print(
        "| strategy | labels | PPI coverage | PPI++ coverage | machine-only t coverage "
        "| PPI width | PPI++ width | t width |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in metric_rows:
        verdict = "met" if r["cov ppi"] >= METRIC_TARGET else "NOT met"
        print(
            f"| {r['strategy']} | {r['labels']} | {r['cov ppi']:.3f} ({verdict}) | "
            f"{r['cov ppi++']:.3f} | {r['cov machine t']:.3f} | {r['width ppi']:.4f} | "
            f"{r['width ppi++']:.4f} | {r['width machine t']:.4f} |"
        )
    print(f"\ntook {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
