"""trec_eval's preference measures for one query (``m_prefs_*.c``), from
:class:`~ranking.trec_eval.prefs_counts.QueryPrefs`.

With, summed over judgment groups, ``F`` fulfilled and ``P`` possible preferences
(``_ret``: both documents retrieved; ``_imp``: at least one; plain: all, the ones with
neither document retrieved counting as failures):

- ``prefs_num_prefs_poss`` = P (all), ``prefs_num_prefs_ful`` = F (retrieved + implied),
  ``prefs_num_prefs_ful_ret`` = F (retrieved); summaries are sums.
- ``prefs_simp*`` = F / P; ``prefs_avgjg*`` = the mean over JGs of each JG's F / P;
  ``prefs_pair*`` = the mean over document pairs ``{i, j}`` with a preference either way of
  ``counts[i, j] / (counts[i, j] + counts[j, i])`` (``i`` ranked above ``j``).
- ``prefs_avgjg_Rnonrel*``: as prefs_avgjg with each JG's non-relevant documents
  (rel_level 0) cut or padded to its number of relevant ones R (trec_eval's definition; with
  one JG of two classes it is akin to bpref).
"""

from __future__ import annotations

import numpy as np

from ranking.trec_eval.prefs_counts import JG, QueryPrefs

__all__ = ["prefs_values"]


def _div(a: float, b: float) -> float:
    """C double division (0/0 is NaN, x/0 infinite)."""
    return (
        float(np.float64(a) / np.float64(b))
        if b
        else (float("nan") if a == 0 else float(np.inf) * np.sign(a))
    )


def _ratio_sum(qp: QueryPrefs, parts: str) -> tuple[int, int]:
    ful = poss = 0
    for jg in qp.jgs:
        ful += jg.ful_ret + (jg.ful_imp if parts != "ret" else 0)
        poss += (
            jg.poss_ret
            + (jg.poss_imp if parts != "ret" else 0)
            + (jg.notoccur if parts == "all" else 0)
        )
    return ful, poss


def _simp(qp: QueryPrefs, parts: str) -> float:
    ful, poss = _ratio_sum(qp, parts)
    return ful / poss if poss else 0.0


def _avgjg(qp: QueryPrefs, parts: str) -> float:
    total = 0.0
    for jg in qp.jgs:
        ful = jg.ful_ret + (jg.ful_imp if parts != "ret" else 0)
        poss = (
            jg.poss_ret
            + (jg.poss_imp if parts != "ret" else 0)
            + (jg.notoccur if parts == "all" else 0)
        )
        if poss:
            total += ful / poss
    return total / len(qp.jgs) if total > 0.0 else 0.0


def _pair(qp: QueryPrefs, parts: str) -> float:
    c, njr, nj = qp.counts, qp.num_judged_ret, qp.num_judged
    total, pairs = 0.0, 0
    blocks = [(0, njr, True), (njr, nj, False)] if parts != "ret" else [(0, njr, True)]
    for lo, hi, same in blocks:
        for i in range(njr):
            for j in range(i + 1 if same else lo, hi):
                if c[i, j] or c[j, i]:
                    pairs += 1
                    total += float(c[i, j]) / float(c[i, j] + c[j, i])
    if parts == "all":
        both = np.triu((c + c.T)[njr:, njr:] > 0, 1)
        pairs += int(both.sum())
    return total / pairs if pairs else 0.0


def _recalc_ec(jg: JG, njr: int, keep: int, ret_only: bool) -> tuple[int, int]:
    ful = poss = 0
    ecs = jg.ecs
    last = ecs[-1][:keep]

    def use(ranks: list[int]) -> list[int]:
        return [r for r in _prefix_ret(ranks, njr)] if ret_only else ranks

    for e1 in range(len(ecs)):
        for e2 in range(e1 + 1, len(ecs) - 1):
            for r1 in use(ecs[e1]):
                for r2 in use(ecs[e2]):
                    if r1 < r2 and (ret_only or r1 < njr):
                        ful += 1
                    else:
                        poss += 1
    for e1 in range(len(ecs)):
        for r1 in use(ecs[e1]):
            for r2 in use(last):
                if r1 < r2 and (ret_only or r1 < njr):
                    ful += 1
                else:
                    poss += 1
    return ful, poss + ful


