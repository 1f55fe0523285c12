"""Study assignment: the paper's fold rotation, the balanced planner, validation, CSV."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labeling.sources.base import SourceError
from labeling.study.assignment import (
    Plan,
    PlanEntry,
    PlanError,
    fold_rotation,
    folds,
    plan_balanced,
    validate_plan,
)
from labeling.study.plan_csv import plan_from_csv, plan_to_csv

HARD = {"duplicate", "both_methods", "coverage", "excess", "unknown_assessor", "unknown_query"}


def names(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(1, n + 1)]


def test_paper_rotation_5_assessors_50_queries() -> None:
    users = names("U", 5)
    queries = [str(i) for i in range(1, 51)]
    plan = fold_rotation(users, queries)
    q = folds(queries, 5)
    assert [len(f) for f in q] == [10] * 5
    assert q[0] == tuple(str(i) for i in range(1, 11))

    def assigned(user: str, method: str, label: str) -> set[str]:
        return {
            e.query_id
            for e in plan.entries
            if e.assessor == user and e.method == method and e.label == label
        }

    for i, user in enumerate(users):  # i = 0..4 is U_{i+1}
        # Assignment 1 (the paper): T1 on Q_i, T2 on Q_{(i mod 5)+1}.
        assert assigned(user, "topk", "A1") == set(q[i])
        assert assigned(user, "graded", "A1") == set(q[(i + 1) % 5])
        # Assignment 2 (shift-by-2, docs/analysis.md#design): T1 on Q_{i+2}, T2 on Q_{i+3}.
        assert assigned(user, "topk", "A2") == set(q[(i + 2) % 5])
        assert assigned(user, "graded", "A2") == set(q[(i + 3) % 5])
    # U5 judges Q5 with T1 and Q1 with T2 (the wrap-around the paper spells out).
    assert assigned("U5", "graded", "A1") == set(q[0])
    by_query = plan.by_query()
    for fold_index, fold in enumerate(q):
        for query in fold:
            # Fold i: T1 from U_i and U_{i-2}; T2 from U_{i-1} and U_{i-3}.
            assert set(by_query[query]["topk"]) == {users[fold_index], users[fold_index - 2]}
            assert set(by_query[query]["graded"]) == {
                users[fold_index - 1],
                users[fold_index - 3],
            }
    assert len(plan.entries) == 200
    assert validate_plan(plan, per_query={"topk": 2, "graded": 2}) == []
    assert all(row == {"topk": 20, "graded": 20, "total": 40} for row in plan.load().values())


def test_rotation_single_assignment_and_shift_three() -> None:
    users, queries = names("U", 5), names("q", 50)
    one = fold_rotation(users, queries, shifts=(0,))
    assert len(one.entries) == 100
    assert validate_plan(one, per_query={"topk": 1, "graded": 1}) == []
    three = fold_rotation(users, queries, shifts=(0, 3))
    assert validate_plan(three, per_query={"topk": 2, "graded": 2}) == []


@pytest.mark.parametrize(
    ("m", "n", "shifts", "needle"),
    [
        (5, 50, (0, 1), "same fold twice"),
        (5, 50, (0, 4), "same fold twice"),
        (3, 30, (0, 2), "same fold twice"),
        (1, 10, (0,), "two assessors"),
        (5, 4, (0, 2), "at least as many queries"),
    ],
)
def test_rotation_refuses_invalid_setups(
    m: int, n: int, shifts: tuple[int, ...], needle: str
) -> None:
    with pytest.raises(PlanError, match=needle):
        fold_rotation(names("U", m), names("q", n), shifts=shifts)


@settings(max_examples=60, deadline=None)
@given(m=st.integers(4, 9), n=st.integers(1, 60), second=st.booleans())
def test_rotation_property(m: int, n: int, second: bool) -> None:
    if n < m:
        with pytest.raises(PlanError):
            fold_rotation(names("U", m), names("q", n))
        return
    shifts = (0, 2) if second else (0,)
    plan = fold_rotation(names("U", m), names("q", n), shifts=shifts)
    r = len(shifts)
    violations = validate_plan(plan, per_query={"topk": r, "graded": r})
    assert [v for v in violations if v.severity == "error"] == []
    if n % m == 0:
        assert violations == []


@settings(max_examples=120, deadline=None)
@given(
    m=st.integers(1, 9),
    n=st.integers(1, 45),
    a=st.integers(0, 4),
    b=st.integers(0, 4),
    seed=st.integers(0, 2**31),
)
def test_balanced_planner_property(m: int, n: int, a: int, b: int, seed: int) -> None:
    if a + b == 0:
        return
    users, queries = names("U", m), names("q", n)
    if a + b > m:
        with pytest.raises(PlanError):
            plan_balanced(users, queries, per_query={"topk": a, "graded": b}, seed=seed)
        return
    plan = plan_balanced(users, queries, per_query={"topk": a, "graded": b}, seed=seed)
    violations = validate_plan(plan, per_query={"topk": a, "graded": b})
    codes = {v.code for v in violations}
    assert not codes & HARD, violations
    # Loads are balanced: total and each method within one task of each other.
    assert "unbalanced" not in codes, violations
    # (c) every assessor uses both tools whenever there are enough tasks of each kind.
    if a and b and n * a >= m and n * b >= m:
        assert "one_tool" not in codes
    # Independent re-check of (b) straight from the entries.
    pairs = {(e.assessor, e.query_id) for e in plan.entries}
    assert len(pairs) == len(plan.entries)
    # Same seed, same plan.
    assert plan_balanced(users, queries, per_query={"topk": a, "graded": b}, seed=seed) == plan


def test_balanced_planner_seed_changes_plan() -> None:
    users, queries = names("U", 6), names("q", 30)
    p1 = plan_balanced(users, queries, seed=1)
    p2 = plan_balanced(users, queries, seed=2)
    assert p1 != p2
    assert validate_plan(p1, per_query={"topk": 2, "graded": 2}) == []


def test_validate_reports_every_violation() -> None:
    entries = (
        PlanEntry("A", "q1", "topk"),
        PlanEntry("A", "q1", "topk"),  # duplicate
        PlanEntry("A", "q2", "topk"),
        PlanEntry("A", "q2", "graded"),  # both methods on q2
        PlanEntry("B", "q1", "graded"),
        PlanEntry("Z", "q1", "graded"),  # unknown assessor
        PlanEntry("B", "q9", "graded"),  # unknown query
    )
    plan = Plan(entries, ("A", "B", "C"), ("q1", "q2", "q3"))
    violations = validate_plan(plan)
    codes = [v.code for v in violations]
    assert {"duplicate", "both_methods", "unknown_assessor", "unknown_query"} <= set(codes)
    # q3 has nobody under either method; q2 is fine for both; C has no task at all.
    coverage = {(v.query_id, v.method) for v in violations if v.code == "coverage"}
    assert coverage == {("q3", "topk"), ("q3", "graded")}
    one_tool = {v.assessor for v in violations if v.code == "one_tool"}
    assert one_tool == {"B", "C"}
    # Errors come before warnings.
    severities = [v.severity for v in violations]
    assert severities == sorted(severities, key=lambda s: s != "error")
    assert any(v.code == "unbalanced" and v.severity == "warning" for v in violations)


def test_validate_exact_counts() -> None:
    plan = fold_rotation(names("U", 5), names("q", 10))
    codes = {v.code for v in validate_plan(plan, per_query={"topk": 3, "graded": 1})}
    assert codes == {"coverage", "excess"}


def test_csv_round_trip_with_neutralised_names() -> None:
    users = ["=cmd()", "+x", "alice", "@bob", "-dash"]
    plan = fold_rotation(users, names("q", 10))
    text = plan_to_csv(plan)
    assert "\n'=cmd()," in text and "\n'@bob," in text
    back = plan_from_csv(text, assessors=users, query_ids=names("q", 10))
    assert back == plan
    # Without the lists, they come from the file in order of first appearance.
    assert plan_from_csv(text.encode()).entries == plan.entries


def test_csv_accepts_tool_names_and_reports_lines() -> None:
    good = "query_id,assessor,method\nq1,A,T1\nq2,A,t2\n"
    plan = plan_from_csv(good)
    assert [e.method for e in plan.entries] == ["topk", "graded"]
    bad = "assessor,query_id,method\nA,q1,topk\nA,q2,ranking\n\nB,,graded\nC,q3,topk\n"
    with pytest.raises(SourceError) as info:
        plan_from_csv(bad, file="plan.csv", assessors=["A", "B"])
    issues = [(i.file, i.line) for i in info.value.issues]
    assert issues == [("plan.csv", 3), ("plan.csv", 5), ("plan.csv", 6)]
    with pytest.raises(SourceError, match=r"plan\.csv:1: header lacks column"):
        plan_from_csv("who,what\nA,q1\n", file="plan.csv")
