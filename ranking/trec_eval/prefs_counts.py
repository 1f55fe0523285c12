"""Preference counts of one query (trec_eval 10.0's ``form_prefs_counts.c``).

The run is ranked by score descending, ties by document id **ascending** (this file's rule
differs from the qrels one), cut at ``-M``. Judged documents get a "docid rank": the
retrieved ones ``0 .. R-1`` in rank order, the others ``R ..`` in document-id order. Each
judgment group (JG) is an ordered list of equivalence classes (one sub-group: every document
of a higher rel_level beats every lower one) or a preference matrix closed under
transitivity (several sub-groups). For a preference ``A > B`` with docid ranks ``a, b``:
fulfilled when ``a < b``; "retrieved" when both are retrieved, "implied" when only one is,
"not occurring" when neither. ``counts[i, j]`` adds up, over JGs, the preferences of ``i``
over ``j``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from ranking.trec_eval.errors import TrecEvalError
from ranking.trec_eval.prefs_read import PrefRow

__all__ = ["JG", "QueryPrefs", "docid_ranks", "query_prefs"]


@dataclass
class JG:
    """One judgment group's counts; ``ecs`` (lists of docid ranks, rel_level descending) or
    ``matrix`` + ``rel_array`` for a partial order."""

    ful_ret: int = 0
    poss_ret: int = 0
    ful_imp: int = 0
    poss_imp: int = 0
    notoccur: int = 0
    num_rel: int = 0
    num_rel_ret: int = 0
    num_nonrel: int = 0
    num_nonrel_ret: int = 0
    ecs: list[list[int]] = field(default_factory=list)
    ec_levels: list[float] = field(default_factory=list)
    matrix: NDArray[np.bool_] | None = None
    rel_array: NDArray[np.float64] | None = None


@dataclass
class QueryPrefs:
    jgs: list[JG]
    counts: NDArray[np.int64]
    num_judged: int
    num_judged_ret: int


def docid_ranks(ranked_docs: list[bytes], judged: set[bytes]) -> tuple[dict[bytes, int], int]:
    """Docid rank of each judged document and the number retrieved."""
    ranks: dict[bytes, int] = {}
    for doc in ranked_docs:
        if doc in judged and doc not in ranks:
            ranks[doc] = len(ranks)
    retrieved = len(ranks)
    for doc in sorted(judged - ranks.keys()):
        ranks[doc] = len(ranks)
    return ranks, retrieved


def _ec_counts(jg: JG, njr: int, counts: NDArray[np.int64]) -> None:
    for e1, ranks1 in enumerate(jg.ecs):
        ret = sum(1 for r in ranks1 if r < njr)
        if jg.ec_levels[e1] > 0.0:
            jg.num_rel_ret += ret
            jg.num_rel += len(ranks1)
        else:
            jg.num_nonrel_ret += ret
            jg.num_nonrel += len(ranks1)
        for ranks2 in jg.ecs[e1 + 1 :]:
            for r1 in ranks1:
                for r2 in ranks2:
                    counts[r1, r2] += 1
                    if r1 == r2:
                        raise TrecEvalError(
                            f"trec_eval.form_prefs_counts: Internal docid {r1} occurs with "
                            "different rel_level in same jsg",
                            4,
                        )
                    if r1 < r2:
                        if r2 < njr:
                            jg.ful_ret += 1
                        elif r1 < njr:
                            jg.ful_imp += 1
                        else:
                            jg.notoccur += 1
                    elif r1 < njr:
                        jg.poss_ret += 1
                    elif r2 < njr:
                        jg.poss_imp += 1
                    else:
                        jg.notoccur += 1
    jg.poss_ret += jg.ful_ret
    jg.poss_imp += jg.ful_imp


def _closure(matrix: NDArray[np.bool_]) -> NDArray[np.bool_]:
    reach = matrix | np.eye(len(matrix), dtype=bool)
    while True:
        step = (reach.astype(np.int64) @ reach.astype(np.int64)) > 0
        if (step == reach).all():
            break
        reach = step
    np.fill_diagonal(reach, False)
    if (reach & reach.T).any():
        raise TrecEvalError("trec_eval.form_prefs_counts: Pref inconsistency found", 4)
    return reach


def _pa_counts(
    jg: JG,
    rows: list[tuple[bytes, float, int, bytes]],
    nj: int,
    njr: int,
    counts: NDArray[np.int64],
) -> None:
    matrix = np.zeros((nj, nj), dtype=bool)
    rel = np.full(nj, -1.0)
    for i, (jsg, level, rank, doc) in enumerate(rows):
        if (rel[rank] > 0.0 and level == 0.0) or (rel[rank] == 0.0 and level > 0.0):
            raise TrecEvalError(
                f"trec_eval.form_prefs_counts: doc '{doc.decode('utf-8', 'replace')}' "
                "has both 0 and non-0 rel_level assigned",
                4,
            )
        rel[rank] = level
        j = i + 1
        while j < len(rows) and rows[j][0] == jsg and rows[j][1] == level:
            j += 1
        while j < len(rows) and rows[j][0] == jsg:
            matrix[rank, rows[j][2]] = True
            j += 1
    matrix = _closure(matrix)
    jg.matrix, jg.rel_array = matrix, rel
    jg.num_rel_ret = int((rel[:njr] > 0).sum())
    jg.num_nonrel_ret = int((rel[:njr] == 0).sum())
    jg.num_rel = int((rel > 0).sum())
    jg.num_nonrel = int((rel == 0).sum())
    counts += matrix
    upper = np.triu(np.ones((nj, nj), dtype=bool), 1)
    ret_i = np.arange(nj)[:, None] < njr
    ret_j = np.arange(nj)[None, :] < njr
    jg.poss_ret = int((matrix & ret_i & ret_j & ~upper).sum())
    jg.ful_ret = int((matrix & ret_i & ret_j & upper).sum())
    jg.ful_imp = int((matrix & ret_i & ~ret_j).sum())
    jg.poss_imp = int((matrix & ~ret_i & ret_j).sum())
    jg.notoccur = int((matrix & ~ret_i & ~ret_j).sum())
    jg.poss_ret += jg.ful_ret
    jg.poss_imp += jg.ful_imp


def query_prefs(rows: list[PrefRow], ranked_docs: list[bytes]) -> QueryPrefs:
    """The JGs and counts of one query; ``ranked_docs`` in rank order (after ``-M``)."""
    ranks, njr = docid_ranks(ranked_docs, {row.doc for row in rows})
    nj = len(ranks)
    keyed = sorted(rows, key=lambda r: (r.jg, r.jsg, -r.rel_level, ranks[r.doc]))
    counts = np.zeros((nj, nj), dtype=np.int64)
    jgs: list[JG] = []
    start = 0
    while start < len(keyed):
        end = start
        while end < len(keyed) and keyed[end].jg == keyed[start].jg:
            end += 1
        group = keyed[start:end]
        jg = JG()
        if len({r.jsg for r in group}) > 1:
            _pa_counts(
                jg, [(r.jsg, r.rel_level, ranks[r.doc], r.doc) for r in group], nj, njr, counts
            )
        else:
            for r in group:
                if not jg.ec_levels or jg.ec_levels[-1] != r.rel_level:
                    jg.ec_levels.append(r.rel_level)
                    jg.ecs.append([])
                jg.ecs[-1].append(ranks[r.doc])
            _ec_counts(jg, njr, counts)
        jgs.append(jg)
        start = end
    return QueryPrefs(jgs, counts, nj, njr)
