"""The database side of a plan's constraint check: unknown queries, unknown or disabled users,
empty pools and tasks that already exist, as violation items beside the pure validator's
(:func:`labeling.study.assignment.validate_plan`). Each item is a dict with ``code``, ``severity``,
``message``, ``assessor``, ``query_id`` and ``method`` (docs/rest-api.md#errors)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from app.kernel.models import User
from app.planning.repository import ExistingTask
from labeling.study.assignment import PlanEntry, Violation


def violation_item(v: Violation) -> dict[str, Any]:
    """A violation of the pure validator as an item."""
    return {
        "code": v.code,
        "severity": v.severity,
        "message": v.message,
        "assessor": v.assessor,
        "query_id": v.query_id,
        "method": v.method,
    }


def error_item(code: str, message: str, **where: Any) -> dict[str, Any]:
    """An error item; ``where`` may name the ``assessor``, ``query_id`` and ``method``."""
    return {
        "code": code,
        "severity": "error",
        "message": message,
        "assessor": where.get("assessor"),
        "query_id": where.get("query_id"),
        "method": where.get("method"),
    }


def unknown_queries(query_ids: Sequence[str], known: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [
        error_item("unknown_query", f"no query {q!r} in this collection", query_id=q)
        for q in query_ids
        if q not in known
    ]


def user_errors(names: Sequence[str], users: Mapping[str, User]) -> list[dict[str, Any]]:
    """Each named assessor that does not exist or is disabled."""
    out = []
    for name in names:
        user = users.get(name)
        if user is None:
            out.append(error_item("unknown_user", f"no user named {name!r}", assessor=name))
        elif user.disabled:
            out.append(error_item("disabled_user", f"user {name!r} is disabled", assessor=name))
    return out


def empty_pools(pools: Mapping[str, list[str]]) -> list[dict[str, Any]]:
    return [
        error_item("empty_pool", f"query {q} has no documents to judge", query_id=q)
        for q, ids in pools.items()
        if not ids
    ]


def existing_task_errors(
    entries: Iterable[PlanEntry], have: Mapping[tuple[str, str], list[ExistingTask]]
) -> list[dict[str, Any]]:
    """Each planned task that exists already, or whose assessor judges its query with the
    other method (requirement b)."""
    out = []
    for e in entries:
        for method, tid in have.get((e.assessor, e.query_id), []):
            if method == e.method:
                out.append(
                    error_item(
                        "exists",
                        f"{e.assessor} already has a {method} task on query {e.query_id} "
                        f"(task {tid})",
                        assessor=e.assessor,
                        query_id=e.query_id,
                        method=method,
                    )
                )
            else:
                out.append(
                    error_item(
                        "both_methods",
                        f"{e.assessor} already judges query {e.query_id} with {method} "
                        f"(task {tid}); requirement b",
                        assessor=e.assessor,
                        query_id=e.query_id,
                    )
                )
    return out


#: Each constraint of a plan: its code, what it says, when it applies and the violation codes
#: that break it. ``applies`` is one of ``always``, ``both_methods`` (the plan has top-k and
#: graded tasks), ``assessors`` (two or more assessors), ``prior`` (the plan has a prior),
#: ``queries`` (the plan names its queries).
CONSTRAINTS: tuple[tuple[str, str, str, frozenset[str]], ...] = (
    ("coverage", "every query has its assessors for each method", "always",
     frozenset({"coverage", "excess"})),
    ("both_methods", "no assessor sees a query under both methods", "both_methods",
     frozenset({"both_methods"})),
    ("one_tool", "every assessor uses both tools", "both_methods", frozenset({"one_tool"})),
    ("balanced", "loads are balanced (within one task)", "assessors", frozenset({"unbalanced"})),
    ("once", "no task twice (in the plan or already created)", "always",
     frozenset({"duplicate", "exists"})),
    ("users", "every assessor exists and is enabled", "always",
     frozenset({"unknown_user", "disabled_user", "unknown_assessor"})),
    ("queries", "every query is in the collection", "queries",
     frozenset({"unknown_query"})),
    ("pools", "every query has documents to judge", "always", frozenset({"empty_pool"})),
    ("prior", "the prior ranks every query's pool", "prior", frozenset({"prior"})),
)  # fmt: skip


def constraints(
    violations: Sequence[Mapping[str, Any]],
    *,
    methods: set[str],
    assessors: int,
    prior: bool,
    named_queries: bool,
) -> list[dict[str, Any]]:
    """The constraints that apply to a plan (:data:`CONSTRAINTS`), each with ``holds``: no
    violation of its codes among ``violations``. ``methods`` are the methods of the plan's
    tasks; a constraint about both methods applies only to a plan with tasks of both. A
    constraint that does not apply but is broken anyway (an assessor who already judges a
    query with the other method) is listed too; ``severity`` is its worst violation's."""
    applies = {
        "always": True,
        "both_methods": {"topk", "graded"} <= methods,
        "assessors": assessors >= 2,
        "prior": prior,
        "queries": named_queries,
    }
    found: dict[str, str] = {}
    for v in violations:  # the worst severity per code: errors come first
        found.setdefault(str(v["code"]), str(v["severity"]))
    out = []
    for code, text, when, codes in CONSTRAINTS:
        broken = sorted({found[c] for c in codes if c in found})  # "error" < "warning"
        if applies[when] or broken:
            severity = broken[0] if broken else None
            out.append({"code": code, "text": text, "holds": not broken, "severity": severity})
    return out
