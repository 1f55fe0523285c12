"""Study analysis of a collection: Table 1 (time), Tables 2–3 (agreement), χ² tests, and the
preference-specific checks (position bias, self-consistency, transitivity, top-k overlap).

The numbers come from the pure modules :mod:`labeling.analysis.agreement`,
:mod:`labeling.analysis.timing`,
:mod:`labeling.analysis.consistency` and :mod:`labeling.analysis.stats`;
:mod:`app.analysis.records` loads a
collection's tasks and judgment log from the database into :mod:`labeling.analysis.records`, and
this
module assembles one JSON-ready report (``GET /api/v1/collections/{id}/analysis``,
``heapjudge analyze``, the admin page). The top-k ground truth of a finished topk task is
rebuilt by replaying its live log (docs/architecture.md: the log is the only state).

Decisions: cancelled tasks are left out entirely; judgments of unfinished tasks count for time
per judgment, direct agreement and the consistency checks, while the per-query figures of
Table 1 and the inferred top-k relations use finished tasks only.

Second looks at a pair are all treated as re-asks, whatever asked for them: the configured
re-asks (option ``reask_fraction``) and the deliberate repeats of a strategy that combines
several answers per pair (``+robust``, :attr:`labeling.protocol.topk.TopKSession.repeats`). Direct
agreement uses an assessor's first answer to a pair, self-consistency counts the repeats as
re-asks, and time per judgment reports them apart (``docs/strategies-in-practice.md#analysis``).
"""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from typing import Any

from app.analysis import repository
from app.analysis.machine import machine_agreement
from app.analysis.records import Reask, load_records
from app.kernel.db import Database
from app.kernel.errors import NotFound
from labeling.analysis.agreement import (
    MODES,
    SYMBOLS,
    AgreementTable,
    MethodComparison,
    Mode,
    agreement_by_assessor_pair,
    agreement_by_query,
    agreement_table,
    compare_methods,
    study_instances,
    topk_overlap,
)
from labeling.analysis.consistency import position_bias, self_consistency, transitivity
from labeling.analysis.records import JudgmentRecord, TaskRecord, is_reask
from labeling.analysis.stats import ChiSquare
from labeling.analysis.timing import time_histograms, time_table

#: Histogram of time per judgment on the admin page: 1-second bins up to 60 s, then "≥ 60 s".
HISTOGRAM_BIN_SECONDS = 1.0
HISTOGRAM_UPPER_SECONDS = 60.0

METHOD_NAMES = {"topk": "Top-k labeling", "graded": "Five-grade judgment"}


def _chi2_dict(r: ChiSquare | None) -> dict[str, Any] | None:
    if r is None:
        return None
    return {
        "statistic": r.statistic,
        "df": r.df,
        "p_value": r.p_value,
        "yates": r.yates,
        "table": [list(row) for row in r.table],
        "expected": [list(row) for row in r.expected],
    }


def _comparison_dict(c: MethodComparison) -> dict[str, Any]:
    return {"overall": _chi2_dict(c.overall), "no_tie": _chi2_dict(c.no_tie)}


def _agreement_block(
    judgments: Sequence[JudgmentRecord],
    tasks: Sequence[TaskRecord],
    method: str,
    mode: Mode,
    reasks: AbstractSet[Reask],
) -> tuple[AgreementTable, dict[str, Any]]:
    instances = study_instances(judgments, tasks, method=method, mode=mode, reasks=reasks)
    pooled = agreement_table(instances)
    return pooled, {
        "method": method,
        "relations_from": (
            "grades"
            if method == "graded"
            else ("direct judgments" if mode == "direct" else "top-k ground truth")
        ),
        "pooled": pooled.to_dict(),
        "per_query": {q: t.to_dict() for q, t in agreement_by_query(instances).items()},
        "per_assessor_pair": [
            {"assessors": [u, v], **t.to_dict()}
            for (u, v), t in agreement_by_assessor_pair(instances).items()
        ],
    }


