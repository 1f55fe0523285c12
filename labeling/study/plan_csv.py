"""Study plans as CSV: :func:`plan_to_csv` writes one, :func:`plan_from_csv` reads one
(docs/analysis.md#design). Cells are neutralised against formula injection
(:mod:`labeling.csv_safety`); constraint checks are :func:`labeling.study.assignment.validate_plan`.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence

from labeling.csv_safety import neutralise_row, unneutralise_cell
from labeling.protocol.types import Method
from labeling.sources.base import IssueCollector, as_lines, numbered_lines
from labeling.study.assignment import Plan, PlanEntry

#: Spellings accepted for the method column of a plan CSV (the paper calls the tools T1/T2).
METHOD_ALIASES: dict[str, Method] = {
    "topk": "topk",
    "top-k": "topk",
    "t1": "topk",
    "graded": "graded",
    "grade": "graded",
    "five-grade": "graded",
    "t2": "graded",
}

CSV_COLUMNS: tuple[str, ...] = ("assessor", "query_id", "method", "label")


def plan_to_csv(plan: Plan) -> str:
    """The plan as CSV text with header ``assessor,query_id,method,label`` (cells neutralised)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for e in plan.entries:
        writer.writerow(neutralise_row((e.assessor, e.query_id, e.method, e.label)))
    return buf.getvalue()


def plan_from_csv(
    data: str | bytes | Iterable[str | bytes],
    *,
    file: str = "plan.csv",
    assessors: Sequence[str] | None = None,
    query_ids: Sequence[str] | None = None,
) -> Plan:
    """Read a plan from CSV (header with ``assessor``, ``query_id``, ``method``; ``label``
    optional; other columns ignored). ``method`` accepts topk/graded or T1/T2.

    Format errors (missing columns, empty cells, unknown method, an assessor or query outside the
    given lists) raise :class:`~labeling.sources.base.SourceError` with line numbers. Constraint
    problems are *not* errors here: run :func:`validate_plan` on the result (the preview shows
    them). Without ``assessors``/``query_ids`` the plan's lists are taken from the file in order
    of first appearance.
    """
    lines = as_lines(data)
    issues = IssueCollector(file)
    # csv needs whole logical rows; numbered_lines gives us physical line numbers, and a quoted
    # cell with an embedded newline is not something a plan needs, so we parse line by line.
    header: list[str] | None = None
    entries: list[PlanEntry] = []
    allowed_a = set(assessors) if assessors is not None else None
    allowed_q = set(query_ids) if query_ids is not None else None
    for number, text in numbered_lines(lines, file):
        if not text.strip():
            continue
        try:
            cells = next(csv.reader([text]))
        except csv.Error as exc:
            issues.add(number, f"bad CSV: {exc}")
            continue
        cells = [unneutralise_cell(c.strip()) for c in cells]
        if header is None:
            header = [c.lower() for c in cells]
            missing = [c for c in CSV_COLUMNS[:3] if c not in header]
            if missing:
                issues.add(number, f"header lacks column(s) {', '.join(missing)}")
                break
            continue
        row = dict(zip(header, cells, strict=False))
        if len(cells) < len(header):
            row.update(dict.fromkeys(header[len(cells) :], ""))
        a, q, raw_method = row["assessor"], row["query_id"], row["method"]
        lab = row.get("label", "")
        if not a or not q or not raw_method:
            issues.add(number, "assessor, query_id and method must not be empty")
            continue
        meth = METHOD_ALIASES.get(raw_method.lower())
        if meth is None:
            issues.add(number, f"unknown method {raw_method!r} (use topk or graded)")
            continue
        if allowed_a is not None and a not in allowed_a:
            issues.add(number, f"unknown assessor {a!r}")
            continue
        if allowed_q is not None and q not in allowed_q:
            issues.add(number, f"unknown query {q!r}")
            continue
        entries.append(PlanEntry(a, q, meth, lab))
    if header is None and not issues:
        issues.add(1, "empty file: expected a header assessor,query_id,method[,label]")
    issues.raise_if_any()
    a_list = (
        tuple(assessors)
        if assessors is not None
        else tuple(dict.fromkeys(e.assessor for e in entries))
    )
    q_list = (
        tuple(query_ids)
        if query_ids is not None
        else tuple(dict.fromkeys(e.query_id for e in entries))
    )
    return Plan(tuple(entries), a_list, q_list)
