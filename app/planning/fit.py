"""What plan settings fit a number of assessors: the rotation's shifts, the balanced scheme's
assessors per query, and what cannot work (the plan form shows it before any preview;
:mod:`app.planning.service` plans)."""

from __future__ import annotations

from typing import Any


def fitting_shifts(assessors: int) -> str:
    """Rotation shifts that fit ``assessors`` people: the paper's ``0,2`` (two assignments)
    needs four, since assignment j uses folds s_j and s_j + 1 of m and no assessor may meet a
    fold twice (:func:`labeling.study.assignment.fold_rotation`); with two or three, one assignment
    (``0``)."""
    return "0,2" if assessors >= 4 else "0"


def fitting_per_query(assessors: int) -> int:
    """Assessors per query and method for the balanced scheme: two (as the paper's study) when
    four or more are chosen, else one, so that T1 and T2 assessors of a query are different
    people (2 x per_query <= assessors)."""
    return max(1, min(2, assessors // 2))


def plan_fit(assessors: int, queries: int) -> dict[str, Any]:
    """The plan settings that fit ``assessors`` people on ``queries`` queries, before any
    preview: rotation ``shifts``, balanced ``per_query`` and a ``problem`` (or None). The one
    place of this rule: the plan form shows it for every number of ticked assessors."""
    problem = None
    if assessors < 2:
        problem = "Choose at least two assessors: every assessor uses both tools."
    elif queries and queries < assessors:
        problem = (
            f"The rotation needs at least as many queries as assessors ({queries} < "
            f"{assessors}); choose fewer assessors or the balanced scheme."
        )
    return {
        "assessors": assessors,
        "queries": queries,
        "shifts": fitting_shifts(assessors),
        "per_query": fitting_per_query(assessors),
        "problem": problem,
    }
