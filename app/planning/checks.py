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
