"""Position bias, self-consistency and transitivity on hand-built judgment logs."""

from __future__ import annotations

from itertools import permutations, product

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from labeling.analysis.consistency import (
    intransitive_triples,
    position_bias,
    repeated_judgments,
    self_consistency,
    transitivity,
    triple_is_transitive,
)
from labeling.analysis.records import JudgmentRecord


def j(assessor: str, left: str, right: str, outcome: str, seq: int, **kw: object) -> JudgmentRecord:
    return JudgmentRecord(
        f"t-{assessor}", assessor, kw.pop("query", "q"), "topk", left, right, outcome, seq=seq, **kw
    )  # type: ignore[arg-type]


def test_position_bias_counts_and_binomial_test() -> None:
    records = [j("U", f"a{i}", f"b{i}", "left", i) for i in range(14)]
    records += [j("U", f"c{i}", f"d{i}", "right", 14 + i) for i in range(4)]
    records += [j("U", "x", "y", "tie", 30), j("U", "x", "z", "not_relevant", 31)]
    records += [j("U", "x", "w", "right", 32, undone=True)]  # undone: not counted
    records += [j("V", "a", "b", "left", 0), j("V", "b", "c", "right", 1)]
    bias = position_bias(records)
    u = bias["U"]
    assert (u.left, u.right, u.ties) == (14, 4, 1)
    assert u.share_left == pytest.approx(14 / 18)
    assert u.p_value == pytest.approx(sps.binomtest(14, 18).pvalue, rel=1e-9)
    assert bias["V"].share_left == 0.5 and bias["V"].p_value == pytest.approx(1.0)


def test_repeated_judgments_undo_and_swapped_reask() -> None:
    records = [
        j("U", "a", "b", "left", 0, undone=True),  # a ≻ b, undone ...
        j("U", "a", "b", "right", 0),  # ... and judged again the other way: inconsistent
        j("U", "c", "d", "left", 1),  # c ≻ d
        j("U", "d", "c", "right", 2),  # re-asked with sides swapped: still c ≻ d
        j("U", "e", "f", "tie", 3),
        j("U", "e", "f", "not_relevant", 4),  # not a comparison
        j("V", "a", "b", "left", 0),  # another assessor: not a repeat of U
    ]
    reps = repeated_judgments(records)
    assert [(r.pair, r.kind, r.swapped, r.consistent) for r in reps] == [
        (("a", "b"), "undo", False, False),
        (("c", "d"), "repeat", True, True),
    ]
    sc = self_consistency(records)["U"]
    assert (sc.repeats, sc.consistent, sc.rate) == (2, 1, 0.5)
    assert (sc.undo_repeats, sc.undo_consistent) == (1, 0)
    assert (sc.live_repeats, sc.live_consistent) == (1, 1)
    assert (sc.swapped_repeats, sc.swapped_consistent) == (1, 1)
    assert "V" not in self_consistency(records)


def _weak_preference_is_transitive(ab: str, bc: str, ac: str) -> bool:
    """Independent oracle: x ≽ y is transitive over every ordered triple."""
    rel = {("a", "b"): ab, ("b", "c"): bc, ("a", "c"): ac}
    flip = {">": "<", "<": ">", "~": "~"}

    def geq(x: str, y: str) -> bool:
        r = rel[(x, y)] if (x, y) in rel else flip[rel[(y, x)]]
        return r in (">", "~")

    return all(not (geq(x, y) and geq(y, z)) or geq(x, z) for x, y, z in permutations("abc", 3))


def test_triple_transitivity_against_oracle() -> None:
    combos = list(product(">~<", repeat=3))
    ours = [triple_is_transitive(*c) for c in combos]  # type: ignore[arg-type]
    assert ours == [_weak_preference_is_transitive(*c) for c in combos]
    assert sum(ours) == 13  # one relation triple per weak order of three items
    assert not triple_is_transitive(">", ">", "<")  # a ≻ b ≻ c ≻ a
    assert not triple_is_transitive("~", "~", ">")
    assert triple_is_transitive(">", "~", ">")


def test_intransitive_triples_counts() -> None:
    rels = {
        ("a", "b"): ">",
        ("b", "c"): ">",
        ("a", "c"): "<",  # cycle a ≻ b ≻ c ≻ a
        ("c", "d"): ">",
        ("b", "d"): ">",  # triple b, c, d: b ≻ c ≻ d, b ≻ d: fine
        ("a", "e"): ">",  # e only paired with a: no triple
    }
    assert intransitive_triples(rels) == (2, 1)  # type: ignore[arg-type]


def test_transitivity_per_assessor_from_records() -> None:
    records = [
        j("U", "a", "b", "left", 0),
        j("U", "c", "b", "right", 1),  # b ≻ c
        j("U", "c", "a", "left", 2),  # c ≻ a: cycle
        j("V", "a", "b", "left", 0),
        j("V", "b", "c", "left", 1),
        j("V", "a", "c", "left", 2),
        j("V", "a", "c", "right", 3, query="q2"),  # other query: no triple there
    ]
    t = transitivity(records)
    assert (t["U"].triples, t["U"].intransitive, t["U"].rate) == (1, 1, 1.0)
    assert (t["V"].triples, t["V"].intransitive, t["V"].rate) == (1, 0, 0.0)


@settings(max_examples=60, deadline=None)
@given(st.permutations(list("abcdefg")), st.data())
def test_consistent_assessor_has_no_intransitive_triples(
    order: list[str], data: st.DataObject
) -> None:
    rank = {d: i for i, d in enumerate(order)}
    pairs = data.draw(
        st.lists(st.tuples(st.sampled_from(order), st.sampled_from(order)), max_size=30)
    )
    records = [
        j("U", x, y, "left" if rank[x] < rank[y] else "right", i)
        for i, (x, y) in enumerate(pairs)
        if x != y
    ]
    assert all(t.intransitive == 0 for t in transitivity(records).values())
    assert all(s.rate in (None, 1.0) for s in self_consistency(records).values())
