"""Comparing systems on per-query metric values (docs/campaigns.md).

* :mod:`ranking.compare.significance`  paired tests, bootstrap intervals, multiple-comparison
  corrections and :func:`~ranking.compare.significance.compare_systems` for every pair;
* :mod:`ranking.compare.correlation`  agreement of two system orderings: Kendall's τ-b, τ_AP
  and significant swaps;
* :mod:`ranking.compare.rbo`  rank-biased overlap and compatibility (RBO with the ideal
  ranking implied by grades or a top-k truth).

Pure numpy/scipy; imports nothing from the service.
"""
