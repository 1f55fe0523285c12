"""The guard of ``heapjudge evaluate`` against circular evaluation
(docs/metrics.md#labels-a-machine-helped-make).

    heapjudge evaluate --topk truth.jsonl --run run.txt --metrics kappa-ndcg@10 \\
        --judge-scores bm25.run [--judge-tau-threshold 0.9]
    heapjudge evaluate --qrels hybrid.qrels --human-qrels people.qrels --run run.txt

With a top-k truth whose lines carry machine answers, the report says so and gives the
metrics on the human-decided part beside the hybrid figures; ``--human-qrels`` gives the
figures against people's qrels beside those against the qrels given; ``--judge-scores`` (the
judge's scores as a TREC run, e.g. what ``heapjudge admin bm25`` writes) compares the run's
order with the judge's and warns when the mean Kendall τ passes the threshold. The logic is
:mod:`ranking.compare.circular`; this module runs it on the command's inputs and prints it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from app.cli.conventions import UsageProblem

__all__ = ["format_guard", "guard_warnings", "machine_guard", "topk_guard"]


def _figures(report: Any) -> dict[str, Any]:
    out: dict[str, Any] = report.to_dict()
    return {"metrics": out["metrics"], "counted": report.counted, "per_query": out["per_query"]}


def topk_guard(topk: Path) -> dict[str, Any]:
    """The provenance section of a top-k truth file alone (for several runs)."""
    from ranking.compare.circular import topk_provenance
    from ranking.io.topk import read_topk_jsonl

    return {"provenance": _provenance(topk_provenance(read_topk_jsonl(topk)))}


def _provenance(prov: Any) -> dict[str, Any]:
    return {
        "queries": prov.queries,
        "machine_answers": prov.machine_answers,
        "machine_queries": prov.machine_queries,
        "judges": list(prov.judges),
    }


def machine_guard(
    *,
    inputs: dict[str, Any],
    run: Path | None,
    rerun: Callable[..., Any],
    judge_scores: Path | None,
    human_qrels: Path | None,
    threshold: float,
) -> dict[str, Any] | None:
    """The guard's section of the report (None when there is nothing to say): provenance
    and the human-decided figures of a top-k truth, the human-only qrels figures, and the
    correlation of the run with the judge's scores. ``inputs`` are the command's truth and
    metric inputs; ``rerun(**changes)`` scores the run again with some of them changed
    (``human_decided=True``, ``qrels=...``). ``ranking.compare.circular`` (which loads
    scipy) is imported only when one of these applies: a plain ``evaluate`` starts faster."""

    if judge_scores is not None and run is None:
        raise UsageProblem("--judge-scores compares the judge with a TREC run (--run FILE)")
    if human_qrels is not None and inputs["qrels"] is None:
        raise UsageProblem("--human-qrels goes with --qrels (a top-k truth says its own)")
    if not -1.0 <= threshold <= 1.0:
        raise UsageProblem(f"--judge-tau-threshold must be in [-1, 1], got {threshold}")
    out: dict[str, Any] = {}
    truths = None
    if inputs["topk"] is not None:
        from ranking.compare.circular import topk_provenance
        from ranking.io.topk import read_topk_jsonl

        truths = read_topk_jsonl(inputs["topk"])
        prov = topk_provenance(truths)
        out["provenance"] = _provenance(prov)
        if prov.machine_helped:
            out["human_decided"] = _figures(rerun(human_decided=True))
    if human_qrels is not None:
        out["human_only"] = {"qrels": str(human_qrels), **_figures(rerun(qrels=human_qrels))}
    if judge_scores is not None:
        from ranking.compare.circular import judge_correlation
        from ranking.io.trec import read_run

        assert run is not None
        documents = {t.query_id: t.documents for t in truths} if truths is not None else None
        corr = judge_correlation(
            read_run(run),  # type: ignore[arg-type]  # without with_tag: the run alone
            read_run(judge_scores),  # type: ignore[arg-type]
            documents=documents,
            threshold=threshold,
        )
        out["judge_correlation"] = {
            "judge_scores": str(judge_scores),
            "mean_tau": None if corr.queries == 0 else corr.mean_tau,
            "queries": corr.queries,
            "threshold": threshold,
            "run_may_be_the_judge": corr.run_may_be_the_judge,
            "per_query": dict(corr.per_query),
        }
    return out or None


def guard_warnings(guard: dict[str, Any]) -> list[str]:
    """The guard's warnings, one line each (printed on stderr with ``--json``)."""
    lines = []
    prov = guard.get("provenance")
    if prov and prov["machine_answers"]:
        judges = ", ".join(prov["judges"]) or "a machine judge"
        lines.append(
            f"labels a machine helped make: {prov['machine_answers']} machine answers in "
            f"{prov['machine_queries']} of {prov['queries']} queries ({judges}); the figures "
            "are hybrid (people and machine), see the human-decided part"
        )
    corr = guard.get("judge_correlation")
    if corr and corr["run_may_be_the_judge"]:
        lines.append(
            f"the run's order correlates with the judge's scores: mean Kendall tau "
            f"{corr['mean_tau']:.3f} over {corr['queries']} queries, above "
            f"{corr['threshold']:g}; the run may be the judge"
        )
    return lines


def _figure_lines(part: dict[str, Any]) -> list[str]:
    width = max([len(m) for m in part["metrics"]] + [6])
    return [
        f"  {m.ljust(width)}  {'n/a' if v is None else f'{v:.4f}'}  "
        f"(over {part['counted'][m]} queries)"
        for m, v in part["metrics"].items()
    ]


def format_guard(guard: dict[str, Any]) -> str:
    """The guard's section as text (after the report)."""
    lines = [f"WARNING: {w}" for w in guard_warnings(guard)]
    if "human_decided" in guard:
        lines.append(
            "human-decided part (the truth restricted to the documents people decided, "
            "the others unjudged):"
        )
        lines += _figure_lines(guard["human_decided"])
    if "human_only" in guard:
        lines.append(f"against the human-only qrels {guard['human_only']['qrels']}:")
        lines += _figure_lines(guard["human_only"])
    corr = guard.get("judge_correlation")
    if corr:
        tau = "n/a" if corr["mean_tau"] is None else f"{corr['mean_tau']:.3f}"
        lines.append(
            f"judge's order ({corr['judge_scores']}): mean Kendall tau {tau} over "
            f"{corr['queries']} queries (threshold {corr['threshold']:g})"
        )
    return "\n".join(lines)