def analyze_records(
    judgments: Sequence[JudgmentRecord],
    tasks: Sequence[TaskRecord],
    *,
    mode: Mode = "direct",
    reasks: AbstractSet[Reask] = frozenset(),
) -> dict[str, Any]:
    """The full analysis of a study's records as a JSON-ready dict (no database access).

    ``reasks``: (task_id, seq) of the re-ask answers, configured or a strategy's deliberate
    repeats (from :func:`build_records`):
    they are reported apart in the self-consistency rows and in their own Table 1 keys, and
    left out of the direct relations (agreement, transitivity), because the protocol acted on
    the first answer to the pair, not on its re-ask.

    ``mode`` selects the top-k relations (docs/analysis.md#agreement): ``direct`` pairs both
    assessors compared, or ``inferred`` from each assessor's top-k ground truth. Five-grade
    relations always come from the grades. The χ² tests compare top-k (row 1) with five-grade
    (row 2).
    """
    if mode not in MODES:
        raise ValueError(f"unknown agreement mode {mode!r}; expected one of {list(MODES)}")
    topk_table, topk_block = _agreement_block(judgments, tasks, "topk", mode, reasks)
    graded_table, graded_block = _agreement_block(judgments, tasks, "graded", mode, reasks)
    pairs = [r for r in judgments if r.method == "topk"]
    status: dict[str, dict[str, int]] = {}
    for t in tasks:
        row = status.setdefault(t.method, {"tasks": 0, "finished": 0})
        row["tasks"] += 1
        row["finished"] += int(t.finished)
    return {
        "mode": mode,
        "methods": {m: METHOD_NAMES[m] for m in ("topk", "graded")},
        "relations": [">", "<", "~"],
        "relation_symbols": [SYMBOLS[">"], SYMBOLS["<"], SYMBOLS["~"]],
        "tasks": status,
        # The study's queries: those of its tasks, in task order (docs/analysis.md).
        "queries": list(dict.fromkeys(t.query_id for t in tasks)),
        "judgments": {
            "live": sum(1 for r in judgments if not r.undone),
            "undone": sum(1 for r in judgments if r.undone),
            "reasks": sum(1 for r in judgments if not r.undone and is_reask(r, reasks)),
        },
        "time": {
            m: row.to_dict() for m, row in time_table(judgments, tasks, reasks=reasks).items()
        },
        "agreement": {"topk": topk_block, "graded": graded_block},
        "chi2_note": chi2_note(status, topk_table, graded_table),
        "chi2": {
            "pearson": _comparison_dict(compare_methods(topk_table, graded_table)),
            "yates": _comparison_dict(compare_methods(topk_table, graded_table, yates=True)),
        },
        "position_bias": [b.to_dict() for b in position_bias(pairs).values()],
        "self_consistency": [c.to_dict() for c in self_consistency(pairs, reasks).values()],
        "transitivity": [t.to_dict() for t in transitivity(pairs, reasks).values()],
        "topk_overlap": topk_overlap(tasks),
        "time_histogram": {
            "bin_seconds": HISTOGRAM_BIN_SECONDS,
            "upper_seconds": HISTOGRAM_UPPER_SECONDS,
            "counts": time_histograms(
                judgments,
                bin_seconds=HISTOGRAM_BIN_SECONDS,
                upper_seconds=HISTOGRAM_UPPER_SECONDS,
                reasks=reasks,
            ),
        },
    }


def chi2_note(
    status: dict[str, dict[str, int]], topk: AgreementTable, graded: AgreementTable
) -> str | None:
    """Why the χ² tests comparing the methods' agreement cannot apply, in a sentence, or None
    when the overall test is defined (the test needs co-judged pairs of both methods and a
    non-empty row and column in its 2×3 table, docs/analysis.md)."""
    for method, table, name in (("graded", graded, "graded"), ("topk", topk, "top-k")):
        if method not in status:
            return f"the study has no {name} tasks"
        if table.instances == 0:
            return f"no pair is judged by two assessors with {name} tasks yet"
    if compare_methods(topk, graded).overall is None:
        return "the agreement counts leave a row or column of the test's table empty"
    return None


def collection_analysis(
    collection_id: int, *, db: Database, mode: Mode = "direct"
) -> dict[str, Any]:
    """Load a collection and analyse it (see :func:`analyze_records`); NotFound if unknown."""
    info, judgments, tasks, warnings, reasks = load_records(collection_id, db=db)
    report = analyze_records(judgments, tasks, mode=mode, reasks=reasks)
    # People against the machine, beside people against people (the agreement tables).
    machine = machine_agreement(collection_id, db=db)
    return {"collection": info, **report, "machine_agreement": machine, "warnings": warnings}


def find_collection_id(name_or_id: str, *, db: Database) -> int:
    """Resolve a collection given by name or numeric id (for the CLI); NotFound otherwise."""
    with db.read() as s:
        found = repository.collection_id_of(s, name_or_id)
    if found is None:
        raise NotFound(f"collection {name_or_id!r} not found")
    return found
