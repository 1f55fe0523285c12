"""Preference judgments: :func:`ranking.trec_eval.prefs_export.prefs_lines` (what an export
of pairwise answers writes) read back by ``trec-eval -R prefs``, against values counted here
by hand from the same pairs; and the binary, when ``HEAPJUDGE_TREC_EVAL_BIN`` is set."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from ranking.trec_eval.prefs_export import (
    Preference,
    PreferenceCycleError,
    prefs_lines,
    separate_contradictions,
)
from tests.ranking.trec_eval_support import ours, theirs

RUN = "q1 Q0 a 1 4 r\nq1 Q0 b 2 3 r\nq1 Q0 c 3 2 r\nq2 Q0 x 1 1 r\n"


def _values(out: str) -> dict[tuple[str, str], str]:
    return {(n.strip(), q): v for n, q, v in (line.split("\t") for line in out.splitlines())}


def _write(tmp: Path, prefs: list[Preference]) -> tuple[Path, Path]:
    p, r = tmp / "prefs", tmp / "run"
    p.write_text("\n".join(prefs_lines(prefs)) + "\n")
    r.write_text(RUN)
    return p, r


def test_round_trip_counts_what_the_pairs_say(tmp_path: Path) -> None:
    prefs = [
        Preference("q1", "a", "b", "alice"),  # fulfilled (a ranked 1, b 2)
        Preference("q1", "c", "a", "alice"),  # not fulfilled
        Preference("q1", "d", "c", "alice"),  # d not retrieved: implied failure
        Preference("q1", "b", "c", "bob"),  # fulfilled
        Preference("q2", "x", "y", "bob"),  # y not retrieved: implied success
    ]
    status, out, err = ours("-q", "-m", "all_prefs", "-R", "prefs", *_write(tmp_path, prefs))
    assert status == 0, err
    v = _values(out)
    # alice's group on q1 closed under transitivity: a>b, c>a, d>c, c>b, d>a, d>b (6);
    # ranking a, b, c (d not retrieved): only a>b is fulfilled; bob's b>c is
    assert v[("prefs_num_prefs_poss", "q1")] == "7"
    assert v[("prefs_num_prefs_ful", "q1")] == "2"
    assert v[("prefs_simp", "q1")] == f"{2 / 7:.4f}"
    assert v[("prefs_avgjg", "q1")] == f"{(1 / 6 + 1 / 1) / 2:.4f}"  # groups weigh equally
    assert v[("prefs_simp_ret", "q1")] == f"{2 / 4:.4f}"  # a>b, c>a, c>b, b>c retrieved
    assert v[("prefs_simp", "q2")] == "1.0000"
    assert v[("num_q", "all")] == "2"


def test_a_cycle_in_one_group_is_refused_before_writing() -> None:
    prefs = [
        Preference("q", "a", "b", "g"),
        Preference("q", "b", "c", "g"),
        Preference("q", "c", "a", "g"),
    ]
    with pytest.raises(PreferenceCycleError, match="a > b > c > a"):
        prefs_lines(prefs)
    # the same pairs from three assessors are three consistent groups
    assert (
        len(
            prefs_lines(
                [Preference(p.query, p.winner, p.loser, str(i)) for i, p in enumerate(prefs)]
            )
        )
        == 6
    )
    with pytest.raises(ValueError, match="whitespace"):
        prefs_lines([Preference("q", "a b", "c", "g")])


def test_random_preferences_match_the_binary(tmp_path: Path) -> None:
    rng = random.Random(7)
    docs = ["a", "b", "c", "d", "e", "x"]
    for trial in range(15):
        prefs = []
        for group in range(rng.randint(1, 3)):
            order = rng.sample(docs, k=rng.randint(2, 5))  # a consistent order: no cycles
            for _ in range(rng.randint(1, 5)):
                i, j = sorted(rng.sample(range(len(order)), 2))
                prefs.append(Preference(rng.choice(["q1", "q2"]), order[i], order[j], f"g{group}"))
        p, r = _write(tmp_path, prefs)
        for flags in (
            ["-q", "-m", "all_prefs", "-R", "prefs", "-c"],
            ["-q", "-M2", "-m", "all_prefs", "-R", "prefs", "-c"],
        ):
            assert ours(*flags, p, r)[:2] == theirs(*flags, p, r), (trial, flags)


def test_contradicting_answers_become_groups_of_their_own(tmp_path: Path) -> None:
    prefs = [
        Preference("q1", "a", "b", "t1"),
        Preference("q1", "b", "c", "t1"),
        Preference("q1", "b", "a", "t1"),  # a re-ask answered the other way
        Preference("q1", "c", "a", "t1"),  # closes the cycle a > b > c > a
        Preference("q1", "a", "c", "t1"),  # implied already: stays
        Preference("q1", "c", "b", "t2"),  # another group: free to disagree
    ]
    split = separate_contradictions(prefs)
    assert [p.group for p in split] == ["t1", "t1", "t1.c1", "t1.c2", "t1", "t2"]
    assert [(p.winner, p.loser) for p in split] == [(p.winner, p.loser) for p in prefs]
    assert separate_contradictions(split) == split  # consistent now
    status, out, err = ours("-q", "-m", "all_prefs", "-R", "prefs", *_write(tmp_path, split))
    assert status == 0, err
    v = _values(out)
    # t1: a>b, b>c, a>c (closure; the duplicate a>c not counted twice), all fulfilled by the
    # ranking a, b, c; t1.c1: b>a, t1.c2: c>a, t2: c>b, none fulfilled
    assert v[("prefs_num_prefs_poss", "q1")] == "6"
    assert v[("prefs_num_prefs_ful", "q1")] == "3"
    assert v[("prefs_avgjg", "q1")] == f"{(1 + 0 + 0 + 0) / 4:.4f}"
    # pairs {a,b}: 1 of 2 agree; {b,c}: 1 of 2; {a,c}: 1 of 2
    assert v[("prefs_pair", "q1")] == "0.5000"
    flags = ["-q", "-m", "all_prefs", "-R", "prefs"]
    p, r = tmp_path / "prefs", tmp_path / "run"
    assert ours(*flags, p, r)[:2] == theirs(*flags, p, r)