def _prefix_ret(ranks: list[int], njr: int) -> list[int]:
    out = []
    for r in ranks:
        if r >= njr:
            break
        out.append(r)
    return out


def _recalc_pa(jg: JG, njr: int, ret_only: bool) -> tuple[int, int]:
    assert jg.matrix is not None and jg.rel_array is not None
    a, rel = jg.matrix, jg.rel_array
    nj = len(rel)
    seen, first = 0, (njr if ret_only else nj)
    for i in range(njr if ret_only else nj):
        if rel[i] == 0.0:
            seen += 1
            if seen == jg.num_rel + 1:
                first = i
                break
    keep = ~((np.arange(nj) >= first) & (rel == 0.0))
    sub = a & keep[:, None] & keep[None, :]
    ret_i = np.arange(nj)[:, None] < njr
    ret_j = np.arange(nj)[None, :] < njr
    upper = np.triu(np.ones((nj, nj), dtype=bool), 1)
    ful = int((sub & ret_i & ret_j & upper).sum())
    poss = int((sub & ret_i & ret_j & ~upper).sum())
    if not ret_only:
        ful += int((sub & ret_i & ~ret_j).sum())
        poss += int((sub & ~ret_i).sum())
    return ful, poss + ful


def _rnonrel(qp: QueryPrefs, ret_only: bool) -> float:
    total = 0.0
    for jg in qp.jgs:
        rel_n, nonrel_n = (
            (jg.num_rel_ret, jg.num_nonrel_ret) if ret_only else (jg.num_rel, jg.num_nonrel)
        )
        if rel_n >= nonrel_n:
            ful = jg.ful_ret + (0 if ret_only else jg.ful_imp)
            poss = jg.poss_ret + (0 if ret_only else jg.poss_imp + jg.notoccur)
            ful += jg.num_rel_ret * (rel_n - nonrel_n)
            poss += jg.num_rel * (rel_n - nonrel_n)
        elif jg.ecs:
            ful, poss = _recalc_ec(
                jg, qp.num_judged_ret, jg.num_rel_ret if ret_only else jg.num_rel, ret_only
            )
        else:
            ful, poss = _recalc_pa(jg, qp.num_judged_ret, ret_only)
        total += _div(ful, poss)
    return total / len(qp.jgs) if total > 0.0 else 0.0


def prefs_values(qp: QueryPrefs) -> dict[str, float]:
    """Every preference measure of one query, by name."""
    ful_all, poss_all = _ratio_sum(qp, "all")
    return {
        "prefs_num_prefs_poss": float(poss_all),
        "prefs_num_prefs_ful": float(ful_all),
        "prefs_num_prefs_ful_ret": float(sum(jg.ful_ret for jg in qp.jgs)),
        "prefs_simp": _simp(qp, "all"),
        "prefs_pair": _pair(qp, "all"),
        "prefs_avgjg": _avgjg(qp, "all"),
        "prefs_avgjg_Rnonrel": _rnonrel(qp, False),
        "prefs_simp_ret": _simp(qp, "ret"),
        "prefs_pair_ret": _pair(qp, "ret"),
        "prefs_avgjg_ret": _avgjg(qp, "ret"),
        "prefs_avgjg_Rnonrel_ret": _rnonrel(qp, True),
        "prefs_simp_imp": _simp(qp, "imp"),
        "prefs_pair_imp": _pair(qp, "imp"),
        "prefs_avgjg_imp": _avgjg(qp, "imp"),
    }
