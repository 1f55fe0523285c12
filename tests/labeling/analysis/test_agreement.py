"""Agreement tables (docs/analysis.md#agreement): co-judged instances, relations, C, M, κ."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import combinations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labeling.analysis.agreement import (
    RELATIONS,
    PairInstance,
    agreement_by_assessor_pair,
    agreement_by_query,
    agreement_table,
    co_judged,
    compare_methods,
    count_matrix,
    direct_relations,
    first_display_orientation,
    grade_relations,
    grades_by_assessor,
    pair_key,
    relation_from_grades,
    relation_from_outcome,
    relation_from_topk,
    study_instances,
    table_from_counts,
    topk_overlap,
    topk_relations,
)
from labeling.analysis.records import JudgmentRecord, TaskRecord
from labeling.analysis.stats import cohen_kappa

U_REL = [">", ">", ">", "<", "<", "~", "~", ">", "<", "~"]
V_REL = [">", ">", "<", "<", "~", "~", ">", ">", "<", "~"]
T0 = datetime(2026, 1, 1, tzinfo=UTC)

# --- hand-computed values -------------------------------------------------------------------------


def check_worked_table(table) -> None:  # type: ignore[no-untyped-def]
    assert table.counts == ((3, 1, 0), (0, 2, 1), (1, 0, 2))
    assert table.symmetric == ((6, 1, 1), (1, 4, 1), (1, 1, 4))
    expected = ((0.75, 0.125, 0.125), (1 / 6, 2 / 3, 1 / 6), (1 / 6, 1 / 6, 2 / 3))
    for got_row, want_row in zip(table.conditional, expected, strict=True):
        assert got_row == pytest.approx(want_row, abs=1e-12)
    assert table.instances == 10
    assert table.agreed == 7
    assert table.agreement == pytest.approx(0.70, abs=1e-12)
    assert table.instances_no_tie == 6
    assert table.agreed_no_tie == 5
    assert table.agreement_no_tie == pytest.approx(5 / 6, abs=1e-12)
    assert round(table.agreement_no_tie, 4) == 0.8333
    assert table.kappa == pytest.approx(cohen_kappa(table.counts), abs=1e-15)


def test_worked_example_from_relations() -> None:
    check_worked_table(table_from_counts(count_matrix(zip(U_REL, V_REL, strict=True))))  # type: ignore[arg-type]


def _shown(task: int, assessor: str, left: str, right: str, rel: str, i: int) -> JudgmentRecord:
    """The judgment of an assessor shown (left, right) who holds ``rel`` of left to right."""
    outcome = {">": "left", "<": "right", "~": "tie"}[rel]
    at = T0 + timedelta(hours=task, seconds=i)
    return JudgmentRecord(task, assessor, "q1", "topk", left, right, outcome, created_at=at, seq=i)  # type: ignore[arg-type]


def test_worked_example_from_judgment_records() -> None:
    # Ten pairs (a_i, b_i) shown to U as (a_i, b_i); V sees every other pair swapped. U judges
    # first, so the canonical orientation is (a_i, b_i) and the §7.F table must come out.
    flip = {">": "<", "<": ">", "~": "~"}
    records: list[JudgmentRecord] = []
    for i, (ru, rv) in enumerate(zip(U_REL, V_REL, strict=True)):
        a, b = f"z{i}", f"a{i}"  # left sorts after right: orientation is not the id order
        records.append(_shown(1, "U", a, b, ru, i))
        records.append(_shown(2, "V", b, a, flip[rv], i) if i % 2 else _shown(2, "V", a, b, rv, i))
    instances = study_instances(records, [], method="topk", mode="direct")
    assert len(instances) == 10
    assert all(inst.a.startswith("z") for inst in instances)
    check_worked_table(agreement_table(instances))


def test_worked_chi2_through_compare_methods() -> None:
    topk = table_from_counts([[500, 100, 55], [100, 245, 0], [0, 0, 0]])  # 745 agreed of 1000
    absolute = table_from_counts([[300, 200, 100], [53, 247, 100], [0, 0, 0]])  # 547 of 1000
    assert (topk.agreed, topk.instances, absolute.agreed, absolute.instances) == (
        745,
        1000,
        547,
        1000,
    )
    cmp = compare_methods(topk, absolute)
    assert cmp.overall is not None
    assert round(cmp.overall.statistic, 4) == 85.7165
    yates = compare_methods(topk, absolute, yates=True)
    assert yates.overall is not None and round(yates.overall.statistic, 4) == 84.8529
    # No-tie instances: top-k 945 (745 agreed) vs absolute 800 (547 agreed).
    assert cmp.no_tie is not None
    assert cmp.no_tie.table == ((745, 200), (547, 253))
    # The worked "ignoring ties" example, (897, 103) vs (831, 169) on the non-tie instances,
    # with ties on either side that must not enter the test.
    topk = table_from_counts([[600, 50, 40], [53, 297, 7], [9, 11, 30]])
    absolute = table_from_counts([[500, 100, 80], [69, 331, 25], [40, 35, 70]])
    assert (topk.agreed_no_tie, topk.disagreed_no_tie) == (897, 103)
    assert (absolute.agreed_no_tie, absolute.disagreed_no_tie) == (831, 169)
    no_tie = compare_methods(topk, absolute).no_tie
    assert no_tie is not None and no_tie.df == 1
    assert round(no_tie.statistic, 4) == 18.5355
    assert no_tie.p_value == pytest.approx(1.668e-5, rel=1e-3)
    no_tie_yates = compare_methods(topk, absolute, yates=True).no_tie
    assert no_tie_yates is not None and round(no_tie_yates.statistic, 4) == 17.9781


def test_compare_methods_degenerate_is_none() -> None:
    perfect = table_from_counts([[5, 0, 0], [0, 5, 0], [0, 0, 0]])
    cmp = compare_methods(perfect, perfect)
    assert cmp.overall is None and cmp.no_tie is None


# --- relations --------------------------------------------------------------------------------


def test_relation_from_outcome_orientation() -> None:
    assert relation_from_outcome("a", "b", "left") == (("a", "b"), ">")
    assert relation_from_outcome("b", "a", "left") == (("a", "b"), "<")
    assert relation_from_outcome("b", "a", "right") == (("a", "b"), ">")
    assert relation_from_outcome("b", "a", "tie") == (("a", "b"), "~")
    assert relation_from_outcome("b", "a", "not_relevant") is None
    with pytest.raises(ValueError):
        relation_from_outcome("a", "b", "maybe")
    with pytest.raises(ValueError):
        pair_key("a", "a")


def test_relation_from_topk_hand_built() -> None:
    top, rest = ["d3", "d1", "d4"], ["d2", "d5"]
    assert relation_from_topk(top, rest, "d3", "d1") == ">"  # both in T: by position
    assert relation_from_topk(top, rest, "d4", "d1") == "<"
    assert relation_from_topk(top, rest, "d4", "d2") == ">"  # T over F
    assert relation_from_topk(top, rest, "d5", "d1") == "<"
    assert relation_from_topk(top, rest, "d2", "d5") == "~"  # F × F: unknown, a tie
    assert relation_from_topk(top, rest, "d2", "x") is None  # not in the pool
    assert relation_from_topk(top, rest, "d3", "x") is None
    # n < k: everything is in T, a total order.
    assert relation_from_topk(["b", "a"], [], "a", "b") == "<"


def test_topk_relations_cover_every_pair() -> None:
    task = TaskRecord(1, "U", "q", "topk", k=2, top=("c", "a"), rest=("b", "d", "e"))
    rels = topk_relations([task])[("q", "U")]
    assert len(rels) == 10  # 5·4/2
    assert rels[("a", "c")] == "<"
    assert rels[("a", "b")] == ">"
    assert rels[("b", "c")] == "<"
    assert rels[("b", "d")] == rels[("d", "e")] == "~"
    assert sum(r == "~" for r in rels.values()) == 3  # C(3, 2) rest pairs
    # Unfinished and graded tasks give nothing.
    assert (
        topk_relations([TaskRecord(2, "V", "q", "topk"), TaskRecord(3, "W", "q", "graded")]) == {}
    )


def test_relations_from_grades() -> None:
    assert relation_from_grades({"A": 3, "B": 1}, "A", "B") == ">"  # higher grade preferred
    assert relation_from_grades({"A": 3, "B": 1}, "B", "A") == "<"
    assert relation_from_grades({"A": 2, "B": 2}, "A", "B") == "~"
    assert relation_from_grades({"A": 2}, "A", "B") is None
    records = [
        JudgmentRecord(1, "U", "q", "graded", doc_id="A", grade=1, seq=0),
        JudgmentRecord(1, "U", "q", "graded", doc_id="A", grade=3, seq=0, undone=True),
        JudgmentRecord(1, "U", "q", "graded", doc_id="B", grade=1, seq=1),
        JudgmentRecord(1, "U", "q", "graded", doc_id="C", grade=4, seq=2),
    ]
    grades = grades_by_assessor(records)
    assert grades == {("q", "U"): {"A": 1, "B": 1, "C": 4}}
    rels = grade_relations(grades)[("q", "U")]
    assert rels == {("A", "B"): "~", ("A", "C"): "<", ("B", "C"): "<"}


def test_direct_relations_rules() -> None:
    records = [
        JudgmentRecord(1, "U", "q", "topk", "a", "b", "left", seq=0),
        JudgmentRecord(1, "U", "q", "topk", "c", "a", "left", seq=1, undone=True),  # ignored
        JudgmentRecord(1, "U", "q", "topk", "c", "a", "right", seq=1),
        JudgmentRecord(1, "U", "q", "topk", "d", "a", "not_relevant", seq=2),  # no comparison
        JudgmentRecord(1, "U", "q", "topk", "b", "a", "left", seq=3),  # asked again: later wins
    ]
    assert direct_relations(records) == {("q", "U"): {("a", "b"): "<", ("a", "c"): ">"}}


def test_first_display_orientation() -> None:
    records = [
        JudgmentRecord(2, "V", "q", "topk", "b", "a", "left", seq=0, created_at=T0),
        JudgmentRecord(1, "U", "q", "topk", "a", "b", "left", seq=0, created_at=T0 + timedelta(1)),
    ]
    assert first_display_orientation(records) == {("q", ("a", "b")): ("b", "a")}


# --- co-judged instances ----------------------------------------------------------------------


def test_co_judged_counts_only_common_pairs_of_different_assessors() -> None:
    rels = {
        ("q1", "U"): {("a", "b"): ">", ("a", "c"): "<"},
        ("q1", "V"): {("a", "b"): ">", ("b", "c"): "~"},
        ("q1", "W"): {("a", "b"): "<", ("a", "c"): "<", ("b", "c"): "~"},
        ("q2", "U"): {("a", "b"): ">"},  # same pair ids on another query: not co-judged
    }
    instances = co_judged(rels)  # type: ignore[arg-type]
    assert [(i.assessor_u, i.assessor_v, i.a, i.b) for i in instances] == [
        ("U", "V", "a", "b"),
        ("U", "W", "a", "b"),
        ("U", "W", "a", "c"),
        ("V", "W", "a", "b"),
        ("V", "W", "b", "c"),
    ]
    pooled = agreement_table(instances)
    per_query = agreement_by_query(instances)
    per_pair = agreement_by_assessor_pair(instances)
    assert pooled.instances == 5 and pooled.agreed == 3
    assert set(per_query) == {"q1"}
    assert sum(t.instances for t in per_pair.values()) == 5


def test_inferred_mode_topk_and_grades_end_to_end() -> None:
    tasks = [
        TaskRecord(1, "U", "q", "topk", k=2, top=("a", "b"), rest=("c", "d"), finished=True),
        TaskRecord(2, "V", "q", "topk", k=2, top=("b", "a"), rest=("c", "d"), finished=True),
    ]
    inst = study_instances([], tasks, method="topk", mode="inferred")
    assert len(inst) == 6
    table = agreement_table(inst)
    # (a,b): > vs <; (a,c),(a,d),(b,c),(b,d): > vs >; (c,d): ~ vs ~.
    assert table.counts == ((4, 1, 0), (0, 0, 0), (0, 0, 1))
    assert table.agreement == pytest.approx(5 / 6)
    assert table.agreement_no_tie == pytest.approx(4 / 5)
    overlap = topk_overlap(tasks)
    assert overlap == [{"query_id": "q", "assessors": ["U", "V"], "common": 2, "jaccard": 1.0}]
    graded = [
        JudgmentRecord(3, "U", "q", "graded", doc_id=d, grade=g, seq=i)
        for i, (d, g) in enumerate([("a", 4), ("b", 2), ("c", 2)])
    ] + [
        JudgmentRecord(4, "V", "q", "graded", doc_id=d, grade=g, seq=i)
        for i, (d, g) in enumerate([("a", 3), ("b", 3), ("c", 0)])
    ]
    g_table = agreement_table(study_instances(graded, [], method="graded"))
    # (a,b): > vs ~; (a,c): > vs >; (b,c): ~ vs >.
    assert g_table.counts == ((1, 0, 1), (0, 0, 0), (1, 0, 0))
    with pytest.raises(ValueError):
        study_instances(graded, [], method="graded", mode="both")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        study_instances(graded, [], method="stars")


# --- properties -------------------------------------------------------------------------------

relation = st.sampled_from(RELATIONS)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(relation, relation), max_size=60))
def test_table_invariants(pairs: list[tuple[str, str]]) -> None:
    table = table_from_counts(count_matrix(pairs))  # type: ignore[arg-type]
    swapped = table_from_counts(count_matrix((v, u) for u, v in pairs))  # type: ignore[misc]
    # Symmetrisation makes the tables independent of which assessor is called U.
    assert table.symmetric == swapped.symmetric
    assert table.agreement == swapped.agreement
    assert table.kappa == (
        None if swapped.kappa is None else pytest.approx(swapped.kappa, abs=1e-12)
    )
    assert sum(map(sum, table.symmetric)) == 2 * len(pairs)
    for row, cond in zip(table.symmetric, table.conditional, strict=True):
        if sum(row):
            assert sum(cond) == pytest.approx(1.0)  # type: ignore[arg-type]
        else:
            assert cond == (None, None, None)
    assert table.agreed == sum(u == v for u, v in pairs)
    assert table.instances_no_tie == sum(u != "~" and v != "~" for u, v in pairs)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("qr"), relation, relation), min_size=1, max_size=40))
def test_pooled_equals_sum_of_queries(rows: list[tuple[str, str, str]]) -> None:
    instances = [
        PairInstance(q, f"a{i}", f"b{i}", "U", "V", u, v)  # type: ignore[arg-type]
        for i, (q, u, v) in enumerate(rows)
    ]
    pooled = agreement_table(instances)
    per = agreement_by_query(instances)
    summed = [[sum(t.counts[i][j] for t in per.values()) for j in range(3)] for i in range(3)]
    assert [list(r) for r in pooled.counts] == summed


def test_inferred_instance_count_for_full_pools() -> None:
    # Two assessors grading the same n documents co-judge n(n-1)/2 pairs (1,225 for n = 50).
    docs = [f"d{i:02d}" for i in range(50)]
    graded = [
        JudgmentRecord(t, a, "q", "graded", doc_id=d, grade=(i * (t + 1)) % 5, seq=i)
        for t, a in enumerate("UV")
        for i, d in enumerate(docs)
    ]
    assert len(study_instances(graded, [], method="graded")) == 1225
    assert len(list(combinations(docs, 2))) == 1225


def test_table_from_counts_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        table_from_counts([[1, 2], [3, 4]])
    with pytest.raises(ValueError):
        table_from_counts([[1, 2, 3], [4, -5, 6], [7, 8, 9]])


def test_to_dict_is_json_ready() -> None:
    import json

    d = table_from_counts([[1, 0, 0], [0, 0, 0], [0, 0, 0]]).to_dict()
    text = json.dumps(d)
    assert '"relations": [">", "<", "~"]' in text
    assert d["conditional"][1] == [None, None, None]
    assert d["kappa"] is None  # one category only: κ undefined
